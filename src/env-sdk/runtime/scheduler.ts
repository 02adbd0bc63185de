/**
 * Atropos' env-side worker math (docs/WRITING_ENVS.md, running envs) as pure functions, shared by the Node `serveEnv` loop and
 * the EnvSession Durable Object feeder. Names follow Atropos':
 * a = min_batch_allocation, B = batch_size, M = max_batches_offpolicy, X = status max_group_size,
 * G = group_size, S = status self_queue_size, Q = status queue_size.
 */

import type { z } from "zod";
import type { envStatusAnswerSchema } from "../../core/wire/api-schemas";
import type { BaseEnvConfig } from "../config";

/** The body of GET /status-env as an env reads it (`policy_version` only from atropos-edge). */
export type EnvStatus = z.infer<typeof envStatusAnswerSchema>;

/** max_num_workers, with -1 → per-node × number of inference servers. */
export function resolveMaxNumWorkers(
  config: Pick<BaseEnvConfig, "max_num_workers" | "max_num_workers_per_node">,
  numServers: number,
): number {
  return config.max_num_workers === -1
    ? config.max_num_workers_per_node * Math.max(1, numServers)
    : config.max_num_workers;
}

/** Batch size this env fills: B × (unallocated_fraction + a); B before the first status or if -1. */
export function derivedBatchSize(
  batchSize: number,
  status: Pick<EnvStatus, "unallocated_fraction"> | null,
  minBatchAllocation: number | null,
): number {
  if (!status || batchSize === -1) return batchSize;
  return Math.floor(batchSize * (status.unallocated_fraction + (minBatchAllocation ?? 0)));
}

/** Stop when step + whole batches already queued would exceed total_steps. */
export function shouldTerminate(args: {
  currentStep: number;
  queueSize: number;
  groupSize: number;
  batchSize: number;
  totalSteps: number;
}): boolean {
  if (args.batchSize <= 0) return false;
  const queuedBatches = Math.floor((args.queueSize * args.groupSize) / args.batchSize);
  return args.currentStep + queuedBatches > args.totalSteps;
}

/** Sequences still owed to this env's minimum allocation: ceil(a·B·M/X)·(X // G) − S. */
function allocationShortfall(
  a: number,
  B: number,
  M: number,
  X: number,
  G: number,
  S: number,
): number {
  return Math.ceil((a * B * M) / X) * Math.floor(X / G) - S;
}

/** Pause (discard in-flight work, keep the items) when the queue is a full M batches ahead. */
export function shouldPause(args: {
  derivedBatchSize: number;
  batchSize: number;
  maxBatchesOffpolicy: number;
  groupSize: number;
  minBatchAllocation: number | null;
  status: Pick<EnvStatus, "queue_size" | "self_queue_size" | "max_group_size">;
}): boolean {
  if (args.derivedBatchSize === -1) return true;
  const { status } = args;
  const M = args.maxBatchesOffpolicy;
  if (M <= 0) return false;
  if (status.queue_size * args.groupSize < M * args.batchSize) return false;
  if (args.minBatchAllocation === null) return true;
  return (
    allocationShortfall(
      args.minBatchAllocation,
      args.batchSize,
      M,
      Math.max(1, status.max_group_size),
      args.groupSize,
      status.self_queue_size,
    ) <= 0
  );
}

/**
 * How many groups should be in flight (`add_train_workers`). May be negative or below the current
 * count: the caller then cancels the newest workers and keeps their items.
 */
export function targetWorkerCount(args: {
  maxNumWorkers: number;
  evalRunning: boolean;
  evalHandling: BaseEnvConfig["eval_handling"];
  evalLimitRatio: number;
  maxBatchesOffpolicy: number;
  derivedBatchSize: number;
  batchSize: number;
  groupSize: number;
  minBatchAllocation: number | null;
  status: Pick<EnvStatus, "queue_size" | "self_queue_size" | "max_group_size">;
}): number {
  let cap = args.maxNumWorkers;
  if (args.evalRunning) {
    if (args.evalHandling === "STOP_TRAIN") return 0;
    if (args.evalHandling === "LIMIT_TRAIN")
      cap = Math.floor(args.maxNumWorkers * args.evalLimitRatio);
  }
  const G = args.groupSize;
  // max_batches_offpolicy ≤ 0 disables the off-policy bound (Atropos' pause check treats it so,
  // but its worker formula then went negative and started nothing).
  let target =
    args.maxBatchesOffpolicy <= 0
      ? cap
      : Math.min(
          cap,
          Math.floor((args.maxBatchesOffpolicy * args.derivedBatchSize) / G) -
            args.status.queue_size,
        );
  const a = args.minBatchAllocation;
  if (a !== null) {
    const X = Math.max(1, args.status.max_group_size);
    const B = args.batchSize;
    const M = args.maxBatchesOffpolicy;
    const S = args.status.self_queue_size;
    const owed = Math.ceil(
      ((Math.ceil((a * B * M) / X) + Math.floor(X / G)) * X - Math.floor(G * S)) / G,
    );
    target = Math.max(target, Math.max(0, owed));
  }
  return target;
}

export type WorkerPlan =
  | { action: "terminate" }
  | { action: "pause" }
  | { action: "fill"; target: number };

/**
 * One scheduling decision from a status poll, in Atropos' order: stop at total_steps, pause when
 * the queue is far enough ahead, otherwise how many groups should be in flight.
 */
export function planWorkers(args: {
  config: Pick<
    BaseEnvConfig,
    | "group_size"
    | "max_batches_offpolicy"
    | "min_batch_allocation"
    | "eval_handling"
    | "eval_limit_ratio"
  >;
  status: EnvStatus;
  batchSize: number;
  totalSteps: number;
  maxNumWorkers: number;
  evalRunning: boolean;
}): WorkerPlan {
  const { config, status, batchSize } = args;
  if (
    shouldTerminate({
      currentStep: status.current_step,
      queueSize: status.queue_size,
      groupSize: config.group_size,
      batchSize,
      totalSteps: args.totalSteps,
    })
  ) {
    return { action: "terminate" };
  }
  const minBatchAllocation = config.min_batch_allocation ?? null;
  const common = {
    batchSize,
    maxBatchesOffpolicy: config.max_batches_offpolicy,
    groupSize: config.group_size,
    minBatchAllocation,
    status,
    derivedBatchSize: derivedBatchSize(batchSize, status, minBatchAllocation),
  };
  if (shouldPause(common)) return { action: "pause" };
  return {
    action: "fill",
    target: targetWorkerCount({
      ...common,
      maxNumWorkers: args.maxNumWorkers,
      evalRunning: args.evalRunning,
      evalHandling: config.eval_handling,
      evalLimitRatio: config.eval_limit_ratio,
    }),
  };
}

/**
 * The multiple of `interval` crossed when the step moved prev → next, or null. Unlike Atropos'
 * remainder comparison, a jump over several multiples (50 → 160 with interval 100) is detected.
 */
export function crossedMultiple(
  prevStep: number,
  nextStep: number,
  interval: number,
): number | null {
  if (interval <= 0 || nextStep <= prevStep) return null;
  const crossed = Math.floor(nextStep / interval);
  return crossed > Math.floor(prevStep / interval) ? crossed * interval : null;
}

/** Atropos' original eval trigger, for comparison/compat tests: (prev % i) > (next % i). */
export function atroposEvalCrossing(prevStep: number, nextStep: number, interval: number): boolean {
  return interval > 0 && prevStep % interval > nextStep % interval;
}
