/**
 * Queue consumer: one invocation runs a few rollout items through the shared rollout core
 * (runtime/rollout-core.ts), submitting valid groups in process and idempotently. Per class:
 * a drop is acked and reported to the feeder with its reason; a retryable failure retries with
 * exponential backoff, and after max_retries lands on the dead-letter queue, whose consumer records
 * it (visible in the run's stats) and tells the feeder; a permanent failure is recorded as a dead
 * letter at once and acked.
 * Delivery is at least once, so every step is idempotent per item id: group submissions are keyed
 * item:{id}:{i}, backlog items get ids derived from their parent's, the feeder counts an item once
 * and a dead letter is recorded once.
 */
import type { Bindings } from "../api/bindings";
import { CheckedGroup, submitGroupInProcess } from "../api/ingest-submit";
import { redactSecrets } from "../api/proxy-upstream";
import { recordDeadLetterOnce } from "../api/storage/env-workers";
import { getRun, type RunRow } from "../api/storage/runs";
import { errorMessage } from "../core/errors";
import type { RolloutItemMessage } from "../core/wire/queue-messages";
import type { BaseEnv, JsonValue } from "../env-sdk/base-env";
import type { BaseEnvConfig } from "../env-sdk/config";
import type { EnvDefinition } from "../env-sdk/define-env";
import type { EnvCatalog } from "../env-sdk/env-catalog";
import {
  InvalidGroupError,
  type RolloutItemResult,
  rolloutFailure,
  runRolloutItem,
} from "../env-sdk/runtime/rollout-core";
import { type RolloutEnvOptions, rolloutEnv, withTokenizerOnDemand } from "../env-sdk/worker-env";
import { loadTokenizer } from "../inference/tokenizers/lazy";
import { envServices } from "./env-sandbox";
import type { BacklogItem } from "./feeder/state";
import { resolveSpec } from "./spec-inference";

export const ROLLOUT_QUEUE = "rollout-items";
export const DEAD_LETTER_QUEUE = "rollout-items-dlq";

function feeder(env: Bindings, name: string) {
  return env.ENV_FEEDER.get(env.ENV_FEEDER.idFromName(name));
}

/** Per-item counts of the submitted groups (a redelivered item's groups are duplicates). */
export interface SubmitCounts {
  submitted: number;
  duplicates: number;
}

export type ItemResult = RolloutItemResult<JsonValue, SubmitCounts> & {
  /** What the env observe()d meanwhile (the instance is shared by the isolate's items). */
  observations?: Record<string, number[]>;
};

/** What the consumer already knows when it runs an item. */
export interface RollOutOptions extends RolloutEnvOptions {
  /** The run's max_token_len, from the `runs` row the consumer read (-1: none). */
  maxTokenLen?: number;
}

