/**
 * The task registry in workerd on local D1: contributors register task types, open proxy
 * sessions for them, and finishing such a session attributes its group to the finishing token
 * and the task; the listing tallies groups and mean scores per task and per contributor. The
 * inference server is a scripted vLLM chat (return_token_ids) behind the proxy's fetch.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/api/app";
import type { Bindings } from "../../src/api/bindings";
import type { TaskList } from "../../src/core/wire/task-registry";
import { createInferenceProxy } from "../../src/inference/proxy";
import { json, uniqueRun } from "./helpers";

const ADMIN = "admin-secret-for-task-tests";

/** One chat turn: prompt ids [1, 2, 3], sampled ids [7, 8] with fixed logprobs. */
async function scriptedVllm(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  await new Request(input, init).text();
  return Response.json({
    id: "chatcmpl-task",
    object: "chat.completion",
    model: "scripted",
    prompt_token_ids: [1, 2, 3],
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: "done" },
        finish_reason: "stop",
        token_ids: [7, 8],
        logprobs: {
          content: [
            { token: "token_id:7", logprob: -0.25 },
            { token: "token_id:8", logprob: -0.5 },
          ],
        },
      },
    ],
  });
}

function app() {
  const proxied = createApp({ inferenceProxy: createInferenceProxy({ fetch: scriptedVllm }) });
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

async function setup() {
  const run = uniqueRun("tasks");
  const send = app();
  const servers = [{ base_url: "http://vllm.test/v1", server_type: "vllm", health_check: false }];
  expect((await send(`/v1/runs/${run}/inference`, "PUT", servers)).status).toBe(200);
  const token = async (name: string, scopes: string[], bound: string | null) => {
    const made = await json<{ id: string; secret: string }>(
      send("/v1/tokens", "POST", { name, scopes, run: bound }),
    );
    return made;
  };
  return { run, send, token };
}

const TASK = {
  name: "security_analysis",
  difficulty: 3,
  required_tools: ["code_exec", "web_search", "file_read"],
  description: "Find the vulnerabilities in a snippet.",
};

describe("task registry", () => {
  it("records a task with its registrant; a repeat is unchanged, another token's is refused", async () => {
    const { run, send, token } = await setup();
    const alice = await token("alice", ["contributor"], run);
    const bob = await token("bob", ["contributor"], run);
    const first = await send(`/v1/runs/${run}/tasks`, "POST", TASK, alice.secret);
    expect(first.status, await first.clone().text()).toBe(200);
    expect(await first.json()).toMatchObject({
      status: "created",
      task: { ...TASK, registered_by: alice.id, registered_by_name: "alice", groups: 0 },
    });
    const again = await json<{ status: string }>(
      send(`/v1/runs/${run}/tasks`, "POST", TASK, alice.secret),
    );
    expect(again.status).toBe("unchanged");
    const changed = await json<{ status: string; task: { difficulty: number } }>(
      send(`/v1/runs/${run}/tasks`, "POST", { ...TASK, difficulty: 5 }, alice.secret),
    );
    expect(changed).toMatchObject({ status: "updated", task: { difficulty: 5 } });
    const taken = await send(`/v1/runs/${run}/tasks`, "POST", TASK, bob.secret);
    expect(taken.status).toBe(409);
    expect(await taken.text()).toContain("another token");

    const bad = await send(`/v1/runs/${run}/tasks`, "POST", { name: "no spaces" }, alice.secret);
    expect(bad.status).toBe(422);
    expect(await bad.text()).toContain("task name");
    const list = await json<TaskList>(send(`/v1/runs/${run}/tasks`));
    expect(list.tasks.map((t) => [t.name, t.difficulty])).toEqual([["security_analysis", 5]]);

    // Scopes: a read token lists but cannot register; a trainer cannot register.
    const reader = await token("reader", ["read"], null);
    const trainer = await token("trainer", ["trainer"], null);
    expect((await send(`/v1/runs/${run}/tasks`, "GET", undefined, reader.secret)).status).toBe(200);
    expect((await send(`/v1/runs/${run}/tasks`, "POST", TASK, reader.secret)).status).toBe(403);
    expect((await send(`/v1/runs/${run}/tasks`, "POST", TASK, trainer.secret)).status).toBe(403);
  });

  it("attributes a task session's group to the token and the task, and tallies it", async () => {
    const { run, send, token } = await setup();
    const alice = await token("alice", ["contributor"], run);
    const bob = await token("bob", ["contributor"], run);
    expect((await send(`/v1/runs/${run}/tasks`, "POST", TASK, alice.secret)).status).toBe(200);

    const unknown = await send(
      `/v1/runs/${run}/proxy/s-x/open`,
      "POST",
      { task: "nope" },
      alice.secret,
    );
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain("POST /v1/runs/");

    const contribute = async (who: { secret: string }, session: string, score: number) => {
      const opened = await send(
        `/v1/runs/${run}/proxy/${session}/open`,
        "POST",
        { task: TASK.name },
        who.secret,
      );
      expect(opened.status, await opened.clone().text()).toBe(200);
      const { base_url } = await json<{ base_url: string }>(opened);
      expect(base_url).toBe(`/v1/runs/${run}/proxy/${session}/v1`);
      const chat = await send(
        `${base_url}/chat/completions`,
        "POST",
        { messages: [{ role: "user", content: "analyze" }] },
        who.secret,
      );
      expect(chat.status).toBe(200);
      const finish = `/v1/runs/${run}/proxy/${session}/finish`;
      return json<{ group_id: number; status: string }>(
        send(finish, "POST", { scores: [score] }, who.secret),
      );
    };
    const a1 = await contribute(alice, "a-1", 1);
    const a2 = await contribute(alice, "a-2", 0);
    const b1 = await contribute(bob, "b-1", 0.5);
    // A retried finish answers the same group and counts it once.
    const retried = await json<{ group_id: number; status: string }>(
      send(`/v1/runs/${run}/proxy/a-1/finish`, "POST", { scores: [1] }, alice.secret),
    );
    expect(retried).toMatchObject({ group_id: a1.group_id, status: "duplicate" });
    // Opening again tells a client what its lost finish stored.
    const reopened = await json<{ status: string; group_id: number }>(
      send(`/v1/runs/${run}/proxy/a-1/open`, "POST", { task: TASK.name }, alice.secret),
    );
    expect(reopened).toMatchObject({ status: "finished", group_id: a1.group_id });
    // A session opened for nothing (or another task) cannot be turned into a task session.
    await send(
      `/v1/runs/${run}/proxy/plain/v1/chat/completions`,
      "POST",
      { messages: [{ role: "user", content: "hi" }] },
      alice.secret,
    );
    const plain = await send(
      `/v1/runs/${run}/proxy/plain/open`,
      "POST",
      { task: TASK.name },
      alice.secret,
    );
    expect(plain.status).toBe(409);

    const row = (id: number) =>
      env.DB.prepare("SELECT token_id FROM groups WHERE id = ?1").bind(id).first<{
        token_id: string | null;
      }>();
    expect((await row(a1.group_id))!.token_id).toBe(alice.id);
    expect((await row(b1.group_id))!.token_id).toBe(bob.id);

    const list = await json<TaskList>(send(`/v1/runs/${run}/tasks`));
    const [task] = list.tasks;
    expect(task).toMatchObject({ name: TASK.name, groups: 3, mean_score: 0.5 });
    expect(task!.contributors).toEqual([
      { token_id: alice.id, token_name: "alice", groups: 2, mean_score: 0.5 },
      { token_id: bob.id, token_name: "bob", groups: 1, mean_score: 0.5 },
    ]);
    expect(new Set([a1.group_id, a2.group_id, b1.group_id]).size).toBe(3);

    // A contributor sees the totals but only its own line.
    const own = await json<TaskList>(send(`/v1/runs/${run}/tasks`, "GET", undefined, bob.secret));
    expect(own.tasks[0]).toMatchObject({ groups: 3 });
    expect(own.tasks[0]!.contributors.map((c) => c.token_name)).toEqual(["bob"]);
    // And cannot lease what it contributed.
    const lease = await send(`/v1/runs/${run}/batches/lease`, "POST", {}, bob.secret);
    expect(lease.status).toBe(403);
  });
});
