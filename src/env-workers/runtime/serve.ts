/**
 * `serveEnv`: the Node equivalent of Atropos' `env_manager`. Registers with the rollout API, then
 * every poll: reads /status-env, runs step checks (eval / checkpoint crossings), and keeps the
 * number of in-flight groups at the scheduler's target; each finished group is fed back to the
 * curriculum, validated and submitted (idempotently). Checkpoints: src/env-workers/runtime/checkpoints.ts.
 *
 * Differences from the original: bounded (AbortSignal, `maxLoops`), transient /status-env failures
 * do not kill the env (they are retried next poll, `maxConsecutiveErrors` bounds it), eval/checkpoint
 * crossings of several multiples are detected, backlog is FIFO. A cancelled worker cannot be
 * interrupted mid-request (envs get no signal); its result is discarded and its item re-queued.
 */

import { abortableSleep } from "../../core/abortable-sleep";
import type { BaseEnv, EvalResult, JsonValue } from "../base-env";
import type { BaseEnvConfig } from "../config";
import { ApiError, type RolloutApiClient } from "./api-client";
import { type CheckpointStore, checkpointsFor } from "./checkpoints";
import { DropBackoff } from "./drop-backoff";
import { countDrop, runRolloutItem } from "./rollout-core";
import { crossedMultiple, type EnvStatus, planWorkers, resolveMaxNumWorkers } from "./scheduler";

export type ServeEvent =
  /** totalSteps: the trainer step at which the loop stops (total_steps, or the trainer's num_steps). */
  | {
      type: "registered";
      envId: number;
      name: string;
      startingStep: number;
      totalSteps: number;
    }
  | { type: "waiting_for_trainer" }
  | { type: "step"; step: number }
  | { type: "paused" }
  | { type: "submitted"; groups: number; status: number; ok: boolean }
  | { type: "dropped"; reason: string }
  | { type: "backing_off"; message: string }
  /** errorClass: absent for evaluation failures; error: what was thrown (its stack locates it). */
  | {
      type: "worker_error";
      message: string;
      errorClass?: "retryable" | "permanent";
      error?: unknown;
    }
  /** One item finished: its groups went out or were dropped ("ran"), or it failed with an error. */
  | { type: "item"; outcome: "ran" | "failed" }
  | { type: "status_error"; message: string }
  | { type: "eval"; step: number; result: EvalResult }
  /** Values of a finished step (env: observe()/metrics() and drops by reason) or an evaluation. */
  | { type: "metrics"; step: number; kind: "env" | "eval"; metrics: Record<string, number> }
  /** The API refused or failed a metrics report (the loop goes on; 404/405: reporting stops). */
  | { type: "metrics_error"; message: string }
  | { type: "checkpoint" | "checkpoint_loaded"; step: number } // loaded: state at or before step
  | { type: "checkpoint_error"; message: string };

export interface ServeOptions {
  signal?: AbortSignal;
  pollIntervalMs?: number;
  registerPollMs?: number;
  /** Atropos waits 5 s after /info; default 0. */
  startupDelayMs?: number;
  /** Inference servers behind the env (for max_num_workers = -1). */
  numServers?: number;
  /** Stop the loop after this many polls (tests, smoke runs). */
  maxLoops?: number;
  /** Stop when getNextItem() returned null and nothing is in flight (default false: keep polling). */
  stopWhenExhausted?: boolean;
  /** Consecutive /status-env failures tolerated before giving up (default 30). */
  maxConsecutiveErrors?: number;
  /** Saves the env's state every checkpoint_interval steps, reads it back on a later start ("api": the rollout API's store). */
  checkpointStore?: CheckpointStore | "api";
  /** Disconnect from the API on exit (default true). */
  disconnectOnExit?: boolean;
  onEvent?: (event: ServeEvent) => void;
  now?: () => number;
}

export interface ServeSummary {
  envId: number;
  exitReason: "terminated" | "aborted" | "exhausted" | "max_loops";
  finalStep: number;
  groupsSubmitted: number;
  groupsDropped: number;
  submitFailures: number;
  workerErrors: number;
  dropReasons: Record<string, number>;
  evaluations: { step: number; metrics: Record<string, number> }[];
}

interface Worker<Item> {
  id: number;
  item: Item;
  startedAt: number;
  cancelled: boolean;
  /** The run's policy version when this rollout started (what its groups are stamped with). */
  policyVersion: number | undefined;
}

