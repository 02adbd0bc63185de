/**
 * BaseEnv: the environment contract (Atropos `BaseEnv` in TypeScript naming).
 *
 * An env is a dataloader of scored groups. The runtime (Node `serveEnv`/`processEnv`, or the
 * EnvSession Durable Object + queue consumers in a Worker) calls, in order:
 *   setup() → getNextItem() → collectTrajectories(item) → postprocessHistories(groups)
 *   → recordScores(item, scores) → validate → submit.
 *
 * Items MUST be JSON-serializable (plain objects/arrays/strings/numbers/booleans/null): in a Worker
 * deployment getNextItem() runs in the EnvSession DO and the item travels to another isolate in a
 * queue message (≤128 KB). Keep items small — ids/seeds, not datasets.
 *
 * saveCheckpoint()/loadCheckpoint() must capture everything getNextItem() depends on (iterator
 * position, curriculum level, RNG state) so the DO can persist the env and resume it exactly.
 * recordScores() may run on a different instance than the one that scored the group: it must only
 * change state that saveCheckpoint() captures.
 */
import type { ScoredDataGroup, ScoredDataItem } from "../core/wire/group-types";
import type { InferenceClient, Tokenizer } from "../inference/types";
import { getSandbox } from "../sandbox/registry";
import type { Sandbox } from "../sandbox/types";
import type { BaseEnvConfig, EnvConfigInit } from "./config";
import { samplesPerItemMetrics } from "./evaluation";

export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

export type JsonObject = { [key: string]: JsonValue };

/** What collectTrajectories returns: one group, several groups, or none — plus backlog items. */
export type TrajectoriesResult<Item> = [ScoredDataGroup | ScoredDataGroup[] | null, Item[]];
export type TrajectoryResult<Item> = [ScoredDataItem | null, Item[]];

/**
 * Throw from collectTrajectories to drop the group on purpose (e.g. too few judges answered);
 * runtimes count it under its message instead of as a worker error.
 */
export class DropGroupError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "DropGroupError";
  }
}

export interface EvalResult {
  metrics: Record<string, number>;
  /** Per-example records (prompt, response, score…), written to samples.jsonl by the CLI. */
  samples: Record<string, unknown>[];
}

/**
 * What the runtime hosting an env hands it besides inference and a tokenizer (`create()`'s last
 * argument): the Worker passes its SANDBOX binding here, in the feeder as in rollout workers.
 */
export interface EnvServices {
  /** The sandbox this env runs code in; absent: the process' or isolate's (`getSandbox()`). */
  sandbox?: () => Promise<Sandbox>;
}

export abstract class BaseEnv<
  Item extends JsonValue = JsonValue,
  Config extends BaseEnvConfig = BaseEnvConfig,
