/**
 * Findings of the adversarial pass after the #24/#25 hardening, each as a test that fails on the
 * code it was found on (the lead keeps them and fixes the code). One `API_TOKEN=… npm run dev` on
 * loopback, a fake vLLM on loopback that reports `usage`; every loop is bounded in count.
 */
import { spawnSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, makeGroup, REGISTRATION, ROOT, startDevServer } from "./harness";

const ADMIN = "hostile-findings-admin-token";
const RUN = "findings";

let dev: DevServer;
let upstream: Server;
let upstreamUrl: string;
let contributor: string;

/** A vLLM chat answer of 10 tokens (prompt 3 + completion 2 ids, usage says 10). */
function fakeVllm(): Server {
  return createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          id: "chatcmpl-findings",
          object: "chat.completion",
          model: "m",
          prompt_token_ids: [1, 2, 3],
          usage: { prompt_tokens: 8, completion_tokens: 2, total_tokens: 10 },
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: "hi" },
              finish_reason: "stop",
              token_ids: [7, 8],
              logprobs: {
                content: [
                  { token: "token_id:7", logprob: -0.1 },
                  { token: "token_id:8", logprob: -0.2 },
                ],
              },
            },
          ],
        }),
      );
    });
  });
}

async function send(
  path: string,
  method: string,
  body?: unknown,
  token = ADMIN,
  headers: Record<string, string> = {},
) {
  const payload =
    typeof body === "string"
      ? body
      : body instanceof Uint8Array
        ? new Uint8Array(body)
        : JSON.stringify(body);
  const res = await fetch(`${dev.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: payload }),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) };
}

async function token(name: string, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await send("/v1/tokens", "POST", {
    name,
    scopes: ["contributor"],
    run: RUN,
    ...extra,
  });
  expect(created.status, created.text).toBe(200);
  return created.json().secret as string;
}

/** A valid one-sequence group as JSON text, with `extra` spliced in as raw JSON members. */
function groupText(extra: string): string {
  const base = JSON.stringify({ tokens: [[1, 2]], masks: [[-100, 2]], scores: [1] });
  return `${base.slice(0, -1)},${extra}}`;
}

beforeAll(async () => {
  upstream = fakeVllm();
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  dev = await startDevServer({ env: { ...process.env, API_TOKEN: ADMIN } });
  expect((await send(`/runs/${RUN}/register`, "POST", REGISTRATION)).status).toBe(200);
  const put = await send(`/v1/runs/${RUN}/inference`, "PUT", [
    { base_url: `${upstreamUrl}/v1`, server_type: "vllm", model_name: "m", health_check: false },
  ]);
  expect(put.status, put.text).toBe(200);
  contributor = await token("findings-contributor");
});

afterAll(async () => {
  await dev?.stop();
  await new Promise<void>((resolve) => (upstream ? upstream.close(() => resolve()) : resolve()));
});

describe("bad groups that are stored today", () => {
  it("refuses free-form fields nested deeper than any trainer can decode (Python json: ~1000)", async () => {
    // 30 KB of nesting: stored and delivered today; Python's json.loads of the batch raises
    // RecursionError, so one contributor's group wedges every Atropos trainer leasing it.
    const deep = `${'{"a":'.repeat(5000)}1${"}".repeat(5000)}`;
    const res = await send(
      `/runs/${RUN}/scored_data`,
      "POST",
      groupText(`"group_overrides":${deep}`),
      contributor,
    );
    expect(res.status, res.text.slice(0, 300)).toBe(422);
  });

  it("refuses a non-finite advantage instead of storing it as null", async () => {
    const res = await send(
      `/runs/${RUN}/scored_data`,
      "POST",
      groupText('"advantages":[[1e400,1]]'),
      contributor,
    );
    expect(res.status, res.text.slice(0, 300)).toBe(422);
  });

  it("refuses distill_token_ids whose shape differs from tokens", async () => {
    const res = await send(
      `/runs/${RUN}/scored_data`,
      "POST",
      groupText('"distill_token_ids":[[[1]]],"distill_logprobs":[[[0],[0]]]'),
      contributor,
    );
    expect(res.status, res.text.slice(0, 300)).toBe(422);
  });

  it("refuses mask entries outside the token-id range (2^63 is stored today)", async () => {
    const body = JSON.stringify({ tokens: [[1, 2]], masks: [[1, 2]], scores: [1] }).replace(
      '"masks":[[1,',
      '"masks":[[9223372036854775808,',
    );
    const res = await send(`/runs/${RUN}/scored_data`, "POST", body, contributor);
    expect(res.status, res.text.slice(0, 300)).toBe(422);
  });
});

describe("bodies of the routes that are not submissions", () => {
  it("refuses a gzip bomb to a small JSON route before inflating it whole", async () => {
    // 100 KB of gzip that inflates to 100 MiB of whitespace around `{}`: today every JSON route
    // (tasks, proxy open, metrics, register-env, tokens, …) inflates it whole and parses it, outside
    // the memory budget: four at once add ~500 MB to workerd and stall other runs' submissions.
    const size = 100 * 1024 * 1024;
    const text = Buffer.alloc(size + 2, 0x20);
    text[size] = 0x7b;
    text[size + 1] = 0x7d;
    const res = await send(
      `/v1/runs/${RUN}/tasks`,
      "POST",
      new Uint8Array(gzipSync(text)),
      contributor,
      {
        "content-encoding": "gzip",
      },
    );
    expect(res.status, res.text.slice(0, 300)).toBe(413);
  }, 60_000);
});

describe("the proxy token quota", () => {
  it("holds when a token sends its calls at once", async () => {
    const quota = await token("findings-parallel-quota", { proxy_tokens_per_day: 20 });
    const calls = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        send(
          `/v1/runs/${RUN}/proxy/parallel-${i}/v1/chat/completions`,
          "POST",
          { messages: [{ role: "user", content: "hi" }] },
          quota,
        ),
      ),
    );
    const answered = calls.filter((c) => c.status === 200).length;
    // Each answer uses 10 tokens: at most the quota plus the one call that crosses it.
    expect(answered * 10).toBeLessThanOrEqual(20 + 10);
  });
});

describe("error messages", () => {
  it("says what is wrong with a field that is present, not that it is missing", async () => {
    const res = await send(`/v1/runs/${RUN}/batches/some-batch/ack`, "POST", { lease_id: 5 });
    expect(res.status).toBe(422);
    expect(res.text).not.toContain("Field required");
  });
});

describe("a client that goes away mid-body", () => {
  it("is not logged as a 500 of the API", async () => {
    const socket = connect(dev.port, "127.0.0.1");
    socket.on("error", () => {});
    socket.write(
      `POST /runs/${RUN}/scored_data HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${contributor}\r\n` +
        `Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n${JSON.stringify(makeGroup(1, 2, null)).slice(0, 20)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    socket.destroy();
    // The request's log line follows the abort; a later request's line means it was written.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await send(`/runs/${RUN}/scored_data`, "POST", makeGroup(2, 2, null), contributor);
    expect(dev.logs()).not.toMatch(/"status":500/);
    expect(dev.logs()).not.toContain('"msg":"unhandled"');
  });
});