export async function serveEnv<Item extends JsonValue, Config extends BaseEnvConfig>(
  env: BaseEnv<Item, Config>,
  api: RolloutApiClient,
  options: ServeOptions = {},
): Promise<ServeSummary> {
  const { config } = env;
  const signal = options.signal;
  const now = options.now ?? Date.now;
  const emit = options.onEvent ?? (() => {});
  await env.setup();

  const registration = await api.registerEnv(
    {
      max_token_length: config.max_token_length,
      desired_name: config.wandb_name ?? env.name,
      weight: config.inference_weight,
      group_size: config.group_size,
      min_batch_allocation: config.min_batch_allocation,
    },
    { pollMs: options.registerPollMs, signal, onWait: () => emit({ type: "waiting_for_trainer" }) },
  );
  const envId = registration.env_id;
  const totalSteps = config.total_steps === -1 ? registration.num_steps : config.total_steps;
  if (totalSteps === -1) throw new Error("total_steps is -1 and the API reported num_steps -1");
  emit({
    type: "registered",
    envId,
    name: registration.wandb_name,
    startingStep: registration.starting_step,
    totalSteps,
  });
  let currStep = registration.starting_step;
  const checkpoints = checkpointsFor(options.checkpointStore, api, envId, signal, (message) =>
    emit({ type: "checkpoint_error", message }),
  );
  const saved = currStep > 0 ? await checkpoints?.load(currStep) : null;
  if (saved) {
    env.loadCheckpoint(saved);
    emit({ type: "checkpoint_loaded", step: currStep });
  }

  const info = await api.info(signal);
  const batchSize = info.batch_size !== -1 ? info.batch_size : config.batch_size;
  const maxTokenLen = info.max_token_len !== -1 ? info.max_token_len : config.max_token_length;
  if (batchSize === -1 || config.group_size > batchSize) {
    throw new Error(`group_size ${config.group_size} does not fit batch_size ${batchSize}`);
  }
  if (options.startupDelayMs) await abortableSleep(options.startupDelayMs, signal);

  const maxWorkers = resolveMaxNumWorkers(config, options.numServers ?? 1);
  const summary: ServeSummary = {
    envId,
    exitReason: "aborted",
    finalStep: currStep,
    groupsSubmitted: 0,
    groupsDropped: 0,
    submitFailures: 0,
    workerErrors: 0,
    dropReasons: {},
    evaluations: [],
  };
  const backlog: Item[] = [];
  const running = new Map<number, Worker<Item>>();
  const inFlight = new Set<Promise<void>>();
  let nextId = 0;
  let exhausted = false;
  let evalRunning = false;
  let evalPromise: Promise<void> | null = null;
  let consecutiveErrors = 0;
  // Resolved when a worker finishes, so the loop refills its slot without waiting for the poll.
  let woke = false;
  let wakeWaiter: (() => void) | null = null;
  const wakeLoop = () => {
    woke = true;
    wakeWaiter?.();
  };
  // Groups being submitted after their worker gave its slot back (bounded by maxWorkers).
  let submitting = 0;
  let lastStatus: { status: EnvStatus; at: number } | null = null;
  let refreshing = false;
  /** Single-flight background /status-env; failures are left to the next timed poll. */
  const refreshStatus = () => {
    if (refreshing) return;
    refreshing = true;
    api
      .statusEnv(envId, signal)
      .then((fresh) => {
        lastStatus = { status: fresh, at: now() };
      })
      .catch(() => {})
      .finally(() => {
        refreshing = false;
      });
  };

  // Drops since the last step change, reported with that step's metrics.
  let stepDrops: Record<string, number> = {};
  let reportingMetrics = true;
  // Reports go one at a time, in step order, without holding up the loop.
  let metricReports: Promise<void> = Promise.resolve();
  const reportMetrics = (step: number, kind: "env" | "eval", metrics: Record<string, number>) => {
    if (Object.keys(metrics).length === 0) return;
    emit({ type: "metrics", step, kind, metrics });
    metricReports = metricReports.then(async () => {
      if (!reportingMetrics) return;
      try {
        // No signal: the last step's report is sent while the loop is being stopped.
        await api.reportMetrics(envId, { step, kind, metrics });
      } catch (err) {
        // An API without the metrics route (Atropos' own server) will never have it.
        if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
          reportingMetrics = false;
        }
        emit({ type: "metrics_error", message: err instanceof Error ? err.message : String(err) });
      }
    });
  };
  /** The env's metrics() and the drops by reason of the step that just ended. */
  const reportStepMetrics = (step: number) => {
    const drops = Object.fromEntries(
      // Metric names are at most 200 characters.
      Object.entries(stepDrops).map(([reason, n]) => [`drops/${reason}`.slice(0, 200), n]),
    );
    stepDrops = {};
    reportMetrics(step, "env", { ...env.metrics(), ...drops });
  };

  const backoff = new DropBackoff({ now });
  // Items failing with a bug in the env's code would otherwise be retried as fast as they fail.
  const failureBackoff = new DropBackoff({ now, threshold: 50 });
  const drop = (reason: string) => {
    const backingOff = backoff.dropped(reason);
    if (backingOff) emit({ type: "backing_off", message: backingOff });
    summary.groupsDropped++;
    countDrop(summary.dropReasons, reason);
    countDrop(stepDrops, reason);
    emit({ type: "dropped", reason });
  };

  /** Cancel workers; their items go back to the backlog unless `dropItems`. */
  const cancel = (workers: Worker<Item>[], dropItems = false) => {
    for (const w of workers) {
      w.cancelled = true;
      running.delete(w.id);
      if (!dropItems) backlog.push(w.item);
    }
  };

  const runWorker = async (w: Worker<Item>) => {
    try {
      const result = await runRolloutItem(env, w.item, {
        validation: {
          groupSize: config.group_size,
          ensureScoresAreNotSame: config.ensure_scores_are_not_same,
          maxTokenLen,
          includeMessages: config.include_messages,
          includeTokenTexts: config.include_token_texts,
          tokenizer: env.tokenizer,
        },
        cancelled: () => w.cancelled,
        submit: async (valid) => {
          const payload = valid.length === 1 ? valid[0]!.group : valid.map((v) => v.group);
          // The slot bounds generation, not the API round trip: give it back while submitting,
          // unless as many submissions as slots are pending (then the API is the bottleneck).
          const released = submitting < maxWorkers && running.delete(w.id);
          if (released) {
            submitting++;
            wakeLoop();
          }
          try {
            return await api.submitGroups(payload, envId, {
              signal,
              policyVersion: w.policyVersion,
            });
          } finally {
            if (released) submitting--;
          }
        },
      });
      if (result.kind === "cancelled") return;
      if (result.kind === "submitted") {
        const res = result.submitted;
        emit({ type: "submitted", groups: result.groups, status: res.status, ok: res.ok });
        if (res.ok) {
          backoff.kept();
          failureBackoff.kept();
          summary.groupsSubmitted += result.groups;
          // Keep the cached status conservative until the next refresh: the queue only grew.
          // (status-env counts groups of this env's size; a valid group is one of them.)
          if (lastStatus) {
            const s = lastStatus.status;
            lastStatus.status = {
              ...s,
              queue_size: s.queue_size + result.groups,
              self_queue_size: s.self_queue_size + result.groups,
            };
          }
        } else summary.submitFailures++;
      } else if (w.cancelled || signal?.aborted) return;
      backlog.push(...result.backlog);
      if (result.kind === "submitted" || result.kind === "dropped") {
        for (const reason of result.drops) drop(reason);
        emit({ type: "item", outcome: "ran" });
      } else {
        // No retry here: inference and the API client already retried transient failures.
        summary.workerErrors++;
        emit({
          type: "worker_error",
          message: result.message,
          errorClass: result.kind,
          error: result.error,
        });
        emit({ type: "item", outcome: "failed" });
        if (result.kind === "permanent") {
          const backingOff = failureBackoff.dropped(
            `every item failed with an error in the env's code (last: ${result.message})`,
          );
          if (backingOff) emit({ type: "backing_off", message: backingOff });
        }
      }
    } finally {
      if (running.delete(w.id)) wakeLoop();
    }
  };

  const spawn = (item: Item) => {
    const w: Worker<Item> = {
      id: nextId++,
      item,
      startedAt: now(),
      cancelled: false,
      policyVersion: lastStatus?.status.policy_version,
    };
    running.set(w.id, w);
    const p = runWorker(w).finally(() => inFlight.delete(p));
    inFlight.add(p);
  };

  const startEval = (step: number) => {
    evalRunning = true;
    if (config.eval_handling === "STOP_TRAIN") cancel([...running.values()]);
    evalPromise = env
      .evaluateWithSamples()
      .then((result) => {
        summary.evaluations.push({ step, metrics: result.metrics });
        emit({ type: "eval", step, result });
        reportMetrics(step, "eval", result.metrics);
      })
      .catch((err) => emit({ type: "worker_error", message: `evaluate: ${String(err)}` }))
      .finally(() => {
        evalRunning = false;
      });
  };

  let loops = 0;
  try {
    while (!signal?.aborted) {
      if (options.maxLoops !== undefined && loops++ >= options.maxLoops) {
        summary.exitReason = "max_loops";
        break;
      }
      const wokenByWorker = woke;
      woke = false;
      let status: EnvStatus;
      try {
        if (wokenByWorker && lastStatus) {
          // Woken by a finished worker: refill its slot now from the latest status, and refresh
          // that status in the background once it is older than a poll interval.
          status = lastStatus.status;
          if (now() - lastStatus.at >= (options.pollIntervalMs ?? 100)) refreshStatus();
        } else {
          status = await api.statusEnv(envId, signal);
          lastStatus = { status, at: now() };
        }
        consecutiveErrors = 0;
      } catch (err) {
        if (signal?.aborted) break;
        emit({ type: "status_error", message: err instanceof Error ? err.message : String(err) });
        if (++consecutiveErrors >= (options.maxConsecutiveErrors ?? 30)) throw err;
        await abortableSleep(options.pollIntervalMs ?? 100, signal).catch(() => {});
        continue;
      }
      env.inference.updateWeight(status.env_weight);

      if (status.current_step !== currStep) {
        const evalStep = crossedMultiple(currStep, status.current_step, config.steps_per_eval);
        if (evalStep !== null && !evalRunning) startEval(evalStep);
        const ckptStep = crossedMultiple(
          currStep,
          status.current_step,
          registration.checkpoint_interval,
        );
        if (ckptStep !== null && (await checkpoints?.save(ckptStep, env.saveCheckpoint())))
          emit({ type: "checkpoint", step: ckptStep });
        reportStepMetrics(currStep);
        currStep = status.current_step;
        summary.finalStep = currStep;
        emit({ type: "step", step: currStep });
      }

      const plan = planWorkers({
        config,
        status,
        batchSize,
        totalSteps,
        maxNumWorkers: maxWorkers,
        evalRunning,
      });
      if (plan.action === "terminate") {
        summary.exitReason = "terminated";
        break;
      }
      if (plan.action === "pause") {
        if (running.size > 0) emit({ type: "paused" });
        cancel([...running.values()]);
      } else if (running.size < maxWorkers) {
        const target = plan.target;
        if (running.size > target) {
          const oldestFirst = [...running.values()].sort((a, b) => a.startedAt - b.startedAt);
          cancel(oldestFirst.slice(0, running.size - Math.max(0, target)));
        }
        while (running.size < target && backoff.maySpawn() && failureBackoff.maySpawn()) {
          const item =
            backlog.length > 0 ? backlog.shift()! : exhausted ? null : await env.getNextItem();
          if (item === null) {
            exhausted = true;
            break;
          }
          spawn(item);
        }
        // A dataset that ended may get more items later (curriculum); re-ask next poll.
        if (!options.stopWhenExhausted) exhausted = false;
      }

      if (config.worker_timeout > 0) {
        const limit = now() - config.worker_timeout * 1000;
        const stale = [...running.values()].filter((w) => w.startedAt < limit);
        for (let i = 0; i < stale.length; i++) drop("worker timeout");
        cancel(stale, true);
      }

      if (options.stopWhenExhausted && exhausted && running.size === 0 && backlog.length === 0) {
        summary.exitReason = "exhausted";
        break;
      }
      // Sleep until the next poll, a finished worker (possibly already) or abort.
      if (woke) {
        // Items that settle without I/O (an env failing at once) would wake the loop from
        // microtasks forever, starving timers and I/O: give the event loop a turn.
        await new Promise<void>((resolve) => setTimeout(resolve, 0));
      } else {
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener("abort", done);
            wakeWaiter = null;
            resolve();
          };
          const timer = setTimeout(done, options.pollIntervalMs ?? 100);
          signal?.addEventListener("abort", done, { once: true });
          wakeWaiter = done;
        });
      }
    }
  } finally {
    cancel([...running.values()]);
    // Finished work of cancelled workers is discarded; wait briefly so cleanup() hooks run.
    await Promise.race([Promise.allSettled([...inFlight]), abortableSleep(1000)]);
    if (evalPromise) await Promise.race([evalPromise, abortableSleep(1000)]);
    reportStepMetrics(currStep);
    await Promise.race([metricReports, abortableSleep(2000)]);
    if (options.disconnectOnExit ?? true) await api.disconnectEnv(envId).catch(() => {});
  }
  return summary;
}
