/**
 * `atropos-edge start`: the whole loop on one machine. Starts the dev server (the API), the
 * inference simulator unless --inference-url, registers the demo trainer, runs each env with the
 * Node runtime (serveEnv) against the local API — or, with --workers, on the Worker's own queue
 * path (an EnvFeeder Durable Object per env feeding queue-consumer invocations) — and lets the
 * demo trainer lease → check shapes / compute GRPO advantages → bump the policy version → ack,
 * until --steps or Ctrl-C.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type RunStats, TrainerClient } from "../client/trainer-client";
import type { EnvDefinition } from "../env-workers/define-env";
import { RolloutApiClient } from "../env-workers/runtime/api-client";
import { nodeGetWithBody } from "../env-workers/runtime/node-get-with-body";
import { type ServeSummary, serveEnv } from "../env-workers/runtime/serve";
import { getEnvDefinition } from "../envs/index";
import { MAX_REGISTRATIONS } from "../sim/policy";
import type { FeederSummary } from "../worker/env-feeder";
import { demoTrainStep, ToyPolicyTrainer } from "./demo-trainer";
import { type DevProcess, PROJECT_ROOT, projectRoot, startDevProcess } from "./dev-process";
import { FailureAccount, failurePolicy } from "./failure-account";
import { createEnv, type InferenceFlags, type InferenceHandle, openInference } from "./inference";
import { LearningRecorder, riseLines, writeLearningSummary } from "./learning-summary";
import {
  type EnvActivity,
  envCounts,
  ProgressPrinter,
  progressLines,
  RecentMean,
  summaryLines,
  type TrainerProgress,
} from "./progress";
import { registerItemsAhead } from "./simulated-env";
import { openStateDir } from "./start-state";
import type { FinishedRun } from "./train-output";

export interface StartOptions extends InferenceFlags {
  /** The command the summary names (default: start). */
  command?: string;
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
  /** Step size of the toy policy's gradient steps (simulator only; 0 = weights never move). */
  learningRate?: number;
  /** Write the per-step learning curve here (see docs/CLI.md). */
  summaryJson?: string;
  /** The loaded `envs` (names or paths), in order; default: the built-ins named in `envs`. */
  envDefinitions?: EnvDefinition[];
  /** Where each env came from, in the same order: a module path, or null for a built-in. */
  envModules?: (string | null)[];
  /** `env.*` config per env, in the same order. */
  envConfigs?: Record<string, unknown>[];
  /**
   * Final env configs once inference is up (e.g. judges on the simulator, fitted calibrations);
   * replaces envConfigs. Lines it returns are printed.
   */
  prepareEnvConfigs?: (
    inference: InferenceHandle,
  ) => Promise<{ envConfigs: Record<string, unknown>[]; lines: string[] }>;
  /**
   * Train with this shell command instead of the demo trainer: it gets ATROPOS_EDGE_API_URL (and
   * `trainerEnv`), registers and leases itself, and `start` ends when it exits (its exit code).
   */
  trainerCommand?: string;
  trainerEnv?: Record<string, string>;
  /** Once the run is over, while the API still answers (train --output); lines it returns are printed. */
  onFinished?: (run: FinishedRun) => Promise<string[]>;
  /** Fail the run when more than this share of an env's items fail (default 0.1). */
  maxFailureRate?: number;
  /** Succeed however many items fail (the summary still counts them). */
  allowFailures?: boolean;
}

interface EnvRun {
  name: string;
  envId: number | null;
  promise: Promise<ServeSummary | Error>;
  dropped: number;
  errors: string[];
  /** Items that failed with an error (the env's code or an unreachable server). */
  failed: number;
  /** Permanent failures since the last item that produced or dropped a group. */
  permanentInARow: number;
  /** Set when serveEnv returned or failed. */
  finished: ServeSummary | Error | null;
}

/**
 * Permanent failures in a row (bugs in the env's code: no group, no drop in between) after which
 * start stops instead of failing every item for as long as it runs.
 */
export const MAX_PERMANENT_FAILURES_IN_A_ROW = 20;

/** Why an env must stop `start`, or null: the same bug failing item after item. */
export function permanentFailureStop(run: {
  name: string;
  permanentInARow: number;
  errors: string[];
}): string | null {
  if (run.permanentInARow < MAX_PERMANENT_FAILURES_IN_A_ROW) return null;
  return `${run.name}: ${run.permanentInARow} items in a row failed with an error in the env's code (last: ${run.errors.at(-1) ?? "unknown"}); fix the env and start again (docs/WRITING_ENVS.md lists how errors are classed)`;
}

