/**
 * `atropos-edge start`: the whole loop on one machine. Starts the dev server (the API), the
 * inference simulator unless --inference-url, registers the demo trainer, runs each env with the
 * Node runtime (serveEnv) against the local API — or, with --workers, on the Worker's own queue
 * path (an EnvFeeder Durable Object per env feeding queue-consumer invocations) — and lets the
 * demo trainer lease → check shapes / compute GRPO advantages → bump the policy version → ack,
 * until --steps or Ctrl-C.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { demoTrainStep } from "../client/demo-trainer";
import { type RunStats, TrainerClient } from "../client/trainer-client";
import type { FeederSummary } from "../env-workers/env-feeder";
import { type EnvDefinition, getEnvDefinition } from "../env-workers/registry";
import { RolloutApiClient } from "../env-workers/runtime/api-client";
import { nodeGetWithBody } from "../env-workers/runtime/node-get-with-body";
import { type ServeSummary, serveEnv } from "../env-workers/runtime/serve";
import { type DevProcess, PROJECT_ROOT, startDevProcess } from "./dev-process";
import { createEnv, type InferenceFlags, type InferenceHandle, openInference } from "./inference";
import { ProgressPrinter, progressLines, type TrainerProgress } from "./progress";

export interface StartOptions extends InferenceFlags {
  steps: number;
  port: number;
  envs: string;
  batchSize: number;
  maxTokenLen: number;
  /** Persisted state dir; empty → a fresh dir under .wrangler/ removed at exit. */
  persistTo?: string;
  leaseSeconds: number;
  /** Give up after this many seconds (0 = never). */
  maxSeconds: number;
  /** Run the envs as Worker env workers (EnvFeeder DO + queue consumers) instead of in Node. */
  workers?: boolean;
  /** The loaded `envs` (names or paths), in order; default: the built-ins named in `envs`. */
  envDefinitions?: EnvDefinition[];
  /** `env.*` config per env, in the same order. */
  envConfigs?: Record<string, unknown>[];
}

interface EnvRun {
  name: string;
  promise: Promise<ServeSummary | Error>;
  submitted: number;
  dropped: number;
  errors: string[];
  /** Set when serveEnv returned or failed. */
  finished: ServeSummary | Error | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An env running on the Worker's queue path, seen through its EnvFeeder's status endpoint. */
interface WorkerEnvRun {
  name: string;
  /** …/v1/runs/{run}/env-workers/{env}/0 */
  url: string;
  summary: FeederSummary | null;
  pollError: string | null;
}

const WORKER_INSTANCE = "0";
/** Give up on --workers when every env has failed this many items and none succeeded. */
const WORKER_FAILURES_BEFORE_GIVING_UP = 20;

/** The inference server as the Worker must reach it (the simulator listens on 127.0.0.1). */
function workerInference(options: StartOptions, inference: InferenceHandle) {
  const simulated = inference.simulator !== null;
  const serverType = simulated ? "vllm" : options.serverType;
  return {
    base_url: simulated ? `${inference.simulator!.url}/v1` : options.inferenceUrl!,
    server_type: serverType,
    // Token-in/token-out where the server has it; the simulator speaks vLLM's /generate.
    vllm_mode: "generate",
    model_name: options.model,
    tokenizer_name: options.tokenizer,
    api_key: options.apiKey ?? "",
  };
}

async function readJson<T>(res: Response, what: string): Promise<T> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

async function startWorkerEnv(
  apiUrl: string,
  run: string,
  name: string,
  config: Record<string, unknown>,
  inference: ReturnType<typeof workerInference>,
): Promise<WorkerEnvRun> {
  const base = `${apiUrl}/v1/runs/${encodeURIComponent(run)}/env-workers`;
  const res = await fetch(base, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ env: name, instance: WORKER_INSTANCE, config, inference: [inference] }),
  });
  const summary = await readJson<FeederSummary>(res, `starting env worker ${name}`);
  return {
    name,
    url: `${base}/${encodeURIComponent(name)}/${WORKER_INSTANCE}`,
    summary,
    pollError: null,
  };
}