/** Runs one item through the shared rollout core; never throws (failures come back classified). */
export async function rollOutItem(
  env: Bindings,
  msg: RolloutItemMessage,
  envs: EnvCatalog,
  options: RollOutOptions = {},
): Promise<ItemResult> {
  let def: EnvDefinition;
  let parsed: BaseEnvConfig;
  try {
    def = envs.get(msg.spec.envName);
    // Parsed once per isolate and spec: rolloutEnv takes it (and caches the env built with it).
    parsed = def.parseConfig(msg.spec.config);
  } catch (error) {
    // An unknown env or a bad config stays wrong however often the item is retried.
    return rolloutFailure(error, [], "permanent");
  }
  let instance: BaseEnv<JsonValue>;
  let maxTokenLen: number;
  try {
    instance = await rolloutEnv(await resolveSpec(env, msg.run, msg.spec), def, env.PAYLOADS, {
      services: envServices(env),
      ...options,
      config: parsed,
    });
    const cfg = instance.config;
    // Messages are decoded from the group's tokens during validation.
    if (cfg.include_messages || cfg.include_token_texts) await loadTokenizer(instance.tokenizer);
    maxTokenLen = options.maxTokenLen ?? (await getRun(env.DB, msg.run))?.maxTokenLen ?? -1;
  } catch (error) {
    return rolloutFailure(error);
  }
  const cfg = instance.config;
  const rollout = (): Promise<ItemResult> =>
    runRolloutItem(instance, msg.item as JsonValue, {
      validation: {
        groupSize: cfg.group_size,
        ensureScoresAreNotSame: cfg.ensure_scores_are_not_same,
        maxTokenLen,
        includeMessages: cfg.include_messages,
        includeTokenTexts: cfg.include_token_texts,
        tokenizer: instance.tokenizer,
        abortOnMaxLength: true,
        // The API's own rules check each group's structure once, in `submit` below.
        checkStructure: false,
      },
      collectTimeoutSeconds: cfg.worker_timeout,
      // The feeder feeds the result's scores to the curriculum on its own instance.
      recordScores: false,
      submit: async (groups) => {
        // Every group is checked with the rollout API's rules before any is submitted (a bad one
        // is an env bug: the item fails permanently); ingest takes the checked groups as they are.
        const checked = groups.map(({ group, index }) => {
          try {
            const json = { ...group, env_id: msg.envId, policy_version: msg.policyVersion };
            return { group: CheckedGroup.of(json), index };
          } catch (error) {
            throw new InvalidGroupError(errorMessage(error));
          }
        });
        const counts: SubmitCounts = { submitted: 0, duplicates: 0 };
        for (const { group, index } of checked) {
          const result = await submitGroupInProcess(
            env,
            msg.run,
            group,
            `item:${msg.itemId}:${index}`,
          );
          if (result.status === "duplicate") counts.duplicates++;
          else counts.submitted++;
        }
        return counts;
      },
    });
  // The tokenizer is loaded only if this env's code path needs it (worker-env.ts).
  return withTokenizerOnDemand(instance, rollout, (result) =>
    result.kind === "retryable" || result.kind === "permanent" ? result.error : undefined,
  )
    .then((result): ItemResult => ({ ...result, observations: instance.takeObservations() }))
    .catch((error: unknown) => rolloutFailure(error));
}

/** Derived ids: a redelivered parent re-sends the same backlog items, whose groups then dedupe. */
export function backlogOf(msg: RolloutItemMessage, items: JsonValue[]): BacklogItem[] {
  return items.map((item, j) => ({ itemId: `${msg.itemId}.b${j}`, item }));
}

/**
 * Sends backlog items to the queue. Called after the feeder has recorded them as in flight, so a
 * backlog item that finishes quickly is never reported before the feeder knows it.
 */
export async function enqueueBacklog(
  env: Bindings,
  msg: RolloutItemMessage,
  backlog: BacklogItem[],
): Promise<void> {
  for (let i = 0; i < backlog.length; i += 100) {
    await env.ROLLOUT_ITEMS.sendBatch(
      backlog.slice(i, i + 100).map((b) => ({
        body: { ...msg, itemId: b.itemId, item: b.item, issuedAt: Date.now() },
      })),
    );
  }
}

/**
 * One row per item, however often it is dead-lettered (every row's error starts with the item's
 * id), and the feeder counts the item as failed once.
 */
async function recordDeadLetter(
  env: Bindings,
  msg: RolloutItemMessage,
  attempts: number,
  why: string,
) {
  const prefix = `item ${msg.itemId}: `;
  await recordDeadLetterOnce(
    env.DB,
    {
      run: msg.run,
      envName: msg.spec.envName,
      envId: msg.envId,
      item: JSON.stringify(msg.item).slice(0, 10_000),
      error: `${prefix}${why}`.slice(0, 2000),
      attempts,
      createdAt: Date.now(),
    },
    prefix,
  );
  await feeder(env, msg.feeder).report(msg.itemId, { ok: false });
}

/**
 * An item issued before its run's current data began must not write into it: the run was reset
 * (its row is recreated on the next registration, later than the item) or is gone. Without this
 * a message still on the queue at reset time would land its group under a re-registered env id.
 */
