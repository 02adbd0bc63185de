/**
 * Queue consumer: one invocation runs a few rollout items. Per item: collectTrajectories →
 * postprocessHistories → Atropos' send-side validation → an idempotent in-process submission.
 * Failures retry with exponential backoff; after max_retries the item lands on the dead-letter
 * queue, whose consumer records it (visible in the run's stats) and tells the feeder.
 */
import type { Bindings } from "../api/bindings";
import { submitGroupInProcess } from "../api/ingest";
import { groupsOf, type JsonValue } from "../env-workers/base-env";
import { parseEnvConfig } from "../env-workers/config";
import { getEnvDefinition } from "../env-workers/registry";
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
  backlog: { itemId: string; item: JsonValue }[];
}

/** Runs one item end to end. Throws on failures worth retrying. */
export async function runRolloutItem(env: Bindings, msg: RolloutItemMessage): Promise<ItemOutcome> {
  const def = getEnvDefinition(msg.spec.envName);
  const cfg = parseEnvConfig(def.configSchema, msg.spec.config);
  const instance = await rolloutEnv(msg.spec);
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
    outcome.scores.push(...checked.group.scores);
  }
  const backlog = backlogItems.map((item) => ({ itemId: crypto.randomUUID(), item }));
  if (backlog.length > 0) {
    await env.ROLLOUT_ITEMS.sendBatch(
      backlog.map((b) => ({
        body: { ...msg, itemId: b.itemId, item: b.item, issuedAt: Date.now() },
      })),
    );
  }
  outcome.backlog = backlog;
  return outcome;
}

async function recordDeadLetter(env: Bindings, msg: RolloutItemMessage, attempts: number) {
  await env.DB.prepare(
    `INSERT INTO dead_letters (run, env_name, env_id, item, error, attempts, created_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`,
  )
    .bind(
      msg.run,
      msg.spec.envName,
      msg.envId,
      JSON.stringify(msg.item).slice(0, 10_000),
      "retries exhausted (see the Worker logs for each attempt's error)",
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
): Promise<void> {
  if (batch.queue.startsWith(DEAD_LETTER_QUEUE)) {
    for (const message of batch.messages) {
      await recordDeadLetter(env, message.body, message.attempts);
      message.ack();
    }
    return;
  }
  await Promise.all(
    batch.messages.map(async (message) => {
      const msg = message.body;
      try {
        const outcome = await runRolloutItem(env, msg);
        await feeder(env, msg.feeder).report(msg.itemId, {
          ok: outcome.dropped.length === 0 || outcome.submitted + outcome.duplicates > 0,
          scores: outcome.scores,
          backlogJson: JSON.stringify(outcome.backlog),
        });
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
