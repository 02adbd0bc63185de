/**
 * What plain HTTP clients see from a real `npm run dev`: response gzip only when asked for and
 * only for bodies of 1000 bytes or more (as Atropos' GZipMiddleware), and keep-alive connections
 * that survive a request refused before its body was read (401, 413).
 */
import { execFile } from "node:child_process";
import { Agent as HttpAgent, type IncomingHttpHeaders, request } from "node:http";
import { promisify } from "node:util";
import { gunzipSync, gzipSync, inflateRawSync } from "node:zlib";
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

describe("batches of groups stored compressed", () => {
  const run = "wire-stored-gzip";
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  const post = (path: string, body: Buffer, headers: Record<string, string> = {}) =>
    send(
      server,
      {
        method: "POST",
        path,
        headers: { ...AUTH, "content-type": "application/json", ...headers },
      },
      body,
    );
  // Two sequences of 6,000 tokens with logprobs: ~0.4 MB of canonical JSON, so stored in R2 as a
  // compressed piece; sent gzipped (the server takes at most 100 KB on the wire).
  const group = (id: number, envId: number) => {
    const tokens = [0, 1].map((s) =>
      Array.from({ length: 6000 }, (_, i) => (id * 7 + s + i) % 50_000),
    );
    return {
      tokens,
      masks: tokens.map((seq) => seq.map((t, i) => (i < 100 ? -100 : t))),
      scores: [1, 0],
      inference_logprobs: tokens.map((seq) => seq.map((_, i) => -(i % 97) / 13)),
      env_id: envId,
    };
  };

  it("sends a gzip client one gzip member made of the stored pieces, others plain JSON", async () => {
    const registration = {
      wandb_group: "w",
      wandb_project: "w",
      batch_size: 4,
      max_token_len: 8000,
      checkpoint_dir: "c",
      save_checkpoint_interval: 0,
      starting_step: 0,
      num_steps: 10,
    };
    expect((await post(`/runs/${run}/register`, json(registration))).status).toBe(200);
    const env = await post(
      `/runs/${run}/register-env`,
      json({ max_token_length: 8000, desired_name: "wire", weight: 1, group_size: 2 }),
    );
    const envId = (JSON.parse(env.body.toString("utf8")) as { env_id: number }).env_id;
    // As JSON carries them (no -0).
    const sent = [1, 2, 3, 4].map(
      (id) => JSON.parse(JSON.stringify(group(id, envId))) as ReturnType<typeof group>,
    );
    for (const g of sent) {
      const res = await post(`/runs/${run}/scored_data`, gzipSync(json(g)), {
        "content-encoding": "gzip",
      });
      expect(res.status).toBe(200);
    }
    const lease = (acceptEncoding?: string) =>
      post(
        `/v1/runs/${run}/batches/lease`,
        json({}),
        acceptEncoding ? { "accept-encoding": acceptEncoding } : {},
      );

    const gzipped = await lease("gzip");
    expect(gzipped.status).toBe(200);
    expect(gzipped.headers["content-encoding"]).toBe("gzip");
    const text = gunzipSync(gzipped.body).toString("utf8");
    // A single member: its deflate stream runs up to the 8-byte trailer.
    expect(
      inflateRawSync(gzipped.body.subarray(10, gzipped.body.byteLength - 8)).toString("utf8"),
    ).toBe(text);
    const first = JSON.parse(text) as { batch: ReturnType<typeof group>[] };
    expect(first.batch.map((g) => g.tokens)).toEqual([sent[0]!.tokens, sent[1]!.tokens]);
    expect(first.batch[0]!.inference_logprobs).toEqual(sent[0]!.inference_logprobs);

    const plain = await lease();
    expect(plain.headers["content-encoding"]).toBeUndefined();
    const second = JSON.parse(plain.body.toString("utf8")) as { batch: ReturnType<typeof group>[] };
    expect(second.batch.map((g) => g.tokens)).toEqual([sent[2]!.tokens, sent[3]!.tokens]);
    expect(second.batch[1]!.masks).toEqual(sent[3]!.masks);
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
