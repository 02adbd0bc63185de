/**
 * Node-only: a GET request that carries a JSON body (Atropos' /status-env), which fetch() refuses
 * to send. Import this only from Node code (CLI, tests), never from Worker code.
 */
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { GetWithBody } from "./api-client";

export const nodeGetWithBody: GetWithBody = (url, body, headers, signal) =>
  new Promise((resolve, reject) => {
    const target = new URL(url);
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    const auth =
      target.username || target.password
        ? {
            Authorization: `Basic ${btoa(`${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`)}`,
          }
        : {};
    const req = send(
      target,
      {
        method: "GET",
        headers: { ...auth, ...headers, "Content-Length": Buffer.byteLength(body) },
        signal,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
