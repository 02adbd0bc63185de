/**
 * Offline generation (Atropos `process`): no rollout API. Items are rolled out, post-processed,
 * fed back to the curriculum and validated; each valid group is handed to `onGroup` as a
 * JSONL-ready dict. Failed or dropped groups consume their item and the next item is tried.
 */
import type { ScoredDataGroup } from "../../core/wire/group-types";
import type { BaseEnv, JsonValue } from "../base-env";
import type { BaseEnvConfig } from "../config";
import type { SendValidationOptions } from "../send-validation";
import { countDrop, runRolloutItem } from "./rollout-core";

export interface ProcessProgress {
  produced: number;
  target: number;
  itemsUsed: number;
  dropped: number;
  failures: number;
  dropReasons: Record<string, number>;
}

export interface ProcessOptions {
  /** Groups to produce (Atropos: total_steps in process mode). */
  groups: number;
  onGroup: (group: ScoredDataGroup, index: number) => void | Promise<void>;
  onProgress?: (progress: ProcessProgress) => void;
  /** Items rolled out in parallel (default 1). */
  concurrency?: number;
  /** Upper bound on items consumed, so a broken env cannot loop forever (default 10×groups+10). */
  maxItems?: number;
  /** Overrides of the process-mode validation defaults (scores may be identical, messages kept). */
  validation?: Partial<SendValidationOptions>;
  signal?: AbortSignal;
  /** Call setup() first (default true). */
  setup?: boolean;
}

/** One JSONL line for a group (no env_id: process output is not bound to a registration). */
export function groupToJsonl(group: ScoredDataGroup): string {
  const { env_id: _envId, ...rest } = group;
  return `${JSON.stringify(rest)}\n`;
}

export async function processEnv<Item extends JsonValue, Config extends BaseEnvConfig>(
  env: BaseEnv<Item, Config>,
  options: ProcessOptions,
): Promise<ProcessProgress> {
  if (options.setup ?? true) await env.setup();
  const validation: SendValidationOptions = {
    groupSize: env.config.group_size,
    ensureScoresAreNotSame: false,
    maxTokenLen: -1,
    includeMessages: true,
    tokenizer: env.tokenizer,
    abortOnMaxLength: false,
    ...options.validation,
  };
  const progress: ProcessProgress = {
    produced: 0,
    target: options.groups,
    itemsUsed: 0,
    dropped: 0,
    failures: 0,
    dropReasons: {},
  };
  const maxItems = options.maxItems ?? options.groups * 10 + 10;
  const backlog: Item[] = [];
  let exhausted = false;

  const nextItem = async (): Promise<Item | null> => {
    if (backlog.length > 0) return backlog.shift()!;
    if (exhausted) return null;
    const item = await env.getNextItem();
    if (item === null) exhausted = true;
    return item;
  };

  const done = () =>
    progress.produced >= options.groups ||
    progress.itemsUsed >= maxItems ||
    options.signal?.aborted;

  const worker = async () => {
    while (!done()) {
      const item = await nextItem();
      if (item === null) return;
      progress.itemsUsed++;
      const result = await runRolloutItem(env, item, {
        validation,
        submit: async (valid) => {
          for (const { group } of valid) {
            if (progress.produced >= options.groups) break;
            const index = progress.produced++;
            await options.onGroup(group, index);
          }
        },
      });
      if (result.kind === "cancelled") continue;
      backlog.push(...result.backlog);
      if (result.kind === "submitted" || result.kind === "dropped") {
        progress.dropped += result.drops.length;
        for (const reason of result.drops) countDrop(progress.dropReasons, reason);
      } else {
        progress.failures++;
        countDrop(progress.dropReasons, `error: ${result.message.slice(0, 120)}`);
      }
      options.onProgress?.({ ...progress, dropReasons: { ...progress.dropReasons } });
    }
  };

  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 1) }, worker));
  return progress;
}
