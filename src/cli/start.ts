/**
 * `atropos-edge start`: the whole loop on one machine. Starts `wrangler dev` (the API), the
 * inference simulator unless --inference-url, registers the demo trainer, runs each env with the
 * Node runtime (serveEnv) against the local API, and lets the demo trainer lease → check shapes /
 * compute GRPO advantages → bump the policy version → ack, until --steps or Ctrl-C.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { demoTrainStep } from "../client/demo-trainer";
import { type RunStats, TrainerClient } from "../client/trainer-client";
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

export async function runStart(
  options: StartOptions,
  out: NodeJS.WriteStream = process.stdout,
): Promise<number> {
  const envNames = options.envs
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (envNames.length === 0) throw new Error("--envs needs at least one env name");
  if (options.steps < 1) throw new Error("--steps must be at least 1");

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
  let timer: NodeJS.Timeout | null = null;
  const printer = new ProgressPrinter(out);

  try {
    out.write(`starting wrangler dev on 127.0.0.1:${options.port} (state: ${stateDir})…\n`);
    dev = await startDevProcess({ port: options.port, persistTo: stateDir });
    inference = await openInference(options);
    out.write(`API ${dev.url} · ${inference.describe} · envs ${envNames.join(", ")}\n`);

    const trainer = new TrainerClient({ url: dev.url });
    await trainer.register({
      batch_size: options.batchSize,
      max_token_len: options.maxTokenLen,
      num_steps: options.steps,
    });

    for (const name of envNames) {
      const env = await createEnv(
        name,
        { total_steps: -1, rollout_server_url: dev.url, max_token_length: options.maxTokenLen },
        inference,
        options.tokenizer,
      );
      if (env.config.group_size > options.batchSize) {
        throw new Error(
          `${name}: group_size ${env.config.group_size} > --batch-size ${options.batchSize}; raise --batch-size`,
        );
      }
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
    let stats: RunStats | null = null;
    let polling = false;
    timer = setInterval(() => {
      progress.elapsedS = (Date.now() - started) / 1000;
      printer.draw(progressLines(progress, stats));
      if (polling) return;
      polling = true;
      trainer
        .stats()
        .then((s) => {
          stats = s;
        })
        .catch(() => {})
        .finally(() => {
          polling = false;
        });
    }, 1000);

    let policyVersion = 0;
    while (!stopRequested && progress.step < options.steps) {
      if (options.maxSeconds > 0 && Date.now() - started > options.maxSeconds * 1000) {
        failure = `gave up after --max-seconds ${options.maxSeconds} (last reason: ${progress.lastReason ?? "none"})`;
        break;
      }
      if (envRuns.every((r) => r.finished instanceof Error)) {
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
      const stale = batch.groups.map((g) =>
        typeof g.policy_version === "number" ? policyVersion - g.policy_version : 0,
      );
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
    printer.draw(progressLines(progress, stats));
    printer.release();
  } catch (err) {
    failure = err instanceof Error ? err.message : String(err);
  } finally {
    if (timer) clearInterval(timer);
    abort.abort();
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
  ];
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
