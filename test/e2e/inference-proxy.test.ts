/**
 * The inference proxy end to end: `npm run dev` in front of the simulator (stock-vLLM wire).
 * The official Python `openai` client (examples/python/proxy_agent.py) drives a 3-turn tool
 * conversation through /v1/runs/{run}/proxy/{session}/v1 and finishes it; a plain-HTTP
 * Atropos-style client does the same through the Atropos proxy routes; a Python contributor
 * (atropos_edge.TrajectoryContributor, test/e2e/python/contributor_agent.py) registers a task and
 * submits trajectories whose agent is that client. Every group must hold exactly the tokens,
 * masks and logprobs of a direct ManagedServer run of the same conversation. The same client
 * through the proxy to the llama.cpp engine (a tiny random model) gives a group equal to a
 * PyTorch forward pass of the model's weights.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runExport } from "../../src/cli/export-command";
import { closeLlamaRuntime, type EngineServer, startEngine } from "../../src/engine/index";
import type { SequenceNode, ToolDefinition } from "../../src/inference/types";
import { type Simulator, startSimulator } from "../../src/sim/server";
import { maxLogprobError, stopScorer, type TinyModel, tinyModel } from "./engine-fixture";
import { type DevServer, ROOT, startDevServer } from "./harness";
import { directRun, type Payload, type Transcript } from "./proxy-direct";

const run = promisify(execFile);
const examples = join(ROOT, "examples", "python");
const RUN = "proxy-e2e";

/** The Atropos-style client's own tool list (any list works: the server renders it). */
const TOOLS: ToolDefinition[] = [
  { type: "function", function: { name: "calculator", parameters: { type: "object" } } },
  { type: "function", function: { name: "kv_set", parameters: { type: "object" } } },
];

/** The simulator as stock vLLM (it templates chats and returns their ids). */
const simVllm = (url: string) => ({
  base_url: `${url}/v1`,
  server_type: "vllm" as const,
  model_name: "sim-policy",
  tokenizer_name: "qwen3",
  health_check: false,
});

async function getJson<T>(url: string, init?: RequestInit): Promise<T> {
  const res = await fetch(url, init);
  expect(res.status, `${url}: ${await res.clone().text()}`).toBe(200);
  return (await res.json()) as T;
}

