/**
 * Hostile clients, the upload half (test/e2e/hostile-identities.test.ts is the other): against a
 * real `npm run dev`, on loopback, every loop bounded in count and time. Stalled and trickling
 * uploads must not delay anyone else's submissions; a body that stops arriving gets 408; a body
 * refused by its declared length or its token's quota is refused before it is read; lists are read
 * a group at a time, refused with 413 above MAX_LIST_GROUPS and never answered 5xx.
 */
import { connect, type Socket } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, makeGroup, REGISTRATION, startDevServer } from "./harness";

const ADMIN = "hostile-admin-secret";
/** Short, so that the 408 test waits little; the default is 30 s. */
const IDLE_MS = 2000;

let server: DevServer;
let port: number;
const tokens: Record<"alpha" | "beta" | "overQuota", string> = {
  alpha: "",
  beta: "",
  overQuota: "",
};

async function send(
  path: string,
  body: unknown,
  token = ADMIN,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    body:
      typeof body === "string"
        ? body
        : body instanceof Uint8Array
          ? new Uint8Array(body) // a copy on its own ArrayBuffer, which BodyInit wants
          : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  return { status: res.status, text: await res.text() };
}

async function createToken(body: Record<string, unknown>): Promise<string> {
  const res = await send("/v1/tokens", { name: "hostile", ...body });
  expect(res.status, res.text).toBe(200);
  return (JSON.parse(res.text) as { secret: string }).secret;
}

interface Upload {
  /** The first bytes the server answered (its status line), or "" when it closed silently. */
  answer: Promise<string>;
  close(): void;
}

/**
 * A raw upload that declares `declared` bytes and sends only `sent` of them, then (with
 * `trickleMs`) one more byte now and then. Closed by `close()` or after `maxMs`.
 */