async function currentRun(env: Bindings, msg: RolloutItemMessage): Promise<RunRow | null> {
  const run = await getRun(env.DB, msg.run);
  return run === undefined || run.createdAt > msg.issuedAt ? null : run;
}

function logStaleItem(msg: RolloutItemMessage): void {
  console.log(
    JSON.stringify({
      level: "info",
      msg: "rollout item dropped: issued before the run was reset",
      item_id: msg.itemId,
      run: msg.run,
      env: msg.spec.envName,
    }),
  );
}

/** `text` with the item's inference keys (and any Bearer credential) redacted. */
async function withoutKeys(env: Bindings, msg: RolloutItemMessage, text: string): Promise<string> {
  const spec = await resolveSpec(env, msg.run, msg.spec).catch(() => null);
  return redactSecrets(text, spec?.inference.map((server) => server.api_key) ?? []);
}

export async function handleQueueBatch(
  batch: MessageBatch<RolloutItemMessage>,
  env: Bindings,
  _ctx: ExecutionContext,
  envs: EnvCatalog,
): Promise<void> {
  if (batch.queue.startsWith(DEAD_LETTER_QUEUE)) {
    for (const message of batch.messages) {
      if (!(await currentRun(env, message.body))) {
        logStaleItem(message.body);
        message.ack();
        continue;
      }
      await recordDeadLetter(
        env,
        message.body,
        message.attempts,
        "retries exhausted (see the Worker logs for each attempt's error)",
      );
      message.ack();
    }
    return;
  }
  // Copies of one item in the same batch would race past the idempotency check: run it once.
  const firstOfItem = new Map<string, Message<RolloutItemMessage>>();
  for (const message of batch.messages) {
    if (firstOfItem.has(message.body.itemId)) message.ack();
    else firstOfItem.set(message.body.itemId, message);
  }
  await Promise.all(
    [...firstOfItem.values()].map(async (message) => {
      const msg = message.body;
      // The one read of the run's row per item: staleness and max_token_len.
      const run = await currentRun(env, msg);
      if (!run) {
        logStaleItem(msg);
        return message.ack();
      }
      const result = await rollOutItem(env, msg, envs, { maxTokenLen: run.maxTokenLen ?? -1 });
      if (result.kind === "submitted" || result.kind === "dropped") {
        const backlog = backlogOf(msg, result.backlog);
        const envDrop = result.kind === "dropped" && result.by === "env";
        await feeder(env, msg.feeder).report(msg.itemId, {
          ok: true,
          // The env dropped the item on purpose (or returned no group): a drop, never a retry.
          dropped: envDrop ? result.reason : undefined,
          // Groups that failed send-side validation are rejections, not failures.
          rejected: envDrop ? [] : result.drops,
          scores: result.scores,
          observations: result.observations,
          submitted: result.kind === "submitted" ? result.groups : 0,
          backlogJson: JSON.stringify(backlog),
        });
        await enqueueBacklog(env, msg, backlog);
        message.ack();
        return;
      }
      // Never returned here (the consumer passes no cancel check); narrows the type.
      if (result.kind === "cancelled") return message.ack();
      // An inference server's error may echo the request's key: never log or store it.
      const error = await withoutKeys(env, msg, result.message);
      console.error(
        JSON.stringify({
          level: "error",
          msg: "rollout item failed",
          item_id: msg.itemId,
          env: msg.spec.envName,
          attempt: message.attempts,
          class: result.kind,
          error,
        }),
      );
      if (result.kind === "retryable") {
        // Exponential backoff: 2, 4, 8, … seconds (capped at 5 minutes).
        message.retry({ delaySeconds: Math.min(300, 2 ** message.attempts) });
        return;
      }
      // Permanent: retrying cannot help, so the item is dead-lettered now, not after max_retries.
      await recordDeadLetter(env, msg, message.attempts, `permanent error: ${error}`);
      message.ack();
    }),
  );
}