describe("inference proxy: exact tokens from unmodified agents", () => {
  let server: DevServer;
  let sim: Simulator;
  let python: string;
  let tiny: TinyModel;
  let engine: EngineServer;
  beforeAll(async () => {
    const [install, dev, simulator, model] = await Promise.all([
      run("bash", [join(examples, "install_openai.sh")], { timeout: 300_000 }),
      startDevServer(),
      startSimulator({ correctProbability: 1 }),
      tinyModel("qwen2"),
    ]);
    python = install.stdout.trim().split("\n").at(-1) ?? "";
    server = dev;
    sim = simulator;
    tiny = model;
    engine = await startEngine({ model: tiny.gguf, threads: 1, parallel: 2, ctx: 2048 });
    await putInference(RUN, {
      base_url: `${sim.url}/v1`,
      model_name: "sim-policy",
      api_key: "sk-e2e-secret",
    });
  }, 600_000);

  /** Sets a run's inference server (a stock-vLLM wire, no health probes). */
  async function putInference(run: string, config: Record<string, string>): Promise<void> {
    const res = await fetch(`${server.url}/v1/runs/${run}/inference`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([{ server_type: "vllm", health_check: false, ...config }]),
    });
    expect(res.status, await res.clone().text()).toBe(200);
  }
  afterAll(async () => {
    stopScorer();
    await server?.stop();
    await sim?.close();
    await engine?.close();
    await closeLlamaRuntime();
  });

  it("the Python openai client through the proxy to the llama.cpp engine: a token-exact group", async () => {
    const engineRun = `${RUN}-engine`;
    await putInference(engineRun, { base_url: `${engine.url}/v1`, model_name: "tiny" });
    const { stdout } = await run(
      python,
      [
        join(examples, "proxy_agent.py"),
        ...["--api", server.url, "--run", engineRun, "--session", "engine-1", "--max-turns", "1"],
      ],
      { timeout: 120_000 },
    );
    const transcript = JSON.parse(stdout) as Transcript;
    expect(transcript.finish).toMatchObject({ status: "received", sequences: 1 });
    const { payload } = await getJson<{ payload: Payload }>(
      `${server.url}/v1/runs/${engineRun}/groups/${transcript.finish.group_id}`,
    );
    const sequence = {
      tokens: payload.tokens[0]!,
      masks: payload.masks[0]!,
      logprobs: payload.inference_logprobs[0]!,
    };
    expect(sequence.masks.filter((m) => m !== -100).length).toBeGreaterThan(0);
    expect(await maxLogprobError(tiny, [sequence])).toBeLessThanOrEqual(1e-3);
  });

  it("the Python openai client: 3 tool turns, finished into a group equal to a direct ManagedServer run", async () => {
    const { stdout } = await run(
      python,
      [
        join(examples, "proxy_agent.py"),
        "--api",
        server.url,
        "--run",
        RUN,
        "--session",
        "py-agent-1",
        "--seed",
        "11",
      ],
      { timeout: 120_000 },
    );
    const transcript = JSON.parse(stdout) as Transcript;
    const roles = transcript.messages.map((m) => m.role);
    expect(roles).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(transcript.finish).toMatchObject({ status: "received", sequences: 1 });

    const { payload } = await getJson<{ payload: Payload }>(
      `${server.url}/v1/runs/${RUN}/groups/${transcript.finish.group_id}`,
    );
    expect(payload.scores).toEqual([1.5]);
    const direct = await directRun(simVllm(sim.url), transcript, 11);
    expect(payload.tokens).toEqual([direct.tokens]);
    expect(payload.masks).toEqual([direct.masked_tokens]);
    expect(payload.inference_logprobs).toEqual([direct.logprobs]);
    // Three assistant turns, all trainable, in one sequence.
    const starts = direct.masked_tokens.filter(
      (m, i) => m !== -100 && direct.masked_tokens[i - 1] === -100,
    );
    expect(starts).toHaveLength(3);

    const { trajectories } = await getJson<{
      trajectories: { steps: { tool_call: { name: string } | null }[]; success: boolean }[];
    }>(`${server.url}/v1/runs/${RUN}/groups/${transcript.finish.group_id}/trajectories`);
    expect(trajectories[0]!.steps.map((s) => s.tool_call?.name ?? null)).toEqual([
      "calculator",
      "kv_set",
      null,
    ]);
    expect(trajectories[0]!.success).toBe(true);

    // `export trajectories` reads them back, read-only, with their group and score.
    const out = join(mkdtempSync(join(tmpdir(), "export-trajectories-")), "t.jsonl");
    await runExport(
      {
        kind: "trajectories",
        api: server.url,
        run: RUN,
        out,
        topN: 0,
        minScoreDiff: 0,
        allowNegativeScores: false,
        saveMessages: false,
        maxRecords: 0,
        maxGroups: 0,
        tokenizer: "qwen3",
        seed: 0,
        append: false,
      },
      () => {},
    );
    const records = readFileSync(out, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { group_id: number; score: number; steps: unknown[] });
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ group_id: transcript.finish.group_id, score: 1.5 });
    expect(records[0]!.steps).toHaveLength(3);
  });

  it("a Python contributor (atropos_edge): task registered, openai agent's groups exact, attributed, tallied", async () => {
    const made = await getJson<{ id: string; secret: string }>(`${server.url}/v1/tokens`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "alice", scopes: ["contributor"], run: RUN }),
    });
    const { stdout } = await run(
      python,
      [
        join(ROOT, "test", "e2e", "python", "contributor_agent.py"),
        server.url,
        RUN,
        made.secret,
        "c1",
      ],
      { timeout: 120_000, env: { ...process.env, PYTHONPATH: join(ROOT, "python") } },
    );
    interface Shown {
      session: string;
      group_id: number;
      status: string;
      score: number | null;
    }
    const out = JSON.parse(stdout) as {
      registered: string[];
      first: Shown[];
      again: Shown[];
      built_in: Shown[];
      transcripts: (Omit<Transcript, "finish"> & { url: string; seed: number })[];
      agent_calls: number;
      lease: { status: number; message: string };
      tasks: {
        name: string;
        groups: number;
        contributors: { token_name: string; groups: number }[];
      }[];
    };
    expect(out.registered).toEqual(["created", "unchanged"]);
    // Both tool tasks solved (1.0) with two tool calls (0.25 each).
    expect(out.first.map((c) => [c.session, c.status, c.score])).toEqual([
      ["c1-0", "received", 1.5],
      ["c1-1", "received", 1.5],
    ]);
    // The retry returned what was stored without running the agent again.
    expect(out.again).toEqual(out.first.map((c) => ({ ...c, status: "duplicate", score: null })));
    expect(out.agent_calls).toBe(2);
    for (const [i, contribution] of out.first.entries()) {
      const transcript = out.transcripts[i]!;
      expect(transcript.url).toBe(`${server.url}/v1/runs/${RUN}/proxy/${contribution.session}/v1`);
      const { payload } = await getJson<{ payload: Payload }>(
        `${server.url}/v1/runs/${RUN}/groups/${contribution.group_id}`,
      );
      const direct = await directRun(simVllm(sim.url), transcript, transcript.seed);
      expect(payload.tokens).toEqual([direct.tokens]);
      expect(payload.masks).toEqual([direct.masked_tokens]);
      expect(payload.inference_logprobs).toEqual([direct.logprobs]);
      expect(payload.scores).toEqual([1.5]);
    }
    expect(out.built_in).toMatchObject([{ session: "c1-chat-0", status: "received" }]);
    // Attributed: the contributor's own groups are exactly these; it cannot lease them.
    const own = await getJson<{ groups: { id: number; token_id: string | null }[] }>(
      `${server.url}/v1/runs/${RUN}/groups`,
      { headers: { authorization: `Bearer ${made.secret}` } },
    );
    const ids = [...out.first, ...out.built_in].map((c) => c.group_id);
    expect(own.groups.map((g) => g.id).sort()).toEqual([...ids].sort());
    expect(new Set(own.groups.map((g) => g.token_id))).toEqual(new Set([made.id]));
    expect(out.lease.status).toBe(403);
    expect(out.tasks).toMatchObject([
      { name: "tool_math", groups: 3, contributors: [{ token_name: "alice", groups: 3 }] },
    ]);
  });

  it("an Atropos-style client over plain HTTP: the same conversation, the same nodes", async () => {
    const root = `${server.url}/v1/runs/${RUN}/atropos-proxy`;
    const post = (url: string, body: unknown) =>
      getJson<Record<string, unknown>>(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const { uuid } = (await post(`${root}/sessions/create`, {})) as { uuid: string };
    const messages: Record<string, unknown>[] = [
      { role: "system", content: "You are an agent that solves tasks with tools." },
      {
        role: "user",
        content:
          'Tool task: compute 7 * 6 with the calculator tool, store the result under the key "memo" with kv_set, then reply with the result inside <answer></answer> tags.',
      },
    ];
    const observations = ["calculator result: 42", "kv_set result: ok"];
    for (let turn = 0; turn < 3; turn++) {
      const chat = (await post(`${root}/${uuid}/v1/chat/completions`, {
        messages,
        tools: TOOLS,
        temperature: 1.0,
        max_tokens: 256,
        seed: 40 + turn,
      })) as {
        choices: { message: { tool_calls?: { id: string }[] } & Record<string, unknown> }[];
      };
      const message = chat.choices[0]!.message;
      messages.push(message);
      for (const call of message.tool_calls ?? []) {
        messages.push({ role: "tool", tool_call_id: call.id, content: observations[turn] });
      }
    }
    expect(messages.map((m) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "assistant",
    ]);
    const { nodes } = await getJson<{ nodes: SequenceNode[] }>(`${root}/${uuid}/nodes`);
    expect(nodes).toHaveLength(1);
    const transcript: Transcript = {
      messages,
      tools: TOOLS,
      finish: { group_id: -1, status: "", sequences: 0 },
    };
    const direct = await directRun(simVllm(sim.url), transcript, 40);
    expect(nodes[0]!.tokens).toEqual(direct.tokens);
    expect(nodes[0]!.masked_tokens).toEqual(direct.masked_tokens);
    expect(nodes[0]!.logprobs).toEqual(direct.logprobs);

    const deleted = await fetch(`${root}/${uuid}`, { method: "DELETE" });
    expect(deleted.status).toBe(200);
    expect((await fetch(`${root}/${uuid}/nodes`)).status).toBe(404);
  });
});
