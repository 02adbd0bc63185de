/**
 * What plain HTTP clients see from a real `npm run dev`: response gzip only when asked for and
 * only for bodies of 1000 bytes or more (as Atropos' GZipMiddleware), and keep-alive connections
 * that survive a request refused before its body was read (401, 413).
 */
import { execFile } from "node:child_process";
import { Agent as HttpAgent, type IncomingHttpHeaders, request } from "node:http";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "./harness";

const TOKEN = "wire-test-token";
const AUTH = { authorization: `Bearer ${TOKEN}` };
const MAX_BODY_BYTES = 100_000;

interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  reusedSocket: boolean;
}

/** node:http sends no Accept-Encoding unless told to, and decodes nothing. */
function send(
  server: DevServer,
  options: { method?: string; path: string; headers?: Record<string, string>; agent?: HttpAgent },
  body?: Buffer,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: server.port,
        method: options.method ?? "GET",
        path: options.path,
        headers: options.headers,
        agent: options.agent ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            reusedSocket: req.reusedSocket,
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

let server: DevServer;
beforeAll(async () => {
  server = await startDevServer({
    vars: { API_TOKEN: TOKEN, MAX_BODY_BYTES: String(MAX_BODY_BYTES) },
  });
});
afterAll(async () => {
  await server?.stop();
});

describe("response gzip", () => {
  it("leaves a large body plain for a client that sent no Accept-Encoding", async () => {
    const res = await send(server, { path: "/openapi.json" });
    expect(res.status).toBe(200);
    expect(res.headers["content-encoding"]).toBeUndefined();
    expect(res.body.byteLength).toBeGreaterThanOrEqual(1000);
    expect(JSON.parse(res.body.toString("utf8")).openapi).toBeDefined();
  });

  it("leaves a large body plain for a client that accepts only other codings", async () => {
    const res = await send(server, { path: "/openapi.json", headers: { "accept-encoding": "br" } });
    expect(res.headers["content-encoding"]).toBeUndefined();
    expect(JSON.parse(res.body.toString("utf8")).openapi).toBeDefined();
  });

  it("gzips a body of 1000 bytes or more when the client accepts gzip", async () => {
    const res = await send(server, {
      path: "/openapi.json",
      headers: { "accept-encoding": "gzip" },
    });
    expect(res.status).toBe(200);
    expect(res.headers["content-encoding"]).toBe("gzip");
    expect(res.headers.vary).toMatch(/Accept-Encoding/);
    const plain = gunzipSync(res.body);
    expect(plain.byteLength).toBeGreaterThanOrEqual(1000);
    expect(JSON.parse(plain.toString("utf8")).openapi).toBeDefined();
  });

  it("leaves a body under 1000 bytes plain even when the client accepts gzip", async () => {
    for (const acceptEncoding of ["gzip", "gzip, deflate, br"]) {
      const res = await send(server, {
        path: "/info",
        headers: { ...AUTH, "accept-encoding": acceptEncoding },
      });
      expect(res.status).toBe(200);
      expect(res.headers["content-encoding"]).toBeUndefined();
      expect(res.body.byteLength).toBeLessThan(1000);
      expect(JSON.parse(res.body.toString("utf8"))).toHaveProperty("batch_size");
    }
  });
});

describe("keep-alive after a request refused before its body was read", () => {
  const body = Buffer.alloc(200_000, "a");

  async function refusedThenOk(
    headers: Record<string, string>,
    expectedStatus: number,
    chunked = false,
  ) {
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
    try {
      const refused = await send(
        server,
        {
          method: "POST",
          path: "/scored_data",
          headers: {
            "content-type": "application/json",
            ...(chunked ? {} : { "content-length": String(body.byteLength) }),
            ...headers,
          },
          agent,
        },
        body,
      );
      expect(refused.status).toBe(expectedStatus);
      const next = await send(server, { path: "/status", headers: AUTH, agent });
      expect(next.reusedSocket).toBe(true);
      expect(next.status).toBe(200);
      expect(JSON.parse(next.body.toString("utf8"))).toHaveProperty("queue_size");
    } finally {
      agent.destroy();
    }
  }

  it("401 without credentials, then an authenticated request on the same connection", async () => {
    await refusedThenOk({}, 401);
  });

  it("401 for a chunked body, then the next request on the same connection", async () => {
    await refusedThenOk({}, 401, true);
  });

  it("413 from Content-Length over MAX_BODY_BYTES, then the next request", async () => {
    await refusedThenOk(AUTH, 413);
  });

  it("Python's http.client gets the 401 and then a 200 on the same connection", async () => {
    const script = `
import http.client, json, sys
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
conn.request("POST", "/scored_data", body=b"a" * 200000, headers={"Content-Type": "application/json"})
first = conn.getresponse(); first.read()
conn.request("GET", "/status", headers={"Authorization": "Bearer " + sys.argv[2]})
second = conn.getresponse()
print(json.dumps([first.status, second.status, json.loads(second.read())]))
`;
    const { stdout } = await promisify(execFile)(
      "python3",
      ["-c", script, String(server.port), TOKEN],
      { timeout: 60_000 },
    );
    const [first, second, status] = JSON.parse(stdout) as [number, number, unknown];
    expect([first, second]).toEqual([401, 200]);
    expect(status).toHaveProperty("queue_size");
  });
});