async function pollWorkerEnv(env: WorkerEnvRun): Promise<void> {
  try {
    env.summary = await readJson<FeederSummary>(await fetch(env.url), `status of ${env.name}`);
    env.pollError = null;
  } catch (err) {
    env.pollError = err instanceof Error ? err.message : String(err);
  }
}

async function stopWorkerEnv(env: WorkerEnvRun): Promise<void> {
  const res = await fetch(`${env.url}/stop`, { method: "POST" });
  await res.arrayBuffer();
}

function feederLines(envs: WorkerEnvRun[]): string[] {
  return envs.map((e) => {
    const s = e.summary;
    if (!s)
      return `  worker ${e.name.padEnd(13)} no status yet${e.pollError ? ` (${e.pollError})` : ""}`;
    const error = s.last_error ? `  last error: ${s.last_error.slice(0, 80)}` : "";
    return `  worker ${e.name.padEnd(13)} ${s.status.padEnd(19)} in flight ${String(s.in_flight).padStart(3)}  issued ${s.issued}  ok ${s.succeeded}  failed ${s.failed}  dropped ${s.dropped}${error}`;
  });
}

/** Why the --workers run cannot make progress, or null while it still can. */
function workerEnvsFailure(envs: WorkerEnvRun[]): string | null {
  const hopeless = envs.every(
    (e) =>
      e.summary &&
      (e.summary.status === "stopped" ||
        (e.summary.succeeded === 0 && e.summary.failed >= WORKER_FAILURES_BEFORE_GIVING_UP)),
  );
  if (!hopeless) return null;
  return `every env worker failed or stopped: ${envs
    .map(
      (e) =>
        `${e.name}: ${e.summary?.status}, ${e.summary?.failed} failed${e.summary?.last_error ? ` (${e.summary.last_error})` : ""}`,
    )
    .join("; ")}`;
}

