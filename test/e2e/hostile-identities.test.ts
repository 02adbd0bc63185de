/**
 * Hostile clients against `npm run dev` on loopback: secrets stay secret and identities stay
 * apart. The server gets API_TOKEN from its environment (`API_TOKEN=… npm run dev`); a fake
 * upstream (a node:http server on 127.0.0.1) plays a vLLM whose errors echo the Authorization
 * header. Contributors and trainers are separate tokens; every loop is bounded.
 */
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, freePort, makeGroup, REGISTRATION, ROOT, startDevServer } from "./harness";

const ADMIN = "hostile-e2e-admin-token";
const KEY = "sk-hostile-e2e-inference-key";

let dev: DevServer;
let upstream: Server;
let upstreamUrl: string;

/** /echo/…: 401 echoing the request's Authorization and URL; /ok/…: a vLLM chat answer. */
function fakeVllm(): Server {
  return createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.setHeader("content-type", "application/json");
      if (req.url?.startsWith("/echo/")) {
        res.statusCode = 401;
        res.end(
          JSON.stringify({
            error: { message: `rejected ${req.headers.authorization} at ${req.url}` },
          }),
        );
        return;
      }
      res.end(
        JSON.stringify({
          id: "chatcmpl-e2e",
          object: "chat.completion",
          model: "m",
          prompt_token_ids: [1, 2, 3],
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

async function send(path: string, method: string, body?: unknown, token = ADMIN) {
  const res = await fetch(`${dev.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) };
}

async function token(name: string, scopes: string[], run: string | null, extra = {}) {
  const created = await send("/v1/tokens", "POST", { name, scopes, run, ...extra });
  expect(created.status, created.text).toBe(200);
  return created.json().secret as string;
}

async function runWithServers(run: string, path: "echo" | "ok"): Promise<void> {
  const put = await send(`/v1/runs/${run}/inference`, "PUT", [
    {
      base_url: `${upstreamUrl}/${path}/v1`,
      server_type: "vllm",
      model_name: "m",
      api_key: KEY,
      health_check: false,
    },
  ]);
  expect(put.status, put.text).toBe(200);
}

const HI = { messages: [{ role: "user", content: "hi" }] };

beforeAll(async () => {
  upstream = fakeVllm();
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  // API_TOKEN from the environment, as `API_TOKEN=… npm run dev` gives it.
  dev = await startDevServer({ env: { ...process.env, API_TOKEN: ADMIN } });
});

afterAll(async () => {
  await dev?.stop();
  await new Promise<void>((resolve) => (upstream ? upstream.close(() => resolve()) : resolve()));
});

describe("API_TOKEN from the environment", () => {
  it("requires it, and the server does not warn about running open", async () => {
    const open = await fetch(`${dev.url}/v1/runs`, { signal: AbortSignal.timeout(10_000) });
    await open.arrayBuffer();
    expect(open.status).toBe(401);
    expect((await send("/v1/runs", "GET")).status).toBe(200);
    expect(dev.logs()).toContain("settings from the environment: API_TOKEN");
    expect(dev.logs()).not.toContain("WITHOUT AUTHENTICATION");
    expect(dev.logs()).not.toContain(ADMIN);
  });
});

describe("the inference proxy", () => {
  it("never hands the run's key or base_url to a contributor (3 of 3 tries)", async () => {
    const run = "hostile-leak";
    await runWithServers(run, "echo");
    const agent = await token("agent", ["contributor"], run);
    for (let attempt = 0; attempt < 3; attempt++) {
      const res = await send(
        `/v1/runs/${run}/proxy/leak-${attempt}/v1/chat/completions`,
        "POST",
        HI,
        agent,
      );
      expect(res.status).toBe(503);
      expect(res.text).toContain("an inference server answered HTTP 401");
      expect(res.text).not.toContain(KEY);
      expect(res.text).not.toContain(upstreamUrl);
      expect(res.text).not.toContain("/echo/");
    }
    // The Worker's log names the server, never the key.
    expect(dev.logs()).toContain("the run's servers failed");
    expect(dev.logs()).not.toContain(KEY);
  });

  it("keeps a session to the token that created it and enforces proxy_tokens_per_day", async () => {
    const run = "hostile-sessions";
    await runWithServers(run, "ok");
    const alice = await token("alice", ["contributor"], run, { proxy_tokens_per_day: 1 });
    const mallory = await token("mallory", ["contributor"], run);
    const base = `/v1/runs/${run}/proxy/alice-1`;
    expect((await send(`${base}/v1/chat/completions`, "POST", HI, alice)).status).toBe(200);
    for (const [path, method, body] of [
      [`${base}/state`, "GET", undefined],
      [`${base}/v1/chat/completions`, "POST", HI],
      [`${base}/finish`, "POST", { scores: [1] }],
    ] as const) {
      const res = await send(path, method, body, mallory);
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    // Alice's 1-token day is used up by her first call.
    const over = await send(`/v1/runs/${run}/proxy/alice-2/v1/chat/completions`, "POST", HI, alice);
    expect(over.status).toBe(429);
    expect(over.text).toContain("proxy_tokens_per_day");
    expect((await send(`${base}/finish`, "POST", { scores: [1] }, alice)).status).toBe(200);
  });
});

describe("another run's data", () => {
  it("answers 404 for another run's group trajectories", async () => {
    const run = "hostile-traj";
    const base = `/runs/${run}`;
    expect((await send(`${base}/register`, "POST", REGISTRATION)).status).toBe(200);
    const env = await send(`${base}/register-env`, "POST", {
      max_token_length: 2048,
      desired_name: "e",
      weight: 1,
      group_size: 4,
    });
    expect(
      (await send(`${base}/scored_data`, "POST", makeGroup(1, 4, env.json().env_id))).status,
    ).toBe(200);
    const groups = await send(`/v1/runs/${run}/groups`, "GET");
    const id = groups.json().groups[0].id as number;
    expect((await send(`/v1/runs/${run}/groups/${id}/trajectories`, "GET")).status).toBe(200);
    const other = await send(`/v1/runs/hostile-traj-other/groups/${id}/trajectories`, "GET");
    expect(other.status).toBe(404);
  });
});

describe("leases", () => {
  it("refuse a lapsed holder's ack and a lease-less ack of another trainer's live lease", async () => {
    const run = "hostile-leases";
    const base = `/runs/${run}`;
    expect(
      (await send(`${base}/register`, "POST", { ...REGISTRATION, batch_size: 4 })).status,
    ).toBe(200);
    const env = await send(`${base}/register-env`, "POST", {
      max_token_length: 2048,
      desired_name: "e",
      weight: 1,
      group_size: 4,
    });
    expect(
      (await send(`${base}/scored_data`, "POST", makeGroup(2, 4, env.json().env_id))).status,
    ).toBe(200);
    const [first, second] = [
      await token("trainer-1", ["trainer"], run),
      await token("trainer-2", ["trainer"], run),
    ];
    const lease = `/v1/runs/${run}/batches/lease`;
    const lapsed = (await send(lease, "POST", { lease_seconds: 1 }, first)).json();
    // The shortest lease is 1 s: poll (bounded) until the second trainer gets it redelivered.
    let current: { batch_id: string; lease_id: string; redelivered: boolean } | null = null;
    for (let i = 0; i < 40 && current === null; i++) {
      const res = await send(lease, "POST", { lease_seconds: 600 }, second);
      if (res.status === 200) current = res.json();
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(current).toMatchObject({ batch_id: lapsed.batch_id, redelivered: true });
    const ack = (lease_id: string | undefined, who: string) =>
      send(
        `/v1/runs/${run}/batches/${lapsed.batch_id}/ack`,
        "POST",
        lease_id ? { lease_id } : {},
        who,
      );
    const stolen = await ack(undefined, first);
    expect(stolen.status).toBe(409);
    expect(stolen.text).toContain("is leased to another trainer");
    expect((await ack(current!.lease_id, second)).json()).toMatchObject({ already_acked: false });
    const late = await ack(lapsed.lease_id, first);
    expect(late.status).toBe(409);
    expect(late.text).toContain("lapsed");
    expect((await ack(crypto.randomUUID(), first)).status).toBe(409);
    expect((await ack(current!.lease_id, second)).json()).toMatchObject({ already_acked: true });
  });
});

describe("the regression guard's webhook", () => {
  it("refuses loopback and private targets", async () => {
    const run = "hostile-guard";
    for (const url of [`${upstreamUrl}/hook`, "http://10.0.0.1/hook", "http://[::1]:9/"]) {
      const res = await send(`/v1/runs/${run}/guard`, "PUT", { webhook_url: url });
      expect(res.status, url).toBe(422);
    }
    expect((await send(`/v1/runs/${run}/guard`, "GET")).json()).toMatchObject({
      webhook_url: null,
    });
  });
});

describe("a dev server without API_TOKEN", () => {
  it("warns, before anything else, that it runs without authentication", async () => {
    const env = { ...process.env };
    delete env.API_TOKEN;
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [
        join(ROOT, "scripts", "dev.mjs"),
        "--port",
        String(port),
        "--persist-to",
        mkdtempSync(join(tmpdir(), "atropos-edge-open-")),
      ],
      { env, detached: true, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    try {
      // Printed before the migrations and the bundle; given up after 60 s.
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no warning in 60 s:\n${output}`)), 60_000);
        const seen = (chunk: Buffer) => {
          output += String(chunk);
          if (output.includes("WITHOUT AUTHENTICATION")) {
            clearTimeout(timer);
            resolve();
          }
        };
        child.stdout?.on("data", seen);
        child.stderr?.on("data", seen);
        child.once("exit", () => reject(new Error(`dev exited:\n${output}`)));
      });
      expect(output).toContain(
        "no API_TOKEN is set: this server answers every request WITHOUT AUTHENTICATION",
      );
      expect(output).toContain("API_TOKEN=<secret> npm run dev");
    } finally {
      if (child.pid !== undefined && child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        process.kill(-child.pid, "SIGTERM");
        await exited;
      }
    }
  });
});
