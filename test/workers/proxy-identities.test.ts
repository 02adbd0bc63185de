/**
 * The inference proxy keeps secrets and identities apart: an upstream error reaches the client as
 * a status and a sanitized message (never the server's body, key or base_url), a session belongs
 * to the token that created it (admin excepted; others get 404), and proxy_tokens_per_day is
 * enforced. Also: another run's group has no trajectories to list (404, as for the group).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/api/app";
import type { Bindings } from "../../src/api/bindings";
import { createInferenceProxy } from "../../src/inference/proxy";
import { call, group, json, post, setupRun, uniqueRun } from "./helpers";

const ADMIN = "admin-secret-for-identity-tests";
const KEY = "sk-run-inference-key-never-shown";
const BASE_URL = "http://internal-vllm.corp.test:8000/v1";

/** A vLLM that answers chats with token ids, or (mode "echo") a 401 echoing what it was sent. */
function upstream(mode: { echo: boolean }) {
  return async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    if (mode.echo) {
      return Response.json(
        {
          error: {
            message: `bad key: ${request.headers.get("authorization")} for ${request.url}`,
          },
        },
        { status: 401 },
      );
    }
    return Response.json({
      id: "chatcmpl-id",
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
    });
  };
}

function app(mode: { echo: boolean }) {
  const proxied = createApp({ inferenceProxy: createInferenceProxy({ fetch: upstream(mode) }) });
  const bindings = { ...(env as unknown as Bindings), API_TOKEN: ADMIN };
  const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
  return (path: string, method = "GET", body?: unknown, token = ADMIN) =>
    proxied.fetch(
      new Request(`http://api.test${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
      bindings,
      ctx as unknown as ExecutionContext,
    );
}

type Send = ReturnType<typeof app>;

async function runWithServers(send: Send, prefix: string): Promise<string> {
  const run = uniqueRun(prefix);
  const put = await send(`/v1/runs/${run}/inference`, "PUT", [
    { base_url: BASE_URL, server_type: "vllm", model_name: "m", api_key: KEY, health_check: false },
  ]);
  expect(put.status, await put.clone().text()).toBe(200);
  return run;
}

async function contributor(send: Send, run: string, extra: Record<string, unknown> = {}) {
  const created = await json<{ secret: string }>(
    send("/v1/tokens", "POST", { name: "agent", scopes: ["contributor"], run, ...extra }),
  );
  return created.secret;
}

const HI = { messages: [{ role: "user", content: "hi" }] };

describe("upstream errors", () => {
  it("answer a status and a sanitized message: no key, no base_url, no upstream body", async () => {
    const send = app({ echo: true });
    const run = await runWithServers(send, "leak");
    const agent = await contributor(send, run);
    const logged: string[] = [];
    const log = console.log;
    console.log = (...args: unknown[]) => logged.push(args.map(String).join(" "));
    let res: Response;
    try {
      res = await send(`/v1/runs/${run}/proxy/s1/v1/chat/completions`, "POST", HI, agent);
    } finally {
      console.log = log;
    }
    const text = await res.text();
    expect(res.status).toBe(503);
    expect(text).toContain("an inference server answered HTTP 401");
    for (const secret of [KEY, "internal-vllm", "bad key"]) expect(text).not.toContain(secret);
    // The operator's log names the server but never the key.
    const line = logged.find((l) => l.includes("the run's servers failed"));
    expect(line).toContain("internal-vllm.corp.test");
    expect(logged.join("\n")).not.toContain(KEY);
  });
});

describe("session owners", () => {
  it("binds a session to the token that created it; another contributor gets 404, admin passes", async () => {
    const send = app({ echo: false });
    const run = await runWithServers(send, "owner");
    const [alice, mallory] = [await contributor(send, run), await contributor(send, run)];
    const base = `/v1/runs/${run}/proxy/alices-session`;
    expect((await send(`${base}/v1/chat/completions`, "POST", HI, alice)).status).toBe(200);

    const refused = [
      await send(`${base}/state`, "GET", undefined, mallory),
      await send(`${base}/v1/chat/completions`, "POST", HI, mallory),
      await send(`${base}/finish`, "POST", { scores: [1] }, mallory),
      await send(`/v1/runs/${run}/atropos-proxy/alices-session/nodes`, "GET", undefined, mallory),
      await send(`/v1/runs/${run}/atropos-proxy/alices-session`, "DELETE", undefined, mallory),
    ];
    for (const res of refused) {
      expect(res.status).toBe(404);
      expect(await res.text()).toContain("a session belongs to the token that created it");
    }
    // Nothing changed: one sequence, still open; the owner and admin still see it.
    const state = await json<{ status: string; nodes: unknown[] }>(
      send(`${base}/state`, "GET", undefined, alice),
    );
    expect(state).toMatchObject({ status: "open" });
    expect(state.nodes).toHaveLength(1);
    expect((await send(`${base}/state`)).status).toBe(200);

    // Atropos-wire sessions too.
    const created = await json<{ uuid: string }>(
      send(`/v1/runs/${run}/atropos-proxy/sessions/create`, "POST", {}, alice),
    );
    const nodes = `/v1/runs/${run}/atropos-proxy/${created.uuid}/nodes`;
    expect((await send(nodes, "GET", undefined, mallory)).status).toBe(404);
    expect((await send(nodes, "GET", undefined, alice)).status).toBe(200);
    expect((await send(`${base}/finish`, "POST", { scores: [1] }, alice)).status).toBe(200);
  });
});

describe("proxy_tokens_per_day", () => {
  it("refuses calls with 429 naming the quota once the day's tokens are used", async () => {
    const send = app({ echo: false });
    const run = await runWithServers(send, "quota");
    const agent = await contributor(send, run, { proxy_tokens_per_day: 1 });
    const chat = (session: string) =>
      send(`/v1/runs/${run}/proxy/${session}/v1/chat/completions`, "POST", HI, agent);
    expect((await chat("q1")).status).toBe(200);
    const second = await chat("q2");
    expect(second.status).toBe(429);
    expect(second.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await second.text()).toContain("proxy_tokens_per_day quota (1 inference-proxy tokens");
    // The refused call created no sequence.
    const state = await json<{ nodes: unknown[] }>(
      send(`/v1/runs/${run}/proxy/q2/state`, "GET", undefined, agent),
    );
    expect(state.nodes).toHaveLength(0);
    // A token without the quota is unaffected.
    const free = await contributor(send, run);
    const ok = await send(`/v1/runs/${run}/proxy/q3/v1/chat/completions`, "POST", HI, free);
    expect(ok.status).toBe(200);
  });
});

describe("proxy_tokens_per_day reservations", () => {
  it("hand back a failed call's reservation and settle an answered one to its usage", async () => {
    const failing = app({ echo: true });
    const send = app({ echo: false });
    const run = await runWithServers(send, "reserve");
    // Each answered call uses 5 tokens (3 prompt + 2 completion ids); its worst case is more.
    const agent = await contributor(send, run, { proxy_tokens_per_day: 10 });
    const chat = (to: typeof send, session: string) =>
      to(`/v1/runs/${run}/proxy/${session}/v1/chat/completions`, "POST", HI, agent);
    // The failed call reserved the whole quota; its reservation is handed back.
    expect((await chat(failing, "r1")).status).toBe(503);
    // Reserves all 10, settles to 5: the next call still fits, and then the day is used.
    expect((await chat(send, "r2")).status).toBe(200);
    expect((await chat(send, "r3")).status).toBe(200);
    const over = await chat(send, "r4");
    expect(over.status).toBe(429);
    expect(await over.text()).toContain("10 used or reserved");
  });
});

describe("group trajectories", () => {
  it("answers 404 for a group of another run, as GET of the group does", async () => {
    const run = uniqueRun("traj-own");
    const other = uniqueRun("traj-other");
    const { base, envIds } = await setupRun(run, 4, [4]);
    expect((await post(`${base}/scored_data`, group(3, 4, envIds[0]!))).status).toBe(200);
    const row = await env.DB.prepare("SELECT id FROM groups WHERE run = ?1")
      .bind(run)
      .first<{ id: number }>();
    const id = row!.id;
    await setupRun(other, 4, [4]);
    expect((await call(`/v1/runs/${run}/groups/${id}/trajectories`)).status).toBe(200);
    for (const path of [
      `/v1/runs/${other}/groups/${id}`,
      `/v1/runs/${other}/groups/${id}/trajectories`,
    ]) {
      const res = await call(path);
      expect(res.status).toBe(404);
      expect(await res.text()).toContain(`group ${id} does not exist in run '${other}'`);
    }
  });
});