function upload(
  path: string,
  token: string,
  declared: number,
  opts: { sent?: string; trickleMs?: number; maxMs?: number } = {},
): Upload {
  const socket: Socket = connect(port, "127.0.0.1");
  socket.on("error", () => {});
  let trickle: ReturnType<typeof setInterval> | undefined;
  const close = () => {
    clearInterval(trickle);
    socket.destroy();
  };
  const answer = new Promise<string>((resolve) => {
    const bound = setTimeout(() => {
      close();
      resolve("");
    }, opts.maxMs ?? 30_000);
    // The answer may come in several chunks (headers first): wait for its whole body (bytes).
    let received = Buffer.alloc(0);
    socket.on("data", (d: Buffer) => {
      received = Buffer.concat([received, d]);
      const end = received.indexOf("\r\n\r\n");
      const head = end >= 0 ? received.subarray(0, end).toString() : "";
      const length = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1];
      if (length !== undefined && received.length - end - 4 >= Number(length)) {
        clearTimeout(bound);
        resolve(received.toString());
      }
    });
    socket.once("close", () => {
      clearTimeout(bound);
      resolve(received.toString());
    });
  });
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n${opts.sent ?? "["}`,
  );
  if (opts.trickleMs) trickle = setInterval(() => socket.write(" "), opts.trickleMs);
  return { answer, close };
}

const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);

/** Latencies (ms) of `n` sequential submissions to run beta by its own contributor. */
async function submissionLatencies(n: number, seed: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const res = await fetch(`${server.url}/runs/beta/scored_data`, {
      method: "POST",
      headers: { authorization: `Bearer ${tokens.beta}`, "content-type": "application/json" },
      body: JSON.stringify(makeGroup(seed + i, 2, 0)),
      // Today's code makes these hang for as long as the stalls last: bound each one.
      signal: AbortSignal.timeout(5000),
    }).catch(() => null);
    latencies.push(res?.status === 200 ? performance.now() - started : Number.POSITIVE_INFINITY);
    await res?.text();
  }
  return latencies;
}

const p99 = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.ceil(values.length * 0.99) - 1]!;

beforeAll(async () => {
  server = await startDevServer({
    vars: { API_TOKEN: ADMIN, BODY_IDLE_TIMEOUT_MS: String(IDLE_MS) },
  });
  port = server.port;
  for (const run of ["alpha", "beta"]) {
    expect((await send(`/runs/${run}/register`, REGISTRATION)).status).toBe(200);
    const env = { max_token_length: 2048, desired_name: run, weight: 1, group_size: 2 };
    expect((await send(`/runs/${run}/register-env`, env)).status).toBe(200);
  }
  tokens.alpha = await createToken({ scopes: ["contributor"], run: "alpha" });
  tokens.beta = await createToken({ scopes: ["contributor"], run: "beta" });
  tokens.overQuota = await createToken({
    scopes: ["contributor"],
    run: "alpha",
    bytes_per_day: 1000,
  });
});

afterAll(async () => {
  await server?.stop();
});

describe("stalled and slow uploads", () => {
  it("do not delay another token's submissions to another run", async () => {
    const before = await submissionLatencies(50, 1000);
    const stalls = [
      // One byte every 500 ms: never idle long enough for the 408, so they stay open throughout.
      upload("/runs/alpha/scored_data", tokens.alpha, 1_000_000, { trickleMs: 500 }),
      upload("/runs/beta/scored_data", tokens.alpha, 1_000_000, { trickleMs: 500 }),
      upload("/runs/alpha/scored_data", tokens.overQuota, 1_000_000, { trickleMs: 500 }),
      upload("/runs/alpha/scored_data", ADMIN, 150_000_000, { trickleMs: 500 }),
    ];
    try {
      await new Promise((resolve) => setTimeout(resolve, 300)); // the four requests are in
      const during = await submissionLatencies(50, 2000);
      // The acceptance numbers of issue #24 (the 2× p99 ratio is reported, not asserted: on a
      // shared machine a timing ratio of ~10 ms latencies would be flaky).
      console.log(
        `hostile-uploads: p99 ${p99(before).toFixed(1)} ms without stalls, ${p99(during).toFixed(1)} ms with 4 stalled uploads open; max ${Math.max(...during).toFixed(1)} ms`,
      );
      expect(Math.max(...during)).toBeLessThan(1000);
    } finally {
      for (const s of stalls) s.close();
    }
  });

  it("answers a body that stops arriving with 408 after the idle limit", async () => {
    const started = performance.now();
    const stalled = upload("/runs/alpha/scored_data", tokens.alpha, 1_000_000, {
      sent: '{"tokens": [[1, 2',
      maxMs: IDLE_MS + 8000,
    });
    const answer = await stalled.answer;
    stalled.close();
    expect(statusOf(answer), answer).toBe(408);
    expect(performance.now() - started).toBeGreaterThanOrEqual(IDLE_MS - 100);
    expect(answer).toContain("body idle limit");
  });

  it("refuses a declared length over MAX_BODY_BYTES (413) or over the quota left (429) before reading", async () => {
    const tooLarge = upload("/runs/alpha/scored_data", ADMIN, 300 * 1024 * 1024, { maxMs: 5000 });
    const overQuota = upload("/runs/alpha/scored_data", tokens.overQuota, 1_000_000, {
      maxMs: 5000,
    });
    const [large, quota] = await Promise.all([tooLarge.answer, overQuota.answer]);
    tooLarge.close();
    overQuota.close();
    expect(statusOf(large), large).toBe(413);
    expect(large).toContain("MAX_BODY_BYTES");
    expect(statusOf(quota), quota).toBe(429);
    expect(quota).toContain("bytes-per-day quota (1000 bytes");
    // Nothing was charged for the refused body: a small submission still fits the quota.
    const small = await send("/runs/alpha/scored_data", makeGroup(1, 2, 0, 2), tokens.overQuota);
    expect(small.status, small.text).toBe(200);
  });
});

describe("large lists", () => {
  const gz = (value: unknown) => gzipSync(JSON.stringify(value));
  const list = (n: number, seed: number) =>
    Array.from({ length: n }, (_, i) => makeGroup(seed + i, 2, 0));

  it("refuses a list over MAX_LIST_GROUPS with 413 naming the limit, without reading it all", async () => {
    // ~430 KB of gzip: 6,200 small groups (Atropos took 45 s and 2.3 GB, then answered 500).
    const body = gz(list(6200, 10_000));
    expect(body.byteLength).toBeGreaterThan(400_000);
    const started = performance.now();
    const res = await send("/runs/beta/scored_data_list", body, tokens.beta, {
      "content-encoding": "gzip",
    });
    expect(res.status, res.text).toBe(413);
    expect(res.text).toContain("at most 1024 groups (MAX_LIST_GROUPS)");
    expect(performance.now() - started).toBeLessThan(10_000);
    // The same as plain JSON (~2 MB) is refused as group 1025 arrives.
    const plain = await send(
      "/runs/beta/scored_data_list",
      JSON.stringify(list(6200, 20_000)),
      tokens.beta,
    );
    expect(plain.status, plain.text).toBe(413);
  });

  it("stores a list at the limit, and answers malformed lists with 4xx, never 5xx", async () => {
    const full = await send("/runs/beta/scored_data_list", gz(list(1024, 50_000)), tokens.beta, {
      "content-encoding": "gzip",
    });
    expect(full.status, full.text).toBe(200);
    expect(JSON.parse(full.text)).toMatchObject({ groups_processed: 1024 });
    const one = JSON.stringify(makeGroup(1, 2, 0));
    const hostile: [string, string | Uint8Array, Record<string, string>][] = [
      ["truncated gzip", gz(list(50, 70_000)).subarray(0, 500), { "content-encoding": "gzip" }],
      ["not gzip", "[]", { "content-encoding": "gzip" }],
      ["unclosed list", `[${one},${one}`, {}],
      ["missing element", `[${one},,${one}]`, {}],
      ["text after the list", `[${one}] []`, {}],
      ["broken element", `[${one},{"tokens": [[1}]`, {}],
      ["an object", one, {}],
      ["numbers", "[1, 2, 3]", {}],
      ["nested lists", `[[${one}]]`, {}],
      ["unbalanced", `[${one}}]`, {}],
      ["not JSON", "hello", {}],
    ];
    for (const [name, body, headers] of hostile) {
      const res = await send("/runs/beta/scored_data_list", body, tokens.beta, headers);
      expect(res.status, `${name}: ${res.text}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `${name}: ${res.text}`).toBeLessThan(500);
    }
  });
});
