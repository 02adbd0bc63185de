/**
 * Queue consumer: one invocation runs a few rollout items. Per item: collectTrajectories →
 * postprocessHistories → Atropos' send-side validation → an idempotent in-process submission.
 * Failures retry with exponential backoff; after max_retries the item lands on the dead-letter
 * queue, whose consumer records it (visible in the run's stats) and tells the feeder.
 * Delivery is at least once, so every step is idempotent per item id: group submissions are keyed
 * item:{id}:{i}, backlog items get ids derived from their parent's, the feeder counts an item once
 * and a dead letter is recorded once.
 */
import type { Bindings } from "../api/bindings";
import { submitGroupInProcess } from "../api/ingest";
import { groupsOf, type JsonValue } from "../env-workers/base-env";
import { parseEnvConfig } from "../env-workers/config";
import type { EnvCatalog } from "../env-workers/env-catalog";
import { validateGroupForSend } from "../env-workers/send-validation";
import { rolloutEnv } from "../env-workers/worker-env";
import type { RolloutItemMessage } from "./messages";

export const ROLLOUT_QUEUE = "rollout-items";
export const DEAD_LETTER_QUEUE = "rollout-items-dlq";

function feeder(env: Bindings, name: string) {
  return env.ENV_FEEDER.get(env.ENV_FEEDER.idFromName(name));
}

async function withTimeout<T>(promise: Promise<T>, seconds: number, what: string): Promise<T> {
  if (seconds <= 0) return promise;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} exceeded worker_timeout (${seconds} s)`)),
      seconds * 1000,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export interface ItemOutcome {
  submitted: number;
  duplicates: number;
  dropped: string[];
  scores: number[];
  /** Items collectTrajectories asked to run next; not yet enqueued (see enqueueBacklog). */
  backlog: { itemId: string; item: JsonValue }[];
}

/** Runs one item up to its submission. Throws on failures worth retrying. */
export async function runRolloutItem(
  env: Bindings,
  msg: RolloutItemMessage,
  envs: EnvCatalog,
): Promise<ItemOutcome> {
  const def = envs.get(msg.spec.envName);
  const cfg = parseEnvConfig(def.configSchema, msg.spec.config);
  const instance = await rolloutEnv(msg.spec, def, env.PAYLOADS);
  const [collected, backlogItems] = await withTimeout(
    instance.collectTrajectories(msg.item as JsonValue),
    cfg.worker_timeout,
    `collectTrajectories(${msg.spec.envName})`,
  );
  const processed = groupsOf(await instance.postprocessHistories(collected));
  const run = await env.DB.prepare("SELECT max_token_len FROM runs WHERE name = ?1")
    .bind(msg.run)
    .first<{ max_token_len: number }>();
  const outcome: ItemOutcome = {
    submitted: 0,
    duplicates: 0,
    dropped: [],
    scores: [],
    backlog: [],
  };
  for (const [i, group] of processed.entries()) {
    // Curriculum feedback needs every scored group, including those dropped below (e.g. an
    // all-correct group with identical scores is exactly the signal to advance difficulty).
    if (Array.isArray(group.scores)) outcome.scores.push(...group.scores);
    const checked = validateGroupForSend(group, {
      groupSize: cfg.group_size,
      ensureScoresAreNotSame: cfg.ensure_scores_are_not_same,
      maxTokenLen: run?.max_token_len ?? -1,
      includeMessages: cfg.include_messages,
      abortOnMaxLength: true,
    });
    if (!checked.ok) {
      outcome.dropped.push(checked.reason);
      continue;
    }
    const result = await submitGroupInProcess(
      env,
      msg.run,
      { ...checked.group, env_id: msg.envId, policy_version: msg.policyVersion },
      `item:${msg.itemId}:${i}`,
    );
    if (result.status === "duplicate") outcome.duplicates++;
    else outcome.submitted++;
  }
  // Derived ids: a redelivered parent re-sends the same backlog items, whose groups then dedupe.
  outcome.backlog = backlogItems.map((item, j) => ({ itemId: `${msg.itemId}.b${j}`, item }));
  return outcome;
}

/**
 * Sends backlog items to the queue. Called after the feeder has recorded them as in flight, so a
 * backlog item that finishes quickly is never reported before the feeder knows it.
 */
export async function enqueueBacklog(
  env: Bindings,
  msg: RolloutItemMessage,
  backlog: ItemOutcome["backlog"],
): Promise<void> {
  for (let i = 0; i < backlog.length; i += 100) {
    await env.ROLLOUT_ITEMS.sendBatch(
      backlog.slice(i, i + 100).map((b) => ({
        body: { ...msg, itemId: b.itemId, item: b.item, issuedAt: Date.now() },
      })),
    );
  }
}

/** One row per item, however often the dead-letter queue delivers it (the error names the id). */
async function recordDeadLetter(env: Bindings, msg: RolloutItemMessage, attempts: number) {
  await env.DB.prepare(
    `INSERT INTO dead_letters (run, env_name, env_id, item, error, attempts, created_at)
     SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
     WHERE NOT EXISTS (SELECT 1 FROM dead_letters WHERE run = ?1 AND error = ?5)`,
  )
    .bind(
      msg.run,
      msg.spec.envName,
      msg.envId,
      JSON.stringify(msg.item).slice(0, 10_000),
      `item ${msg.itemId}: retries exhausted (see the Worker logs for each attempt's error)`,
      attempts,
      Date.now(),
    )
    .run();
  await feeder(env, msg.feeder).report(msg.itemId, { ok: false });
}

export async function handleQueueBatch(
  batch: MessageBatch<RolloutItemMessage>,
  env: Bindings,
  _ctx: ExecutionContext,
  envs: EnvCatalog,
): Promise<void> {
  if (batch.queue.startsWith(DEAD_LETTER_QUEUE)) {
    for (const message of batch.messages) {
      await recordDeadLetter(env, message.body, message.attempts);
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
      try {
        const outcome = await runRolloutItem(env, msg, envs);
        await feeder(env, msg.feeder).report(msg.itemId, {
          // The item ran; groups that failed send-side validation are rejections, not failures.
          ok: true,
          rejected: outcome.dropped.length,
          scores: outcome.scores,
          backlogJson: JSON.stringify(outcome.backlog),
        });
        await enqueueBacklog(env, msg, outcome.backlog);
        message.ack();
      } catch (error) {
        console.error(
          JSON.stringify({
            level: "error",
            msg: "rollout item failed",
            item_id: msg.itemId,
            env: msg.spec.envName,
            attempt: message.attempts,
            error: error instanceof Error ? error.message : String(error),
          }),
        );
        // Exponential backoff: 2, 4, 8, … seconds (capped at 5 minutes).
        message.retry({ delaySeconds: Math.min(300, 2 ** message.attempts) });
      }
    }),
  );
}