> {
  /** Registry name; also the default `desired_name` at registration. */
  static envName = "base_env";

  /** Atropos' config_init: default env config and inference servers (the CLI's lowest layer). */
  static configInit(): EnvConfigInit {
    return {};
  }

  readonly config: Config;
  readonly inference: InferenceClient;
  readonly tokenizer: Tokenizer;
  private readonly observations = new Map<string, number[]>();
  private services: EnvServices = {};

  constructor(config: Config, inference: InferenceClient, tokenizer: Tokenizer) {
    this.config = config;
    this.inference = inference;
    this.tokenizer = tokenizer;
  }

  /** The subclass' static envName. */
  get name(): string {
    return (this.constructor as typeof BaseEnv).envName;
  }

  /**
   * The runtime's services for this instance (defineEnv's `create()` binds them after the
   * constructor, so an env with its own constructor needs not pass them on).
   */
  bindServices(services: EnvServices): void {
    this.services = services;
  }

  /**
   * The sandbox for running code: the one the runtime passed (a Worker's SANDBOX binding, in
   * every isolate), else the process' provider (the CLI's local pool; `setSandboxProvider`).
   */
  sandbox(): Promise<Sandbox> {
    return this.services.sandbox ? this.services.sandbox() : getSandbox();
  }

  /** Load data, build generators. Called once before anything else. */
  async setup(): Promise<void> {}

  /** Next item to roll out; null means "nothing right now" (the runtime pauses/stops feeding). */
  abstract getNextItem(): Promise<Item | null>;

  /** One rollout for an item. Override this or collectTrajectories. */
  async collectTrajectory(_item: Item): Promise<TrajectoryResult<Item>> {
    throw new Error(`${this.name}: override collectTrajectory() or collectTrajectories()`);
  }

  /**
   * Default: group_size parallel collectTrajectory calls merged into one group (docs/WRITING_ENVS.md),
   * additionally carrying inference_logprobs when every rollout has them. Optional per-rollout
   * lists (advantages, ref_logprobs, messages, images) are kept only when every rollout provides
   * them, so they always line up with `tokens`; missing `overrides` entries become `{}`.
   */
  async collectTrajectories(item: Item): Promise<TrajectoriesResult<Item>> {
    const results = await Promise.all(
      Array.from({ length: this.config.group_size }, () => this.collectTrajectory(item)),
    );
    const backlog = results.flatMap(([, more]) => more);
    const rollouts = results.map(([r]) => r).filter((r): r is ScoredDataItem => r !== null);
    return [rollouts.length === 0 ? null : mergeIntoGroup(rollouts), backlog];
  }

  /** Last chance to edit groups (e.g. length penalties across the group). */
  async postprocessHistories(
    groups: ScoredDataGroup | ScoredDataGroup[] | null,
  ): Promise<ScoredDataGroup | ScoredDataGroup[] | null> {
    return groups;
  }

  /** Curriculum feedback after a group for `item` was scored. Change only checkpointed state. */
  recordScores(_item: Item, _scores: number[]): void {}

  /** Metrics only. Override this or evaluateWithSamples. */
  async evaluate(): Promise<Record<string, number>> {
    return {};
  }

  /** What the runtime calls to evaluate; default wraps evaluate(). */
  async evaluateWithSamples(): Promise<EvalResult> {
    return { metrics: await this.evaluate(), samples: [] };
  }

  /** `fn` over `items`, at most config.max_eval_workers at a time, results in input order. */
  protected async mapEval<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
    const results = new Array<R>(items.length);
    let next = 0;
    const worker = async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i]!);
      }
    };
    const workers = Math.max(1, Math.min(this.config.max_eval_workers, items.length));
    await Promise.all(Array.from({ length: workers }, worker));
    return results;
  }

  /**
   * Evaluates `items` with config.eval_samples_per_item (k) samples each: `attempt` runs one
   * sample and says whether it was correct. Metrics: eval/avg@k, eval/pass@j (unbiased
   * estimator; samplesPerItemMetrics); samples: one record per sample, with its item and index.
   */
  protected async evaluateSampled<T>(
    items: readonly T[],
    attempt: (
      item: T,
      sample: number,
    ) => Promise<{ correct: boolean; record: Record<string, unknown> }>,
  ): Promise<EvalResult> {
    const k = this.config.eval_samples_per_item;
    const pairs = items.flatMap((item, index) =>
      Array.from({ length: k }, (_, sample) => ({ item, index, sample })),
    );
    const results = await this.mapEval(pairs, async (p) => ({
      ...p,
      ...(await attempt(p.item, p.sample)),
    }));
    const correct = items.map(() => 0);
    for (const r of results) if (r.correct) correct[r.index]!++;
    return {
      metrics: samplesPerItemMetrics(correct, k),
      samples: results.map((r) => ({
        item_index: r.index,
        sample: r.sample,
        ...r.record,
        correct: r.correct,
      })),
    };
  }

  /** JSON-serializable state that getNextItem() depends on. */
  saveCheckpoint(): JsonObject {
    return {};
  }

  loadCheckpoint(_state: JsonObject): void {}

  /** Called after every group is handled (success or not). */
  async cleanup(): Promise<void> {}

  /** Record one observation for metrics(). */
  protected observe(name: string, value: number): void {
    const list = this.observations.get(name);
    if (list) list.push(value);
    else this.observations.set(name, [value]);
  }

  /**
   * Everything observed since the last call, by name; then resets. Runtimes whose rollouts run on
   * several instances (the Worker's queue consumers) gather these and summarize them in one place.
   */
  takeObservations(): Record<string, number[]> {
    const out = Object.fromEntries(this.observations);
    this.observations.clear();
    return out;
  }

  /**
   * `{name}_mean|_min|_max|_count` of everything observed since the last call; then resets.
   * The runtimes report it once per trainer step (the Worker summarizes takeObservations() of
   * its rollout instances the same way).
   */
  metrics(): Record<string, number> {
    return summarizeObservations(this.takeObservations());
  }
}

/** `{name}_mean|_min|_max|_count` per observed name (names without values are left out). */
export function summarizeObservations(
  observations: Record<string, readonly number[]>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, values] of Object.entries(observations)) {
    if (values.length === 0) continue;
    let sum = 0;
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    for (const v of values) {
      sum += v;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    out[`${name}_mean`] = sum / values.length;
    out[`${name}_min`] = min;
    out[`${name}_max`] = max;
    out[`${name}_count`] = values.length;
  }
  return out;
}

/** Build one ScoredDataGroup from per-rollout items (see collectTrajectories). */
export function mergeIntoGroup(rollouts: ScoredDataItem[]): ScoredDataGroup {
  const all = <K extends keyof ScoredDataItem>(key: K) =>
    rollouts.every((r) => r[key] !== undefined && r[key] !== null);
  const group: ScoredDataGroup = {
    tokens: rollouts.map((r) => r.tokens),
    masks: rollouts.map((r) => r.masks),
    scores: rollouts.map((r) => r.scores),
  };
  if (all("advantages")) group.advantages = rollouts.map((r) => r.advantages!);
  if (all("ref_logprobs")) group.ref_logprobs = rollouts.map((r) => r.ref_logprobs!);
  if (all("messages")) group.messages = rollouts.map((r) => r.messages!);
  if (all("inference_logprobs"))
    group.inference_logprobs = rollouts.map((r) => r.inference_logprobs!);
  if (all("images")) group.images = rollouts.map((r) => r.images);
  if (all("distill_token_ids")) group.distill_token_ids = rollouts.map((r) => r.distill_token_ids!);
  if (all("distill_logprobs")) group.distill_logprobs = rollouts.map((r) => r.distill_logprobs!);
  if (rollouts.some((r) => r.overrides)) group.overrides = rollouts.map((r) => r.overrides ?? {});
  const groupOverrides = rollouts.reduce<Record<string, unknown> | null>(
    (acc, r) => (r.group_overrides ? { ...(acc ?? {}), ...r.group_overrides } : acc),
    null,
  );
  if (groupOverrides) group.group_overrides = groupOverrides;
  return group;
}

/** Normalise collectTrajectories' first element to a list. */
export function groupsOf(result: ScoredDataGroup | ScoredDataGroup[] | null): ScoredDataGroup[] {
  if (!result) return [];
  return Array.isArray(result) ? result : [result];
}

/** The constructor shape the registry and runtimes use. */
export type EnvConstructor<Item extends JsonValue, Config extends BaseEnvConfig> = new (
  config: Config,
  inference: InferenceClient,
  tokenizer: Tokenizer,
) => BaseEnv<Item, Config>;
