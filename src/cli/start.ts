/**
 * `atropos-edge start`: the whole loop on one machine. Starts the dev server (the API), the
 * inference simulator unless --inference-url, registers the demo trainer, runs each env with the
 * Node runtime (serveEnv) against the local API — or, with --workers, on the Worker's own queue
 * path (an EnvFeeder Durable Object per env feeding queue-consumer invocations) — and lets the
 * demo trainer lease → check shapes / compute GRPO advantages → bump the policy version → ack,
 * until --steps or Ctrl-C. This file composes the parts: the env runners (start-node-envs.ts,
 * start-worker-envs.ts), the trainer (start-trainer.ts) and the progress view (start-progress.ts).
 */
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { TrainerClient } from "../client/trainer-client";
import { errorMessage } from "../core/errors";
import type { EnvDefinition } from "../env-sdk/define-env";
import { getEnvDefinition } from "../envs/index";
import { MAX_REGISTRATIONS } from "../sim/policy";
import { ToyPolicyTrainer } from "./demo-trainer";
import { type DevProcess, projectRoot, startDevProcess } from "./dev-process";
import { FailureAccount, failurePolicy } from "./failure-account";
import { createEnv, type InferenceFlags, type InferenceHandle, openInference } from "./inference";
import { LearningRecorder, riseLines, writeLearningSummary } from "./learning-summary";
import { registerItemsAhead } from "./simulated-env";
import { type EnvRun, startNodeEnv } from "./start-node-envs";
import { StartProgress } from "./start-progress";
import { openStateDir } from "./start-state";
import { runDemoTrainer, runTrainerCommand } from "./start-trainer";
import { WorkerEnvs, workerInference, writeWorkerEntry } from "./start-worker-envs";
import type { FinishedRun } from "./train-output";

export {
  MAX_PERMANENT_FAILURES_IN_A_ROW,
  permanentFailureStop,
} from "./start-node-envs";
export { newBackoffReport, type WorkerEnvRun } from "./start-worker-envs";

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

/** Gradient step size of the toy policy (see docs/BENCHMARKS.md for the curves it gives). */
export const DEFAULT_LEARNING_RATE = 0.3;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The env definitions of a run: the loaded ones, or the built-ins that `envs` names. */
function envDefinitionsOf(options: StartOptions): EnvDefinition[] {
  return (
    options.envDefinitions ??
    options.envs
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map((name) => getEnvDefinition(name))
  );
}

export async function runStart(
  options: StartOptions,
  out: NodeJS.WriteStream = process.stdout,
): Promise<number> {
  const defs = envDefinitionsOf(options);
  const envNames = defs.map((d) => d.name);
  let envConfigs = options.envConfigs;
  const envConfigOf = (name: string) => envConfigs?.[envNames.indexOf(name)] ?? {};
  const defOf = (name: string) => defs[envNames.indexOf(name)]!;
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
  let workerEnvs: WorkerEnvs | null = null;
  const workersMode = options.workers === true;
  let trainer: TrainerClient | null = null;
  const launched = Date.now();
  let started = launched;
  const failures = new FailureAccount();
  let view = new StartProgress(out, options.steps, envRuns, null, (n) => failures.counts(n).items);
  let exitCode = 0;
  let failure: string | null = null;
  // Set once the envs and the trainer loop run: before that a failure has no summary to show.
  let loopStarted = false;
  const learning = new LearningRecorder(() => view.progress.step + 1);
  let policyTrainer: ToyPolicyTrainer | null = null;
  const policy = { version: 0 };

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
    dev = await startDevProcess({
      port: options.port,
      persistTo: stateDir,
      entry,
      env: devEnv,
      onProgress: (line) => out.write(`  ${line}\n`),
    });
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

    if (workersMode) {
      workerEnvs = WorkerEnvs.connect(dev.url, trainer.run);
      view = new StartProgress(
        out,
        options.steps,
        envRuns,
        workerEnvs,
        (n) => failures.counts(n).items,
      );
    }
    for (const name of workerEnvs ? envNames : []) {
      const config = { ...envConfigOf(name), max_token_length: options.maxTokenLen };
      const sim = inference.simulator;
      if (sim) {
        const mirror = await createEnv(defOf(name), config, inference, options.tokenizer);
        const ahead = Math.floor(MAX_REGISTRATIONS / envNames.length);
        await registerItemsAhead(mirror, defOf(name), sim.policy, ahead);
      }
      await workerEnvs!.start(name, config, workerInference(options, inference));
    }
    for (const name of workerEnvs ? [] : envNames) {
      envRuns.push(
        await startNodeEnv({
          def: defOf(name),
          config: envConfigOf(name),
          apiUrl: dev.url,
          maxTokenLen: options.maxTokenLen,
          inference,
          tokenizer: options.tokenizer,
          signal: abort.signal,
          failures,
          learning,
          write: (text) => out.write(text),
        }),
      );
    }

    // Rates count from here, not from the wrangler startup.
    started = Date.now();
    loopStarted = true;
    // One block at once, with the feeders' first status: a short run may end before the timer.
    await workerEnvs?.pollAll();
    view.draw();
    view.startTicker(started, trainer, learning);

    if (options.trainerCommand) {
      const result = await runTrainerCommand(
        options.trainerCommand,
        { ...options.trainerEnv, ATROPOS_EDGE_API_URL: dev.url },
        () => stopRequested,
        options.maxSeconds,
      );
      if (result.failure) failure = result.failure;
      else out.write(`\ntrainer command exited with code 0\n`);
    } else {
      failure = await runDemoTrainer({
        trainer,
        view,
        learning,
        policyTrainer,
        policy,
        workerEnvs,
        envRuns,
        steps: options.steps,
        maxSeconds: options.maxSeconds,
        leaseSeconds: options.leaseSeconds,
        started,
        stopRequested: () => stopRequested,
      });
    }
  } catch (err) {
    failure = errorMessage(err);
  } finally {
    if (loopStarted) view.progress.elapsedS = (Date.now() - started) / 1000;
    view.stopTicker();
    abort.abort();
    // Stop the envs while the API is still up, then take one last snapshot: the final progress
    // block and the summary both show it, so their counts agree.
    await workerEnvs?.stopAll();
    await Promise.race([Promise.allSettled(envRuns.map((r) => r.promise)), sleep(5000)]);
    if (loopStarted && trainer) {
      await view.finalDraw(trainer);
      if (options.onFinished && dev) {
        const finished = {
          apiUrl: dev.url,
          run: trainer.run,
          policyWeights: policyTrainer?.weights ?? null,
        };
        const lines = await options.onFinished(finished).catch((err: unknown) => {
          failure ??= `writing the run's outputs: ${errorMessage(err)}`;
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

  for (const e of workerEnvs?.runs ?? []) failures.setFeederCounts(e.name, e.summary);
  if (!failure && loopStarted) failure = failures.verdict(failurePolicy(options));
  const curve = learning.summary(
    envNames,
    view.progress.step,
    { announced: policy.version, simulator: inference?.simulator?.policy.version ?? null },
    policyTrainer ? (options.learningRate ?? DEFAULT_LEARNING_RATE) : 0,
  );
  const lines = view.summary({
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
  } else if (view.progress.problems > 0) {
    lines.push("some batches had shape problems (see above)");
  }
  out.write(`${lines.join("\n")}\n`);
  if (options.summaryJson && loopStarted) writeLearningSummary(options.summaryJson, curve);
  return exitCode;
}
