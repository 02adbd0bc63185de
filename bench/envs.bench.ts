/**
 * `npm run bench:envs` — env-side costs, loopback only, bounded (≈ 60 s).
 *
 * (a) CPU per rollout outside inference: gsm8k_lite with the real qwen3 tokenizer and the real
 *     ServerManager/ManagedServer, whose fetch returns a canned vLLM `/generate` answer (~1,000-token
 *     sequences). Timed per group, three consecutive spans:
 *     - env side (the headline number): collectTrajectories (chat template, tokenize,
 *       ManagedServer tracking, scoring) + postprocess + send-side validation + JSON.stringify of
 *       the body the runtime POSTs;
 *     - submit encoding: what RolloutApiClient.submitGroups adds before the POST (UTF-8 encode,
 *       gzip), reported as env side + this;
 *     - API: the server's schema validation + canonical JSON (the Worker's CPU, also in
 *       bench:api), reported as env side + this.
 *     Reported per rollout (group ÷ group_size), median of N groups.
 * (b) Pipeline efficiency: the Node serve runtime (`serveEnv`) against a real `npm run dev`
 *     (scripts/dev.mjs: API, D1, R2) and the inference simulator over HTTP with fixed latency,
 *     a trainer leasing and acking batches meanwhile. One simulator request per group
 *     (n = group_size). Efficiency = rollouts/s ÷ (rollouts in flight at the cap / latency).
 *
 * Prints a table and, last, one JSON line.
 */
import { mkdtempSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { freePort } from "../scripts/ports.mjs";
import { validateGroup } from "../src/api/group-validation";
import { startDevProcess } from "../src/cli/dev-process";
import { canonicalGroupJson } from "../src/core/wire/canonical-group";
import { groupsOf, type JsonValue } from "../src/env-sdk/base-env";
import { gzipBytes, RolloutApiClient } from "../src/env-sdk/runtime/api-client";
import { nodeGetWithBody } from "../src/env-sdk/runtime/node-get-with-body";
import { serveEnv } from "../src/env-sdk/runtime/serve";
import { validateGroupForSend } from "../src/env-sdk/send-validation";
import { getEnvDefinition } from "../src/envs/index";
import { ServerManager } from "../src/inference/server-manager";
import { getTokenizer } from "../src/inference/tokenizers/index";
import type { Tokenizer } from "../src/inference/types";
import { startSimulator } from "../src/sim/server";

const GROUP_SIZE = 8;
const CPU_SAMPLES = Number(process.env.BENCH_CPU_SAMPLES ?? 300);
const CPU_WARMUP = 30;
const COMPLETION_TOKENS = 900;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

/** A canned Atropos `/generate` answer: `n` completions, even ones correct, ~900 tokens each. */
function cannedGenerate(tokenizer: Tokenizer, gold: string, n: number): string {
  const reasoning = "First we add the numbers step by step and then check the result carefully. ";
  const logprobs: Record<string, number>[][][] = [];
  for (let c = 0; c < n; c++) {
    let text = "";
    while (tokenizer.encode(text).length < COMPLETION_TOKENS) text += reasoning;
    text += `The answer is \\boxed{${c % 2 === 0 ? gold : `${gold}1`}}.`;
    const ids = [...tokenizer.encode(text), tokenizer.eosTokenId];
    logprobs.push(ids.map((id, i) => [{ [String(id)]: -((i % 17) + 1) / 20 }]));
  }
  return JSON.stringify({ logprobs, finish_reasons: Array(n).fill("stop") });
}

async function measureCpu() {
  const tokenizer = await getTokenizer("qwen3");
  let canned = "";
  const cannedFetch = async () =>
    new Response(canned, { headers: { "content-type": "application/json" } });
  const inference = new ServerManager(
    [
      {
        base_url: "http://127.0.0.1:1",
        server_type: "atropos", // the canned body is Atropos' /generate answer
        model_name: "canned",
        tokenizer_name: "qwen3",
      },
    ],
    { fetch: cannedFetch, getTokenizer },
  );
  const def = getEnvDefinition("gsm8k_lite");
  const config = {
    group_size: GROUP_SIZE,
    max_token_length: 2048,
    ensure_scores_are_not_same: true,
  };
  const env = def.create(config, inference, tokenizer);
  await env.setup();
  const item = (await env.getNextItem()) as { gold: string } & JsonValue;
  canned = cannedGenerate(tokenizer, String(item.gold), GROUP_SIZE);

  const envUs: number[] = [];
  const withEncodeUs: number[] = [];
  const withApiUs: number[] = [];
  const wallMs: number[] = [];
  const utf8 = new TextEncoder();
  let seqTokens = 0;
  let submitted = 0;
  for (let i = 0; i < CPU_WARMUP + CPU_SAMPLES; i++) {
    let encodeUs = 0;
    let apiUs = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const [collected] = await env.collectTrajectories(item);
    const groups = groupsOf(await env.postprocessHistories(collected));
    const checked = groups.map((group) => {
      const result = validateGroupForSend(group, {
        groupSize: GROUP_SIZE,
        ensureScoresAreNotSame: true,
        maxTokenLen: 2048,
        includeMessages: false,
        abortOnMaxLength: true,
      });
      if (!result.ok) throw new Error(`bench group dropped: ${result.reason}`);
      return result.group;
    });
    // The body serveEnv POSTs: one group (env_id stamped) as RolloutApiClient.submitGroups sends.
    const bodies = checked.map((group) => JSON.stringify({ ...group, env_id: 0 }));
    const wall = performance.now() - t0;
    const envCpu = process.cpuUsage(cpu0);
    for (const body of bodies) {
      const encode0 = process.cpuUsage();
      const compressed = await gzipBytes(utf8.encode(body));
      if (compressed.length === 0) throw new Error("bench encoding failed");
      const encode = process.cpuUsage(encode0);
      encodeUs += encode.user + encode.system;
    }
    for (const group of checked) {
      const api0 = process.cpuUsage();
      const json = canonicalGroupJson(validateGroup({ ...group, env_id: 0 }), 0);
      const api = process.cpuUsage(api0);
      apiUs += api.user + api.system;
      if (json.length < 100) throw new Error("canonical JSON unexpectedly small");
      seqTokens = group.tokens[0]!.length;
      submitted++;
    }
    if (i >= CPU_WARMUP) {
      const envTotal = envCpu.user + envCpu.system;
      envUs.push(envTotal);
      withEncodeUs.push(envTotal + encodeUs);
      withApiUs.push(envTotal + apiUs);
      wallMs.push(wall);
    }
  }
  const perRollout = (us: number) => us / 1000 / GROUP_SIZE;
  return {
    group_size: GROUP_SIZE,
    samples: CPU_SAMPLES,
    groups_validated: submitted,
    tokens_per_sequence: seqTokens,
    /** Env side: collect + postprocess + send validation + JSON.stringify of the POST body. */
    cpu_ms_per_rollout_median: perRollout(median(envUs)),
    cpu_ms_per_rollout_p90: perRollout(percentile(envUs, 90)),
    /** Env side + gzip (the rest of submitGroups before the POST). */
    cpu_ms_per_rollout_with_submit_encoding_median: perRollout(median(withEncodeUs)),
    /** Env side + the API's validateGroup + canonicalGroupJson (server CPU, see bench:api). */
    cpu_ms_per_rollout_env_plus_api_median: perRollout(median(withApiUs)),
    wall_ms_per_rollout_median: median(wallMs) / GROUP_SIZE,
  };
}

interface PipelineResult {
  poll_interval_ms: number;
  /** max_num_workers: groups in flight, each one simulator request with n = group_size. */
  in_flight_groups: number;
  /** Rollouts (trajectories) in flight at the cap: in_flight_groups × group_size. */
  in_flight_rollouts: number;
  latency_ms: number;
  ideal_rollouts_per_s: number;
  groups: number;
  seconds: number;
  rollouts_per_s: number;
  efficiency: number;
  mean_sim_in_flight: number;
  /** Non-2xx answers to POST /scored_data by status (the runtime does not resubmit them). */
  submit_errors: Record<number, number>;
  worker_errors: number;
}

async function measurePipeline(
  url: string,
  run: string,
  simUrl: string,
  simInFlight: () => number,
  opts: {
    capGroups: number;
    groupSize: number;
    latencyMs: number;
    pollMs: number;
    warmupS: number;
    measureS: number;
  },
): Promise<PipelineResult> {
  const post = (path: string, body: unknown) =>
    fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, text: await r.text() }));
  const base = `/runs/${run}`;
  const reg = await post(`${base}/register`, {
    wandb_group: "bench",
    wandb_project: "bench",
    batch_size: 64,
    max_token_len: 2048,
    checkpoint_dir: "ckpt",
    save_checkpoint_interval: -1,
    starting_step: 0,
    num_steps: 1_000_000,
  });
  if (reg.status !== 200) throw new Error(`register: ${reg.status} ${reg.text}`);

  const abort = new AbortController();
  let groups = 0;
  let workerErrors = 0;
  const submitErrors: Record<number, number> = {};
  const tokenizer = await getTokenizer("qwen3");
  const inference = new ServerManager(
    [
      {
        base_url: simUrl,
        server_type: "atropos", // the route docs/BENCHMARKS.md measured
        model_name: "sim-policy",
        tokenizer_name: "qwen3",
        timeout: 30,
      },
    ],
    { getTokenizer },
  );
  const env = getEnvDefinition("gsm8k_lite").create(
    {
      group_size: opts.groupSize,
      max_num_workers: opts.capGroups,
      // Generous, so the trainer never throttles the env (≤0 would mean zero workers: see report).
      max_batches_offpolicy: 50,
      max_token_length: 512,
      total_steps: -1,
      ensure_scores_are_not_same: false,
      rollout_server_url: url,
      run,
    },
    inference,
    tokenizer,
  );
  const api = new RolloutApiClient({ url, run, getWithBody: nodeGetWithBody });
  const serving = serveEnv(env, api, {
    signal: abort.signal,
    pollIntervalMs: opts.pollMs,
    onEvent: (e) => {
      if (e.type === "submitted" && e.ok) groups += e.groups;
      else if (e.type === "submitted") submitErrors[e.status] = (submitErrors[e.status] ?? 0) + 1;
      else if (e.type === "worker_error") workerErrors++;
    },
  }).catch((error: unknown) => {
    if (!abort.signal.aborted) throw error;
  });
  // A trainer draining batches the whole time, as in a real run.
  const trainer = (async () => {
    while (!abort.signal.aborted) {
      const res = await fetch(`${url}/v1/runs/${run}/batches/lease`, { method: "POST" });
      if (res.status !== 200) {
        await res.arrayBuffer();
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      const lease = (await res.json()) as { batch_id: string; lease_id: string };
      await post(`/v1/runs/${run}/batches/${lease.batch_id}/ack`, { lease_id: lease.lease_id });
    }
  })().catch(() => {});

  await new Promise((r) => setTimeout(r, opts.warmupS * 1000));
  const startGroups = groups;
  const start = performance.now();
  const inFlightSamples: number[] = [];
  const sampler = setInterval(() => inFlightSamples.push(simInFlight()), 20);
  await new Promise((r) => setTimeout(r, opts.measureS * 1000));
  clearInterval(sampler);
  const seconds = (performance.now() - start) / 1000;
  const measured = groups - startGroups;
  abort.abort();
  await serving;
  await trainer;
  const ideal = (opts.capGroups * opts.groupSize) / (opts.latencyMs / 1000);
  const rate = (measured * opts.groupSize) / seconds;
  return {
    poll_interval_ms: opts.pollMs,
    in_flight_groups: opts.capGroups,
    in_flight_rollouts: opts.capGroups * opts.groupSize,
    latency_ms: opts.latencyMs,
    ideal_rollouts_per_s: ideal,
    groups: measured,
    seconds,
    rollouts_per_s: rate,
    efficiency: rate / ideal,
    mean_sim_in_flight:
      inFlightSamples.reduce((a, b) => a + b, 0) / Math.max(1, inFlightSamples.length),
    submit_errors: submitErrors,
    worker_errors: workerErrors,
  };
}