export async function runStart(
  options: StartOptions,
  out: NodeJS.WriteStream = process.stdout,
): Promise<number> {
  const defs =
    options.envDefinitions ??
    options.envs
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map((name) => getEnvDefinition(name));
  const envNames = defs.map((d) => d.name);
  const envConfigOf = (name: string) => options.envConfigs?.[envNames.indexOf(name)] ?? {};
  if (envNames.length === 0) throw new Error("--envs needs at least one env name");
  if (options.steps < 1) throw new Error("--steps must be at least 1");
  // Checked before anything starts (the dev server takes ~10 s to come up).
  for (const [i, name] of envNames.entries()) {
    const groupSize = Number(envConfigOf(name).group_size ?? defs[i]!.defaultConfig.group_size);
    if (groupSize > options.batchSize) {
      throw new Error(
        `${name}: group_size ${groupSize} > --batch-size ${options.batchSize}; raise --batch-size`,
      );
    }
  }

  const fresh = !options.persistTo;
  const stateDir = options.persistTo
    ? resolve(options.persistTo)
    : (() => {
        mkdirSync(join(PROJECT_ROOT, ".wrangler"), { recursive: true });
        return mkdtempSync(join(PROJECT_ROOT, ".wrangler", "start-"));
      })();

  let stopRequested = false;
  const onSignal = () => {
    stopRequested = true;
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  const abort = new AbortController();
  let dev: DevProcess | null = null;
  let inference: InferenceHandle | null = null;
  const envRuns: EnvRun[] = [];
  const workerEnvs: WorkerEnvRun[] = [];
  const workersMode = options.workers === true;
  let stats: RunStats | null = null;
  const launched = Date.now();
  let started = launched;
  const progress: TrainerProgress = {
    step: 0,
    targetSteps: options.steps,
    elapsedS: 0,
    batches: 0,
    sequences: 0,
    meanScore: null,
    staleness: null,
    lastReason: null,
    problems: 0,
  };
  let scoreSum = 0;
  let exitCode = 0;
  let failure: string | null = null;
  // Set once the envs and the trainer loop run: before that a failure has no summary to show.
  let loopStarted = false;
  let timer: NodeJS.Timeout | null = null;
  const printer = new ProgressPrinter(out);

  try {
    // Inference first: an unreachable endpoint fails in a second, not after the dev server starts.
    inference = await openInference(options);
    out.write(`starting the dev server on 127.0.0.1:${options.port} (state: ${stateDir})…\n`);
    dev = await startDevProcess({ port: options.port, persistTo: stateDir });
    out.write(
      `API ${dev.url} (dashboard ${dev.url}/dashboard/) · ${inference.describe} · envs ${envNames.join(", ")}${workersMode ? " on the Worker's queue path" : " in Node"}\n`,
    );

    const trainer = new TrainerClient({ url: dev.url });
    await trainer.register({
      batch_size: options.batchSize,
      max_token_len: options.maxTokenLen,
      num_steps: options.steps,
    });

    for (const name of workersMode ? envNames : []) {
      workerEnvs.push(
        await startWorkerEnv(
          dev.url,
          trainer.run,
          name,
          { ...envConfigOf(name), max_token_length: options.maxTokenLen },
          workerInference(options, inference),
        ),
      );
    }

    for (const name of workersMode ? [] : envNames) {
      const env = await createEnv(
        defs[envNames.indexOf(name)]!,
        {
          ...envConfigOf(name),
          total_steps: -1,
          rollout_server_url: dev.url,
          max_token_length: options.maxTokenLen,
        },
        inference,
        options.tokenizer,
      );
      const api = new RolloutApiClient({ url: dev.url, getWithBody: nodeGetWithBody });
      const run: EnvRun = {
        name,
        promise: Promise.resolve(new Error("unset")),
        submitted: 0,
        dropped: 0,
        errors: [],
        finished: null,
      };
      run.promise = serveEnv(env, api, {
        signal: abort.signal,
        pollIntervalMs: 150,
        registerPollMs: 250,
        onEvent: (e) => {
          if (e.type === "submitted" && e.ok) run.submitted += e.groups;
          if (e.type === "dropped") run.dropped++;
          if (e.type === "worker_error" && run.errors.length < 5) run.errors.push(e.message);
        },
      })
        .catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))))
        .then((result) => {
          run.finished = result;
          return result;
        });
      envRuns.push(run);
    }

    // Rates count from here, not from the wrangler startup.
    started = Date.now();
    loopStarted = true;
    let polling = false;
    timer = setInterval(() => {
      progress.elapsedS = (Date.now() - started) / 1000;
      printer.draw([...progressLines(progress, stats), ...feederLines(workerEnvs)]);
      if (polling) return;
      polling = true;
      Promise.allSettled([
        trainer.stats().then((s) => {
          stats = s;
        }),
        ...workerEnvs.map(pollWorkerEnv),
      ]).finally(() => {
        polling = false;
      });
    }, 1000);

    let policyVersion = 0;
    while (!stopRequested && progress.step < options.steps) {
      if (options.maxSeconds > 0 && Date.now() - started > options.maxSeconds * 1000) {
        failure = `gave up after --max-seconds ${options.maxSeconds} (last reason: ${progress.lastReason ?? "none"})`;
        break;
      }
      const workersFailure = workersMode ? workerEnvsFailure(workerEnvs) : null;
      if (workersFailure) {
        failure = workersFailure;
        break;
      }
      if (!workersMode && envRuns.every((r) => r.finished instanceof Error)) {
        failure = `every env failed: ${envRuns.map((r) => `${r.name}: ${(r.finished as Error).message}`).join("; ")}`;
        break;
      }
      const leased = await trainer.lease({ leaseSeconds: options.leaseSeconds });
      if (!leased.batch) {
        progress.lastReason = leased.reason;
        await sleep(100);
        continue;
      }
      progress.lastReason = null;
      const batch = leased.batch;
      const result = demoTrainStep(batch.groups);
      const stale = batch.manifest.map((g) => policyVersion - g.policy_version);
      progress.staleness = stale.length
        ? { mean: stale.reduce((a, b) => a + b, 0) / stale.length, max: Math.max(...stale) }
        : null;
      policyVersion++;
      await trainer.setPolicyVersion(policyVersion);
      await trainer.ack(batch);
      progress.step++;
      progress.batches++;
      progress.sequences += result.sequences;
      progress.problems += result.problems.length;
      scoreSum += result.meanScore * result.sequences;
      progress.meanScore = progress.sequences ? scoreSum / progress.sequences : null;
    }
    progress.elapsedS = (Date.now() - started) / 1000;
    if (timer) clearInterval(timer);
    timer = null;
    if (workersMode) {
      await Promise.allSettled([
        ...workerEnvs.map(pollWorkerEnv),
        trainer.stats().then((s) => {
          stats = s;
        }),
      ]);
    }
    printer.draw([...progressLines(progress, stats), ...feederLines(workerEnvs)]);
    printer.release();
  } catch (err) {
    failure = err instanceof Error ? err.message : String(err);
  } finally {
    if (timer) clearInterval(timer);
    abort.abort();
    // Stop the feeders while the API is still up; their final counts go into the summary.
    await Promise.allSettled(
      workerEnvs.map(async (e) => {
        await stopWorkerEnv(e);
        await pollWorkerEnv(e);
      }),
    );
    await Promise.race([Promise.allSettled(envRuns.map((r) => r.promise)), sleep(5000)]);
    await inference?.close().catch(() => {});
    await dev?.stop().catch(() => {});
    if (fresh) rmSync(stateDir, { recursive: true, force: true });
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }

  const elapsed = (Date.now() - started) / 1000;
  const total = (Date.now() - launched) / 1000;
  const lines = [
    "",
    "── atropos-edge start: summary ──",
    `steps trained     ${progress.step}/${options.steps}${stopRequested ? " (stopped by signal)" : ""}`,
    `elapsed           ${elapsed.toFixed(1)} s training, ${total.toFixed(1)} s total`,
    `batches/s         ${(progress.batches / Math.max(elapsed, 1e-9)).toFixed(2)}`,
    `rollouts trained  ${progress.sequences} (${(progress.sequences / Math.max(elapsed, 1e-9)).toFixed(1)}/s)`,
    `mean score        ${progress.meanScore === null ? "–" : progress.meanScore.toFixed(3)}`,
    `shape problems    ${progress.problems}`,
    ...envRuns.map(
      (r) =>
        `env ${r.name.padEnd(18)} submitted ${r.submitted} groups, dropped ${r.dropped}${r.errors.length ? `, errors e.g. ${r.errors[0]}` : ""}`,
    ),
    ...workerEnvs.map((e) => {
      const s = e.summary;
      if (!s) return `env ${e.name.padEnd(18)} (worker) no status: ${e.pollError ?? "unknown"}`;
      // D1 is the record of what was submitted; the feeder's counts are per item.
      const finalStats = stats as RunStats | null;
      const groups = finalStats?.envs.find((x) => x.env_id === s.env_id)?.groups_submitted ?? 0;
      return `env ${e.name.padEnd(18)} submitted ${groups} groups via the Worker (items issued ${s.issued}, ok ${s.succeeded}, failed ${s.failed}, dropped ${s.dropped}; ${s.status})${s.last_error ? `, last error ${s.last_error}` : ""}`;
    }),
  ];
  if (failure && !loopStarted) lines.splice(1);
  if (failure) {
    lines.push(`FAILED: ${failure}`);
    if (dev && /wrangler|API|fetch/i.test(failure)) lines.push(dev.logs().slice(-2000));
    exitCode = 1;
  } else if (progress.problems > 0) {
    lines.push("some batches had shape problems (see above)");
  }
  out.write(`${lines.join("\n")}\n`);
  return exitCode;
}
