/**
 * The inference proxy in workerd on local D1: per-run servers (keys stored, never returned,
 * encrypted at rest with the secret), sessions created on first use, token tracking across tool
 * turns, finish into a group with trajectories beside it, expiry, the Atropos wire and scopes.
 * The inference server is a scripted vLLM (chat with return_token_ids) behind the proxy's fetch.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { submitGroupInProcess } from "../../src/api/ingest-submit";
import { atroposNodesSchema, proxySessionStateSchema } from "../../src/core/wire/api-schemas";
import { call, group, json, post, setupRun, uniqueRun } from "./helpers";
import {
  app,
  type Chat,
  END,
  ids,
  KEY,
  REPLIES,
  type ROLE,
  render,
  SERVERS,
  type SeenRequest,
  TOOLS,
  toolConversation,
} from "./scripted-vllm";

describe("run inference servers", () => {
  it("stores the servers, never returns the key, and encrypts it at rest with the secret", async () => {
    const run = uniqueRun("inf");
    const send = app([], { INFERENCE_KEYS_SECRET: "at-rest-secret" });
    const put = await send(`/v1/runs/${run}/inference`, "PUT", SERVERS);
    const putText = await put.text();
    expect(put.status, putText).toBe(200);
    expect(putText).not.toContain(KEY);
    const got = await send(`/v1/runs/${run}/inference`);
    const gotText = await got.text();
    expect(gotText).not.toContain(KEY);
    const body = JSON.parse(gotText) as { servers: { api_key: null; has_api_key: boolean }[] };
    expect(body.servers).toHaveLength(1);
    expect(body.servers[0]).toMatchObject({
      api_key: null,
      has_api_key: true,
      server_type: "vllm",
    });
    const row = await env.DB.prepare("SELECT servers, api_keys FROM run_inference WHERE run = ?1")
      .bind(run)
      .first<{ servers: string; api_keys: string }>();
    expect(row!.servers).not.toContain(KEY);
    expect(row!.api_keys).not.toContain(KEY);
    expect(row!.api_keys.startsWith("aesgcm:")).toBe(true);

    // Without the secret the servers still show, but the proxy cannot forward, and says why.
    const noSecret = app([]);
    expect((await noSecret(`/v1/runs/${run}/inference`)).status).toBe(200);
    const call = await noSecret(`/v1/runs/${run}/proxy/s/v1/chat/completions`, "POST", {
      messages: [{ role: "user", content: "hi" }],
    });
    expect(call.status).toBe(503);
    expect(await call.text()).toContain("INFERENCE_KEYS_SECRET is not set");
  });

  it("refuses an invalid list with 422 and keeps the previous one", async () => {
    const run = uniqueRun("inf");
    const send = app([]);
    expect((await send(`/v1/runs/${run}/inference`, "PUT", SERVERS)).status).toBe(200);
    const bad = await send(`/v1/runs/${run}/inference`, "PUT", [{ server_type: "nope" }]);
    expect(bad.status).toBe(422);
    expect((await send(`/v1/runs/${run}/inference`, "PUT", [])).status).toBe(422);
    const got = await json<{ servers: unknown[] }>(send(`/v1/runs/${run}/inference`));
    expect(got.servers).toHaveLength(1);
  });
});

describe("OpenAI-style proxy sessions", () => {
  it("parses tool calls in the format of the servers' tokenizer family, or the session's tool_format", async () => {
    const run = uniqueRun("proxyfmt");
    const seen: SeenRequest[] = [];
    const mistral = [
      '[TOOL_CALLS][{"name": "calculator", "arguments": {"expression": "2+3"}}]',
      "The result is 5.",
    ];
    const send = app(seen, {}, mistral);
    const servers = [{ ...SERVERS[0]!, model_name: "mistralai/Mistral-Nemo-Instruct-2407" }];
    expect((await send(`/v1/runs/${run}/inference`, "PUT", servers)).status).toBe(200);
    const user = { role: "user", content: "Tool task: compute 2+3." };
    const chat = (session: string, extra: Record<string, unknown> = {}) =>
      send(`/v1/runs/${run}/proxy/${session}/v1/chat/completions`, "POST", {
        messages: [user],
        tools: TOOLS,
        ...extra,
      });
    // Mistral Nemo's family: [TOOL_CALLS] parsed, with the 9-character ids its template needs.
    const parsed = await json<Chat>(chat("mistral-1"));
    expect(parsed.choices[0]!.finish_reason).toBe("tool_calls");
    const call = parsed.choices[0]!.message.tool_calls![0]!;
    expect(call.id).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(call.function).toEqual({ name: "calculator", arguments: '{"expression":"2+3"}' });
    expect(seen.at(-1)!.body.tool_format).toBeUndefined();
    // A session that names another format keeps it for its later calls.
    const hermes = await json<Chat>(chat("hermes-1", { tool_format: "hermes" }));
    expect(hermes.choices[0]!.message).toEqual({ role: "assistant", content: mistral[0] });
    const later = await json<Chat>(chat("hermes-1"));
    expect(later.choices[0]!.message.tool_calls).toBeUndefined();
    // An unknown format is a 400 naming the known ones.
    const bad = await chat("bad-1", { tool_format: "xml" });
    expect(bad.status).toBe(400);
    const detail = (await json<{ detail: string }>(bad)).detail;
    expect(detail).toMatch(/unknown tool_format "xml": send one of hermes, llama3_json, mistral/);
  });

  it("tracks a 3-turn tool conversation as one sequence and finishes it into a group", async () => {
    const run = uniqueRun("proxy");
    const seen: SeenRequest[] = [];
    const send = app(seen, { INFERENCE_KEYS_SECRET: "at-rest-secret" });
    expect((await send(`/v1/runs/${run}/inference`, "PUT", SERVERS)).status).toBe(200);
    const base = `/v1/runs/${run}/proxy/agent-1`;
    const messages = await toolConversation(send, base);

    // Forwarded with the stored key; tools rendered by the server, raw text replayed verbatim.
    expect(seen).toHaveLength(3);
    expect(seen.every((s) => s.authorization === `Bearer ${KEY}`)).toBe(true);
    expect(seen[0]!.body.tool_choice).toBe("none");
    const replayed = (seen[1]!.body.messages as { role: string; content: string }[])[2]!;
    expect(replayed).toEqual({ role: "assistant", content: REPLIES[0] });

    const stateBody = await json(send(`${base}/state`));
    // The declared schema describes every field the route answers.
    expect(proxySessionStateSchema.parse(stateBody)).toEqual(stateBody);
    const state = stateBody as unknown as {
      nodes: { tokens: number[]; masked_tokens: number[]; logprobs: number[] }[];
    };
    expect(state.nodes).toHaveLength(1);
    const node = state.nodes[0]!;
    const finalMessages = messages.map((m) => ({
      role: m.role as keyof typeof ROLE,
      content: m.tool_calls ? REPLIES[messages.indexOf(m) === 2 ? 0 : 1]! : (m.content as string),
    }));
    // The whole conversation, every assistant turn trainable, prompts masked.
    const expected = [...render(finalMessages.slice(0, -1)), ...ids(REPLIES[2]!), END];
    expect(node.tokens).toEqual(expected);
    const trainable = node.masked_tokens.filter((m) => m !== -100);
    expect(trainable).toEqual([
      ...ids(REPLIES[0]!),
      END,
      ...ids(REPLIES[1]!),
      END,
      ...ids(REPLIES[2]!),
      END,
    ]);
    expect(node.masked_tokens[0]).toBe(-100);
    expect(node.logprobs.filter((l) => l !== 1)).toHaveLength(trainable.length);

    const wrong = await send(`${base}/finish`, "POST", { scores: [1, 0] });
    expect(wrong.status).toBe(422);
    expect(await wrong.text()).toContain("tracks 1 sequence");

    const finished = await json<{ group_id: number; status: string }>(
      send(`${base}/finish`, "POST", {
        scores: [1],
        turn_scores: [[0.5, 0.1, 1]],
        success: [true],
      }),
    );
    expect(finished.status).toBe("received");
    const again = await json<{ group_id: number; status: string }>(
      send(`${base}/finish`, "POST", { scores: [1] }),
    );
    expect(again).toMatchObject({ group_id: finished.group_id, status: "duplicate" });

    const detail = await json<{
      payload: {
        tokens: number[][];
        masks: number[][];
        inference_logprobs: number[][];
        advantages: number[][];
      };
    }>(send(`/v1/runs/${run}/groups/${finished.group_id}`));
    expect(detail.payload.tokens).toEqual([node.tokens]);
    expect(detail.payload.masks).toEqual([node.masked_tokens]);
    expect(detail.payload.inference_logprobs).toEqual([node.logprobs]);
    const advantages = detail.payload.advantages[0]!;
    const firstTurn = node.masked_tokens.findIndex((m) => m !== -100);
    expect(advantages[firstTurn]).toBe(0.5);
    expect(advantages.at(-1)).toBe(1);

    const { trajectories } = await json<{
      trajectories: {
        task: string;
        steps: {
          tool_call: { name: string; parameters: unknown; result: string | null } | null;
          observation: string | null;
        }[];
        final_response: string | null;
        success: boolean | null;
        token_count: number;
        source: string;
      }[];
    }>(send(`/v1/runs/${run}/groups/${finished.group_id}/trajectories`));
    expect(trajectories).toHaveLength(1);
    const trajectory = trajectories[0]!;
    expect(trajectory.task).toContain("compute 2+3");
    expect(trajectory.steps.map((s) => s.tool_call?.name ?? null)).toEqual([
      "calculator",
      "kv_set",
      null,
    ]);
    expect(trajectory.steps[0]!.tool_call).toMatchObject({
      parameters: { expression: "2+3" },
      result: "calculator result: 5",
    });
    expect(trajectory.final_response).toBe(REPLIES[2]);
    expect(trajectory).toMatchObject({
      success: true,
      token_count: node.tokens.length,
      source: "proxy",
    });

    // A finished session takes no more calls.
    const late = await send(`${base}/v1/chat/completions`, "POST", {
      messages: [{ role: "user", content: "hi" }],
    });
    expect(late.status).toBe(409);
  });

  it("answers 409 without servers, 400 for a bad body, and 404 with the reason once expired", async () => {
    const run = uniqueRun("proxy");
    const send = app([]);
    const base = `/v1/runs/${run}/proxy/s-1`;
    const noServers = await send(`${base}/v1/chat/completions`, "POST", {
      messages: [{ role: "user", content: "hi" }],
    });
    expect(noServers.status).toBe(409);
    expect(await noServers.text()).toContain(`PUT /v1/runs/${run}/inference`);
    expect((await send(`${base}/state`)).status).toBe(404);

    expect((await send(`/v1/runs/${run}/inference`, "PUT", SERVERS)).status).toBe(200);
    const noMessages = await send(`${base}/v1/chat/completions`, "POST", { messages: [] });
    expect(noMessages.status).toBe(400);
    const badStream = await send(`${base}/v1/chat/completions`, "POST", {
      messages: [{ role: "user", content: "hi" }],
      stream: "yes",
    });
    expect(badStream.status).toBe(400);
    expect(await badStream.text()).toContain("stream must be true or false");
    const badOptions = await send(`${base}/v1/chat/completions`, "POST", {
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: ["include_usage"],
    });
    expect(badOptions.status).toBe(400);
    expect(await badOptions.text()).toContain("stream_options must be an object");
    const ok = await send(`${base}/v1/chat/completions`, "POST", {
      messages: [{ role: "user", content: "hi" }],
    });
    expect(ok.status).toBe(200);

    // A completion that would outgrow the session's row is refused; the session keeps its state.
    const flood = await send(`${base}/v1/chat/completions`, "POST", {
      messages: [{ role: "user", content: "flood" }],
    });
    expect(flood.status).toBe(413);
    expect(await flood.text()).toContain("finish the session and continue in a new one");
    const kept = await json<{ nodes: unknown[] }>(send(`${base}/state`));
    expect(kept.nodes).toHaveLength(1);

    await env.DB.prepare("UPDATE proxy_sessions SET expires_at = 1 WHERE run = ?1").bind(run).run();
    const expired = await send(`${base}/state`);
    expect(expired.status).toBe(404);
    expect(await expired.text()).toMatch(/expired at 1970-01-01T00:00:00.001Z/);
    const call = await send(`${base}/v1/chat/completions`, "POST", {
      messages: [{ role: "user", content: "hi" }],
    });
    expect(call.status).toBe(404);
  });

  it("tracks text completions: a continued prompt extends the earlier sequence", async () => {
    const run = uniqueRun("proxy");
    const send = app([]);
    expect((await send(`/v1/runs/${run}/inference`, "PUT", SERVERS)).status).toBe(200);
    const base = `/v1/runs/${run}/proxy/text-1`;
    const first = await json<{ choices: { text: string }[]; usage: { prompt_tokens: number } }>(
      send(`${base}/v1/completions`, "POST", { prompt: "Once", max_tokens: 10 }),
    );
    expect(first.choices[0]!.text).toBe(" and so on");
    expect(first.usage.prompt_tokens).toBe(4);
    const second = await send(`${base}/v1/completions`, "POST", {
      prompt: `Once${first.choices[0]!.text}. Then`,
    });
    expect(second.status).toBe(200);
    const state = await json<{ nodes: { masked_tokens: number[] }[] }>(send(`${base}/state`));
    expect(state.nodes).toHaveLength(1);
    const masks = state.nodes[0]!.masked_tokens;
    const trainable = masks.filter((m) => m !== -100);
    expect(trainable).toEqual([...ids(" and so on"), ...ids(" and so on")]);
    const bad = await send(`${base}/v1/completions`, "POST", { prompt: ["a", "b"] });
    expect(bad.status).toBe(400);
  });
});

describe("Atropos proxy wire", () => {
  it("creates, chats, lists nodes and deletes a session", async () => {
    const run = uniqueRun("atr");
    const send = app([]);
    expect((await send(`/v1/runs/${run}/inference`, "PUT", SERVERS)).status).toBe(200);
    const root = `/v1/runs/${run}/atropos-proxy`;
    expect(
      (
        await send(`${root}/unknown-session/v1/chat/completions`, "POST", {
          messages: [{ role: "user", content: "hi" }],
        })
      ).status,
    ).toBe(404);
    const { uuid, url } = await json<{ uuid: string; url: string }>(
      send(`${root}/sessions/create`, "POST", {}),
    );
    expect(url).toBe(`${root}/${uuid}/v1`);
    await toolConversation(send, `${root}/${uuid}`);
    const nodesBody = await json(send(`${root}/${uuid}/nodes`));
    expect(atroposNodesSchema.parse(nodesBody)).toEqual(nodesBody);
    const { nodes } = nodesBody as unknown as { nodes: { tokens: number[] }[] };
    expect(nodes).toHaveLength(1);
    // The same session through the OpenAI-style routes.
    const state = await json<{ nodes: { tokens: number[] }[] }>(
      send(`/v1/runs/${run}/proxy/${uuid}/state`),
    );
    expect(state.nodes).toEqual(nodes);
    expect((await send(`${root}/${uuid}`, "DELETE")).status).toBe(200);
    expect((await send(`${root}/${uuid}/nodes`)).status).toBe(404);
    expect((await send(`${root}/${uuid}`, "DELETE")).status).toBe(404);
  });
});

describe("proxy scopes", () => {
  it("lets a contributor token of the run chat and finish, and nobody else's", async () => {
    const run = uniqueRun("scope");
    const other = uniqueRun("scope");
    const send = app([]);
    expect((await send(`/v1/runs/${run}/inference`, "PUT", SERVERS)).status).toBe(200);
    const token = async (scopes: string[], bound: string | null) =>
      (
        await json<{ secret: string }>(
          send("/v1/tokens", "POST", { name: "t", scopes, run: bound }),
        )
      ).secret;
    const mine = await token(["contributor"], run);
    const theirs = await token(["contributor"], other);
    const reader = await token(["read"], null);
    const chat = (who: string) =>
      send(
        `/v1/runs/${run}/proxy/sc/v1/chat/completions`,
        "POST",
        { messages: [{ role: "user", content: "hi" }] },
        who,
      );
    expect((await chat(theirs)).status).toBe(403);
    expect((await chat(reader)).status).toBe(403);
    expect((await chat(mine)).status).toBe(200);
    expect((await send(`/v1/runs/${run}/inference`, "PUT", SERVERS, mine)).status).toBe(403);
    const shown = await send(`/v1/runs/${run}/inference`, "GET", undefined, reader);
    expect(shown.status).toBe(200);
    expect(await shown.text()).not.toContain(KEY);
  });
});

describe("trajectories submitted with a group (agent envs)", () => {
  const trajectory = (sequence: number) => ({
    task: "Tool task: compute 1 + 1",
    steps: [
      {
        thought: "I need the calculator.",
        tool_call: {
          name: "calculator",
          parameters: { expression: "1 + 1" },
          result: "2",
          error: null,
          latency_ms: 3,
        },
        observation: "calculator result: 2",
        timestamp: 1_700_000_000_000,
      },
    ],
    final_response: "<answer>2</answer>",
    success: true,
    judge_score: null,
    token_count: 6,
    wall_time_ms: 40,
    sequence,
    source: "env",
  });

  it("stores them beside the group, serves them by group, and leaves the leased group unchanged", async () => {
    const run = uniqueRun("traj");
    const { envIds } = await setupRun(run, 2, [2]);
    const sent = {
      ...group(5, 2, envIds[0]!),
      trajectories: [trajectory(0), trajectory(1)],
    };
    expect((await post(`/runs/${run}/scored_data`, sent)).status).toBe(200);
    const { groups } = await json<{ groups: { id: number }[] }>(call(`/v1/runs/${run}/groups`));
    const stored = await json<{ trajectories: unknown[] }>(
      call(`/v1/runs/${run}/groups/${groups[0]!.id}/trajectories`),
    );
    expect(stored.trajectories).toEqual([trajectory(0), trajectory(1)]);

    const batch = await json<{ batch: Record<string, unknown>[] }>(call(`/runs/${run}/batch`));
    expect(batch.batch).toHaveLength(1);
    expect(Object.keys(batch.batch[0]!)).toHaveLength(14);
    expect(batch.batch[0]).not.toHaveProperty("trajectories");
  });

  it("stores an env worker's trajectories once when its queue item is delivered twice", async () => {
    const run = uniqueRun("traj");
    const { envIds } = await setupRun(run, 2, [2]);
    const sent = { ...group(8, 2, envIds[0]!), trajectories: [trajectory(1)] };
    const bindings = env as unknown as Bindings;
    const first = await submitGroupInProcess(bindings, run, sent, "item:x:0");
    const again = await submitGroupInProcess(bindings, run, sent, "item:x:0");
    expect(again).toMatchObject({ status: "duplicate", groupId: first.groupId });
    const stored = await json<{ trajectories: unknown[] }>(
      call(`/v1/runs/${run}/groups/${first.groupId}/trajectories`),
    );
    expect(stored.trajectories).toEqual([trajectory(1)]);
  });

  it("refuses invalid trajectories with 422 and stores nothing", async () => {
    const run = uniqueRun("traj");
    const { envIds } = await setupRun(run, 2, [2]);
    const outside = await post(`/runs/${run}/scored_data`, {
      ...group(6, 2, envIds[0]!),
      trajectories: [trajectory(2)],
    });
    expect(outside.status).toBe(422);
    expect(await outside.text()).toContain("names sequence 2; the group has 2");
    const malformed = await post(`/runs/${run}/scored_data`, {
      ...group(7, 2, envIds[0]!),
      trajectories: [{ ...trajectory(0), steps: "none" }],
    });
    expect(malformed.status).toBe(422);
    const { groups } = await json<{ groups: unknown[] }>(call(`/v1/runs/${run}/groups`));
    expect(groups).toHaveLength(0);
  });
});