async function main() {
  const started = Date.now();
  console.log("bench:envs — (a) CPU per rollout outside inference");
  const cpu = await measureCpu();
  console.table([cpu]);
  if (process.argv.includes("--cpu-only")) {
    console.log(JSON.stringify({ bench: "envs", cpu_per_rollout: cpu }));
    return;
  }

  console.log("bench:envs — (b) pipeline efficiency: serveEnv → npm run dev, simulator over HTTP");
  const LATENCY_MS = 100;
  const GROUP_SIZE_B = 4;
  const sim = await startSimulator({
    port: 0,
    seed: 3,
    latencyMs: LATENCY_MS,
    maxTokensDefault: 64,
  });
  const port = await freePort();
  const dev = await startDevProcess({
    port,
    persistTo: mkdtempSync(join(tmpdir(), "atropos-edge-bench-envs-")),
  });
  const pipeline: PipelineResult[] = [];
  try {
    // 5 groups × 4 = 20 rollouts in flight at 100 ms: the issue's ideal of 200 rollouts/s.
    // 20 groups (800 rollouts/s ideal) shows where this machine saturates.
    for (const capGroups of [5, 20]) {
      pipeline.push(
        await measurePipeline(
          dev.url,
          `bench-cap-${capGroups}`,
          sim.url,
          () => sim.stats().inFlight,
          {
            capGroups,
            groupSize: GROUP_SIZE_B,
            latencyMs: LATENCY_MS,
            pollMs: 100,
            warmupS: 4,
            measureS: 15,
          },
        ),
      );
    }
  } finally {
    await dev.stop();
    await sim.close();
  }
  console.table(pipeline);
  const result = {
    bench: "envs",
    date: new Date().toISOString(),
    node: process.version,
    nproc: cpus().length,
    cpu_model: cpus()[0]?.model ?? "unknown",
    cpu_per_rollout: cpu,
    pipeline,
    elapsed_s: (Date.now() - started) / 1000,
  };
  console.log(JSON.stringify(result));
}

await main();
process.exit(0);