describe("identities and the retry window", () => {
  it("does not answer one contributor's group as a retry of another's", async () => {
    // Today the dedupe window is per run, not per token: the second contributor's 200 says
    // "duplicate", nothing is stored for it, and it has learned what another token sent.
    const other = await token("findings-second-contributor");
    const body = JSON.stringify(makeGroup(424242, 2, null));
    const first = await send(`/runs/${RUN}/scored_data`, "POST", body, contributor);
    expect(first.status, first.text).toBe(200);
    const second = await send(`/runs/${RUN}/scored_data`, "POST", body, other);
    expect(second.status, second.text).toBe(200);
    expect(second.json().duplicate, second.text).toBeUndefined();
    const own = await send(`/v1/runs/${RUN}/groups`, "GET", undefined, other);
    expect(own.json().groups).toHaveLength(1);
  });
});

describe("the Python sandbox", () => {
  it("cannot signal the process that runs it", () => {
    // The realm escape python-pool.test.ts documents (pop the import block, reach pyodide_js)
    // gives JavaScript in the child, where Node's permission model does not cover process.kill:
    // SIGKILL to process.ppid ends the host (an env worker host, `atropos-edge serve`, …).
    const program = [
      "import sys",
      "sys.meta_path.pop(0)",
      "import pyodide_js",
      `pyodide_js.FS.mkdir.constructor("process.kill(process.ppid, 'SIGKILL')")()`,
    ].join("\n");
    const host = [
      'import { PythonProcessPool } from "./src/sandbox/node/python-pool.ts";',
      "const pool = new PythonProcessPool({ size: 1, onWarning: () => undefined });",
      "const code = process.env.HOSTILE_PROGRAM;",
      'const r = await pool.run({ language: "python", code, timeout_ms: 20000, memory_mb: 64 });',
      'console.log("host survived", r.error?.kind ?? "no error");',
      "await pool.close();",
    ].join("\n");
    const run = spawnSync(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", host],
      {
        cwd: ROOT,
        encoding: "utf8",
        timeout: 90_000,
        env: { ...process.env, HOSTILE_PROGRAM: program },
      },
    );
    expect(run.signal, run.stderr.slice(-500)).toBeNull();
    expect(run.stdout, run.stderr.slice(-500)).toContain("host survived runtime");
  }, 120_000);
});