/** Gradient step size of the toy policy (see docs/BENCHMARKS.md for the curves it gives). */
export const DEFAULT_LEARNING_RATE = 0.3;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An env running on the Worker's queue path, seen through its EnvFeeder's status endpoint. */
export interface WorkerEnvRun {
  name: string;
  /** …/v1/runs/{run}/env-workers/{env}/0 */
  url: string;
  summary: FeederSummary | null;
  pollError: string | null;
  /** reported_at of the feeder's back-off reason last printed. */
  backoffPrinted?: number;
  /** The feeder's dropped + rejected count already passed to the learning curve. */
  dropsRecorded?: number;
}

/** The feeder's back-off reason when it is a new report (every 10 s while it lasts), else null. */
export function newBackoffReport(env: WorkerEnvRun): string | null {
  const backingOff = env.summary?.backing_off;
  if (!backingOff || backingOff.reported_at === env.backoffPrinted) return null;
  env.backoffPrinted = backingOff.reported_at;
  return `${env.name}: ${backingOff.message}`;
}

const WORKER_INSTANCE = "0";
/** Give up on --workers when every env has failed this many items and none succeeded. */
const WORKER_FAILURES_BEFORE_GIVING_UP = 20;

/**
 * The inference server as the Worker must reach it (the simulator listens on 127.0.0.1), with
 * the same --server-type as the Node side (the simulator answers every type).
 */
