/** Plain node:http plumbing shared by the simulator and the llama.cpp engine (src/engine). */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Body } from "./protocols";

const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** OpenAI's error shape (vLLM answers it too). */
export function errorBody(message: string, type: string, code: number): Body {
  return { error: { message, type, code } };
}

export function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function sendText(res: ServerResponse, text: string): void {
  res.writeHead(200, { "content-type": "text/plain", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Promises the full length, sends half, then drops the connection. */
export function sendTruncated(res: ServerResponse, body: unknown): void {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(200, { "content-type": "application/json", "content-length": bytes.length });
  res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => res.socket?.destroy());
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.destroy();
        reject(new Error("request body too large"));
      } else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

export interface HttpListener {
  url: string;
  port: number;
  /** Drops open connections (keep-alive included) and stops listening. */
  close(): Promise<void>;
}

/**
 * Serves `handle` on host:port (0 = any free port): a handler that throws answers 500 in OpenAI's
 * error shape, or drops the connection when its headers already went out.
 */
export async function listenHttp(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  options: { host?: string; port?: number } = {},
): Promise<HttpListener> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, errorBody(String(error), "server_error", 500));
      else res.destroy();
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const hostForUrl = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${hostForUrl}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