function workerInference(options: StartOptions, inference: InferenceHandle) {
  return {
    base_url: inference.baseUrl,
    server_type: options.serverType,
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

/**
 * A Worker entry registering exactly the envs of this run, for `--workers` with envs given by
 * path: the project's own entry may not know them. Bindings stay the project's wrangler config.
 */
function writeWorkerEntry(
  stateDir: string,
  envNames: string[],
  modules: (string | null)[],
): string {
  const file = join(stateDir, "worker-entry.ts");
  const imports = modules.map((m, i) =>
    m === null ? "" : `import env${i} from ${JSON.stringify(resolve(m))};\n`,
  );
  const envs = modules.map((m, i) =>
    m === null ? `builtinEnvs.get(${JSON.stringify(envNames[i])})` : `env${i}`,
  );
  writeFileSync(
    file,
    `// Written by atropos-edge start --workers: the envs of this run on the package's factory.
import { builtinEnvs } from ${JSON.stringify(join(PROJECT_ROOT, "src", "envs", "index.ts"))};
import { createWorker } from ${JSON.stringify(join(PROJECT_ROOT, "src", "sdk", "worker.ts"))};
${imports.join("")}
const worker = createWorker({ envs: [${envs.join(", ")}] });
export const { RunCoordinator, EnvSession, EnvFeeder } = worker.durableObjects;
export default worker.handler;
`,
  );
  return file;
}

async function startWorkerEnv(
  apiUrl: string,
  run: string,
  name: string,
  config: Record<string, unknown>,
  inference: ReturnType<typeof workerInference>,
): Promise<WorkerEnvRun> {
  const runBase = `${apiUrl}/v1/runs/${encodeURIComponent(run)}`;
  const base = `${runBase}/env-workers`;
  // A key never travels in queue messages: the run stores the server (key sealed) and the env
  // worker refers to the run's servers.
  if (inference.api_key) {
    await readJson(
      await fetch(`${runBase}/inference`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify([inference]),
      }),
      "storing the run's inference server",
    );
  }
  const res = await fetch(base, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      env: name,
      instance: WORKER_INSTANCE,
      config,
      inference: inference.api_key ? "run" : [inference],
    }),
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

/** Runs the trainer command in the foreground; a failure when it exits non-zero or overruns. */
async function runTrainerCommand(
  command: string,
  env: Record<string, string>,
  stopRequested: () => boolean,
  maxSeconds: number,
): Promise<{ failure: string | null }> {
  const child = spawn(command, {
    shell: true,
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, ...env },
  });
  const exited = new Promise<number | null>((done) => {
    child.on("exit", (code) => done(code));
    child.on("error", () => done(127));
  });
  const started = Date.now();
  for (;;) {
    const code = await Promise.race([exited, sleep(250).then(() => undefined)]);
    if (code !== undefined) {
      return { failure: code === 0 ? null : `trainer command exited with code ${code}` };
    }
    const overran = maxSeconds > 0 && Date.now() - started > maxSeconds * 1000;
    if (stopRequested() || overran) {
      child.kill("SIGTERM");
      await exited;
      return {
        failure: overran ? `trainer command still running after --max-seconds ${maxSeconds}` : null,
      };
    }
  }
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
  let envConfigs = options.envConfigs;
  const envConfigOf = (name: string) => envConfigs?.[envNames.indexOf(name)] ?? {};
  if (envNames.length === 0) throw new Error("--envs needs at least one env name");
  if (options.steps < 1) throw new Error("--steps must be at least 1");
  const lr = options.learningRate ?? DEFAULT_LEARNING_RATE;
  if (!Number.isFinite(lr) || lr < 0)
    throw new Error("--learning-rate must be a number ≥ 0 (0 keeps the weights fixed)");
  // Checked before anything starts (the dev server takes ~10 s to come up).
  for (const [i, name] of envNames.entries()) {
    const groupSize = Number(envConfigOf(name).group_size ?? defs[i]!.defaultConfig.group_size);
    if (groupSize > options.batchSize) {
      throw new Error(
        `${name}: group_size ${groupSize} > --batch-size ${options.batchSize}; raise --batch-size`,
      );
    }
  }

  const state = openStateDir(options.persistTo, projectRoot());
  const stateDir = state.dir;

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
  let trainer: TrainerClient | null = null;
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
  const recent = new RecentMean();
  const failures = new FailureAccount();
  let exitCode = 0;
  let failure: string | null = null;
  // Set once the envs and the trainer loop run: before that a failure has no summary to show.
  let loopStarted = false;
  let timer: NodeJS.Timeout | null = null;
  const printer = new ProgressPrinter(out);
  const activity = (): EnvActivity[] => [
    ...envRuns.map((r) => ({
      name: r.name,
      envId: r.envId,
      droppedBeforeSend: r.dropped,
      failed: r.failed,
      finishedItems: failures.counts(r.name).items,
      errors: r.errors,
    })),
    ...workerEnvs.map((e) => ({
      name: e.name,
      envId: e.summary?.env_id ?? null,
      feeder: e.summary,
      pollError: e.pollError,
    })),
  ];
  const block = () => progressLines(progress, envCounts(activity(), stats));
  const learning = new LearningRecorder(() => progress.step + 1);
  let policyTrainer: ToyPolicyTrainer | null = null;
  let policyVersion = 0;

  try {
    // Inference first: an unreachable endpoint fails in a second, not after the dev server starts.
    inference = await openInference(options);
    if (options.prepareEnvConfigs) {
      const prepared = await options.prepareEnvConfigs(inference);
      envConfigs = prepared.envConfigs;
      for (const line of prepared.lines) out.write(`${line}\n`);
    }
    if (inference.simulator && !options.trainerCommand) {
      const sim = inference.simulator;
      policyTrainer = new ToyPolicyTrainer({
        simulatorUrl: sim.url,
        lookup: sim.policy,
        learningRate: options.learningRate ?? DEFAULT_LEARNING_RATE,
        weightsDir: mkdtempSync(join(stateDir, "weights-")),
      });
    }
    out.write(`starting the dev server on 127.0.0.1:${options.port} (state: ${stateDir})…\n`);
    const entry =
      workersMode && options.envModules?.some((m) => m !== null)
        ? writeWorkerEntry(stateDir, envNames, options.envModules)
        : undefined;
    // start's own clients send no token: its private loopback server stays open whatever
    // API_TOKEN the shell exports (dev.mjs would otherwise read it).
    const devEnv = { ...process.env };
    delete devEnv.API_TOKEN;
    dev = await startDevProcess({ port: options.port, persistTo: stateDir, entry, env: devEnv });
    out.write(
      `API ${dev.url} (dashboard ${dev.url}/dashboard/) · ${inference.describe} · envs ${envNames.join(", ")}${workersMode ? " on the Worker's queue path" : " in Node"}\n`,
    );

    if (workersMode && options.summaryJson) {
      out.write(
        "note: with --workers, --summary-json counts the rollouts of the groups that reach a batch (a dropped group's scores stay in the Worker; dropped_groups come from the env workers): run without --workers for accuracy over every rollout\n",
      );
    }
    trainer = new TrainerClient({ url: dev.url });
    // A trainer command registers itself, as Atropos trainers do.
    if (!options.trainerCommand) {
      await trainer.register({
        batch_size: options.batchSize,
        max_token_len: options.maxTokenLen,
        num_steps: options.steps,
      });
    }

    for (const name of workersMode ? envNames : []) {
      const sim = inference.simulator;
      if (sim) {
        const def = defs[envNames.indexOf(name)]!;
        const mirror = await createEnv(
          def,
          { ...envConfigOf(name), max_token_length: options.maxTokenLen },
          inference,
          options.tokenizer,
        );
        const ahead = Math.floor(MAX_REGISTRATIONS / envNames.length);
        await registerItemsAhead(mirror, def, sim.policy, ahead);
      }
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
          // The local loop's dashboard shows rollouts as text (the env config may turn it off).
          include_token_texts: true,
          ...envConfigOf(name),
          total_steps: -1,
          rollout_server_url: dev.url,
          max_token_length: options.maxTokenLen,
        },
        inference,
        options.tokenizer,
        { onGroups: (scores) => learning.groups(name, scores) },
      );
      const api = new RolloutApiClient({ url: dev.url, getWithBody: nodeGetWithBody });
      const run: EnvRun = {
        name,
        envId: null,
        promise: Promise.resolve(new Error("unset")),
        dropped: 0,
        errors: [],
        failed: 0,
        permanentInARow: 0,
        finished: null,
      };
      run.promise = serveEnv(env, api, {
        signal: abort.signal,
        pollIntervalMs: 150,
        registerPollMs: 250,
        onEvent: (e) => {
          if (e.type === "registered") run.envId = e.envId;
          if (e.type === "dropped") {
            run.dropped++;
            learning.dropped(name);
          }
          if (e.type === "submitted" || e.type === "dropped") run.permanentInARow = 0;
          if (e.type === "item" && e.outcome === "ran") failures.ran(name);
          if (e.type === "worker_error" && e.errorClass !== undefined) {
            failures.failed(name, e.message, e.error);
            run.failed++;
            if (e.errorClass === "permanent") run.permanentInARow++;
          }
          if (e.type === "worker_error") {
            run.errors.push(e.message);
            if (run.errors.length > 5) run.errors.shift();
          }
          if (e.type === "backing_off") out.write(`\n${name}: ${e.message}\n`);
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
    // One block at once, with the feeders' first status: a short run may end before the timer.
    if (workersMode) await Promise.allSettled(workerEnvs.map(pollWorkerEnv));
    printer.draw(block());
    let polling = false;
    timer = setInterval(() => {
      progress.elapsedS = (Date.now() - started) / 1000;
      printer.draw(block());
      if (polling) return;
      polling = true;
      Promise.allSettled([
        trainer!.stats().then((s) => {
          stats = s;
        }),
        ...workerEnvs.map(pollWorkerEnv),
      ]).finally(() => {
        polling = false;
        for (const e of workerEnvs) {
          const line = newBackoffReport(e);
          if (line) out.write(`\n${line}\n`);
          // The feeder counts drops per item report: they go to the step in progress.
          const drops = (e.summary?.dropped ?? 0) + (e.summary?.rejected ?? 0);
          for (let i = e.dropsRecorded ?? 0; i < drops; i++) learning.dropped(e.name);
          e.dropsRecorded = Math.max(e.dropsRecorded ?? 0, drops);
        }
      });
    }, 1000);

    if (options.trainerCommand) {
      const result = await runTrainerCommand(
        options.trainerCommand,
        {
          ...options.trainerEnv,
          ATROPOS_EDGE_API_URL: dev.url,
        },
        () => stopRequested,
        options.maxSeconds,
      );
      if (result.failure) failure = result.failure;
      else out.write(`\ntrainer command exited with code 0\n`);
    }
    while (!options.trainerCommand && !stopRequested && progress.step < options.steps) {
      if (options.maxSeconds > 0 && Date.now() - started > options.maxSeconds * 1000) {
        failure = `gave up after --max-seconds ${options.maxSeconds} (last reason: ${progress.lastReason ?? "none"})`;
        break;
      }
      const workersFailure = workersMode ? workerEnvsFailure(workerEnvs) : null;
      if (workersFailure) {
        failure = workersFailure;
        break;
      }
      const broken = workersMode ? null : envRuns.map(permanentFailureStop).find((m) => m !== null);
      if (broken) {
        failure = broken;
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
      learning.stepStaleness(progress.step + 1, stale);
      if (workersMode) {
        // The feeders' env ids come with their status polls: a batch leased before the first
        // poll answered would otherwise be left out of the curve.
        const known = (id: number | null) => workerEnvs.some((e) => e.summary?.env_id === id);
        if (batch.manifest.some((g) => !known(g.env_id))) {
          await Promise.allSettled(workerEnvs.map(pollWorkerEnv));
        }
        // Worker envs' groups are scored in workerd: the curve sees those that reach a batch.
        batch.manifest.forEach((g, i) => {
          const env = workerEnvs.find((e) => e.summary?.env_id === g.env_id);
          const scores = batch.groups[i]?.scores;
          if (env && scores) learning.groups(env.name, [scores]);
        });
      }
      policyTrainer?.step(batch.groups);
      policyVersion++;
      if (policyTrainer) {
        await policyTrainer.push(policyVersion);
        learning.pushes++;
      }
      // This trainer counts from 0: the run may remember a higher version from an earlier start.
      await trainer.setPolicyVersion(policyVersion, { reset: policyVersion === 1 });
      await trainer.ack(batch);
      progress.step++;
      progress.batches++;
      progress.sequences += result.sequences;
      progress.problems += result.problems.length;
      scoreSum += result.meanScore * result.sequences;
      progress.meanScore = progress.sequences ? scoreSum / progress.sequences : null;
      progress.recentMeanScore = recent.add(result.meanScore, result.sequences);
    }
  } catch (err) {
    failure = err instanceof Error ? err.message : String(err);
  } finally {
    if (loopStarted) progress.elapsedS = (Date.now() - started) / 1000;
    if (timer) clearInterval(timer);
    abort.abort();
    // Stop the envs while the API is still up, then take one last snapshot: the final progress
    // block and the summary both show it, so their counts agree.
    await Promise.allSettled(
      workerEnvs.map(async (e) => {
        await stopWorkerEnv(e);
        await pollWorkerEnv(e);
      }),
    );
    await Promise.race([Promise.allSettled(envRuns.map((r) => r.promise)), sleep(5000)]);
    if (loopStarted && trainer) {
      stats = await trainer.stats().catch(() => stats);
      printer.draw(block());
      printer.release();
      if (options.onFinished && dev) {
        const finished = {
          apiUrl: dev.url,
          run: trainer.run,
          policyWeights: policyTrainer?.weights ?? null,
        };
        const lines = await options.onFinished(finished).catch((err: unknown) => {
          failure ??= `writing the run's outputs: ${err instanceof Error ? err.message : String(err)}`;
          return [];
        });
        for (const line of lines) out.write(`${line}\n`);
      }
    }
    await inference?.close().catch(() => {});
    await dev?.stop().catch(() => {});
    state.release();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }

  for (const e of workerEnvs) failures.setFeederCounts(e.name, e.summary);
  if (!failure && loopStarted) failure = failures.verdict(failurePolicy(options));
  const curve = learning.summary(
    envNames,
    progress.step,
    { announced: policyVersion, simulator: inference?.simulator?.policy.version ?? null },
    policyTrainer ? (options.learningRate ?? DEFAULT_LEARNING_RATE) : 0,
  );
  const lines = summaryLines(progress, envCounts(activity(), stats), {
    command: options.command ?? "start",
    stopped: stopRequested,
    totalS: (Date.now() - launched) / 1000,
  });
  lines.push(...riseLines(curve));
  if (failure && !loopStarted) lines.splice(1);
  if (failure) {
    lines.push(`FAILED: ${failure}`);
    if (dev && /wrangler|API|fetch/i.test(failure)) lines.push(dev.logs().slice(-2000));
    exitCode = 1;
  } else if (progress.problems > 0) {
    lines.push("some batches had shape problems (see above)");
  }
  out.write(`${lines.join("\n")}\n`);
  if (options.summaryJson && loopStarted) writeLearningSummary(options.summaryJson, curve);
  return exitCode;
}
