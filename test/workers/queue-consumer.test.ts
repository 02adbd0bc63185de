/**
 * Queue-consumer fault cases inside workerd (local D1, R2, Durable Objects): a consumer failing
 * mid-item is retried with backoff, duplicate deliveries store one group, exhausted retries and
 * permanent errors land in dead_letters (run stats) and the feeder's failed counter, and an item
 * the env drops on purpose is acked and counted as a drop with its reason.
 *
 * Inference is not involved here (the test env scores canned rollouts); the inference-fault path
 * with the real simulator over HTTP is test/e2e/env-worker-faults.test.ts.
 */
import {
  createExecutionContext,
  createMessageBatch,
  getQueueResult,
  runDurableObjectAlarm,
  runInDurableObject,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { submitGroupInProcess } from "../../src/api/ingest-submit";
import type { RolloutItemMessage } from "../../src/core/wire/queue-messages";
import { parseServerConfig } from "../../src/core/wire/server-config";
import type { EnvWorkerSpec } from "../../src/env-sdk/worker-env";
import type { FeederState, FeederSummary } from "../../src/worker/env-feeder";
import {
  DEAD_LETTER_QUEUE,
  handleQueueBatch,
  ROLLOUT_QUEUE,
  rollOutItem,
} from "../../src/worker/queue-handler";
import { call, json, post, setupRun, uniqueRun } from "./helpers";
import {
  attemptsByKey,
  type FaultItem,
  FaultyTestEnv,
  GROUP_SIZE,
  InvalidGroupTestEnv,
} from "./test-envs";
import { testEnvCatalog } from "./test-worker";

const bindings = env as unknown as Bindings;

const SPEC: EnvWorkerSpec = {
  envName: FaultyTestEnv.envName,
  config: { group_size: GROUP_SIZE, worker_timeout: -1 },
  // Never called: the test env scores canned rollouts.
  inference: [
    parseServerConfig({
      base_url: "http://127.0.0.1:9",
      server_type: "vllm",
      model_name: "unused",
    }),
  ],
};

function feederStub(name: string) {
  return bindings.ENV_FEEDER.get(bindings.ENV_FEEDER.idFromName(name));
}

/** A feeder with `itemIds` in flight, written straight to storage (no alarm: nothing is fed). */
async function seedFeeder(run: string, name: string, envId: number, itemIds: string[]) {
  const state: FeederState = {
    run,
    name,
    // gsm8k_lite: a real env for the feeder's curriculum hook (recordScores) on success.
    spec: { envName: "gsm8k_lite", config: { group_size: GROUP_SIZE }, inference: SPEC.inference },
    envId,
    status: "running",
    inFlight: Object.fromEntries(itemIds.map((id) => [id, { item: { id }, issuedAt: Date.now() }])),
    issued: itemIds.length,
    succeeded: 0,
    failed: 0,
    dropped: 0,
    rejected: 0,
    checkpoint: null,
    lastError: null,
  };
  await runInDurableObject(feederStub(name), async (_instance, ctx) => {
    await ctx.storage.put("state", state);
  });
}

async function describeFeeder(name: string): Promise<FeederSummary> {
  const summary = await feederStub(name).describe();
  if (!summary) throw new Error(`feeder ${name} has no state`);
  return summary;
}

function message(run: string, feeder: string, envId: number, itemId: string, item: FaultItem) {
  const body: RolloutItemMessage = {
    itemId,
    run,
    feeder,
    envId,
    spec: SPEC,
    item,
    policyVersion: 0,
    issuedAt: Date.now(),
  };
  return body;
}

/** Delivers `bodies` as one batch (attempt number `attempts`) and returns the ack/retry result. */
async function deliver(queue: string, bodies: RolloutItemMessage[], attempts = 1) {
  const batch = createMessageBatch<RolloutItemMessage>(
    queue,
    bodies.map((body, i) => ({
      id: `${body.itemId}-a${attempts}-${i}`,
      timestamp: new Date(),
      attempts,
      body,
    })),
  );
  // getQueueResult reports which messages were retried, not their delays: record those here.
  const delays = new Map<string, number | undefined>();
  for (const m of batch.messages) {
    const retry = m.retry.bind(m);
    m.retry = (options?: QueueRetryOptions) => {
      delays.set(m.id, options?.delaySeconds);
      retry(options);
    };
  }
  const ctx = createExecutionContext();
  await handleQueueBatch(batch, bindings, ctx, testEnvCatalog);
  const result = await getQueueResult(batch, ctx);
  return {
    explicitAcks: result.explicitAcks,
    retries: result.retryMessages.map((r: { msgId: string }) => ({
      id: r.msgId,
      delaySeconds: delays.get(r.msgId),
    })),
  };
}

async function storedGroups(run: string) {
  const { results } = await bindings.DB.prepare(
    "SELECT id, status, num_seqs FROM groups WHERE run = ?1 ORDER BY id",
  )
    .bind(run)
    .all<{ id: number; status: string; num_seqs: number }>();
  return results;
}

async function newRun(prefix: string) {
  const run = uniqueRun(prefix);
  const { envIds } = await setupRun(run, 8, [GROUP_SIZE]);
  return { run, envId: envIds[0]!, feeder: `${run}:feeder` };
}

describe("queue consumer faults", () => {
  it("checks every group with the API's rules before submitting any: an invalid one fails the item", async () => {
    const { run, envId, feeder } = await newRun("invalid-group");
    const msg: RolloutItemMessage = {
      itemId: crypto.randomUUID(),
      run,
      feeder,
      envId,
      spec: {
        envName: InvalidGroupTestEnv.envName,
        config: { group_size: GROUP_SIZE },
        inference: SPEC.inference,
      },
      item: 0,
      policyVersion: 0,
      issuedAt: Date.now(),
    };
    const result = await rollOutItem(bindings, msg, testEnvCatalog);
    expect(result).toMatchObject({ kind: "permanent" });
    expect(result.kind === "permanent" && result.message).toMatch(/tokens/);
    // The valid first group was not submitted either.
    expect(await storedGroups(run)).toEqual([]);
  });

  it("retries an item whose consumer fails mid-item, with backoff, then stores its group once", async () => {
    const { run, envId, feeder } = await newRun("crash");
    const itemId = crypto.randomUUID();
    await seedFeeder(run, feeder, envId, [itemId]);
    const body = message(run, feeder, envId, itemId, { key: itemId, failures: 1 });

    const first = await deliver(ROLLOUT_QUEUE, [body], 1);
    expect(first.explicitAcks).toEqual([]);
    expect(first.retries).toEqual([{ id: `${itemId}-a1-0`, delaySeconds: 2 }]);
    expect(await storedGroups(run)).toEqual([]);
    expect((await describeFeeder(feeder)).in_flight).toBe(1);

    const second = await deliver(ROLLOUT_QUEUE, [body], 2);
    expect(second.explicitAcks).toEqual([`${itemId}-a2-0`]);
    expect(second.retries).toEqual([]);
    const groups = await storedGroups(run);
    expect(groups).toHaveLength(1);
    expect(groups[0]!.num_seqs).toBe(GROUP_SIZE);
    const summary = await describeFeeder(feeder);
    expect(summary).toMatchObject({ in_flight: 0, succeeded: 1, failed: 0 });
  });

  it("counts a group dropped by send-side validation as a rejection, not a failure", async () => {
    const { run, envId, feeder } = await newRun("reject");
    const itemId = crypto.randomUUID();
    await seedFeeder(run, feeder, envId, [itemId]);
    const body = message(run, feeder, envId, itemId, {
      key: itemId,
      failures: 0,
      identicalScores: true,
    });
    const result = await deliver(ROLLOUT_QUEUE, [body], 1);
    expect(result.explicitAcks).toEqual([`${itemId}-a1-0`]);
    expect(await storedGroups(run)).toEqual([]);
    expect(await describeFeeder(feeder)).toMatchObject({
      in_flight: 0,
      succeeded: 1,
      failed: 0,
      rejected: 1,
      drop_reasons: { "all scores identical (N)": 1 },
    });
  });

  it("acks an item the env drops on purpose, counting it as a drop with its reason, without a retry or a dead letter", async () => {
    const { run, envId, feeder } = await newRun("dropgroup");
    const itemId = crypto.randomUUID();
    await seedFeeder(run, feeder, envId, [itemId]);
    const body = message(run, feeder, envId, itemId, { key: itemId, failures: 0, throws: "drop" });

    const result = await deliver(ROLLOUT_QUEUE, [body], 1);
    expect(result.explicitAcks).toEqual([`${itemId}-a1-0`]);
    expect(result.retries).toEqual([]);
    expect(attemptsByKey.get(itemId)).toBe(1);
    expect(await storedGroups(run)).toEqual([]);
    const summary = await describeFeeder(feeder);
    expect(summary).toMatchObject({
      in_flight: 0,
      succeeded: 0,
      failed: 0,
      dropped: 1,
      rejected: 0,
      drop_reasons: { "too few judges answered (N of N)": 1 },
    });
    expectEveryItemAccounted(summary);
    const stats = await json<{ dead_letters: { count: number } }>(call(`/v1/runs/${run}/stats`));
    expect(stats.dead_letters.count).toBe(0);
  });

  it("dead-letters an item that fails with a bug at once, without wasting retries", async () => {
    const { run, envId, feeder } = await newRun("bug");
    const itemId = crypto.randomUUID();
    await seedFeeder(run, feeder, envId, [itemId]);
    const body = message(run, feeder, envId, itemId, { key: itemId, failures: 0, throws: "bug" });

    const result = await deliver(ROLLOUT_QUEUE, [body], 1);
    expect(result.explicitAcks).toEqual([`${itemId}-a1-0`]);
    expect(result.retries).toEqual([]);
    const stats = await json<{ dead_letters: { count: number; recent: { error: string }[] } }>(
      call(`/v1/runs/${run}/stats`),
    );
    expect(stats.dead_letters.count).toBe(1);
    expect(stats.dead_letters.recent[0]!.error).toMatch(
      new RegExp(`^item ${itemId}: permanent error: .*null`),
    );
    const summary = await describeFeeder(feeder);
    expect(summary).toMatchObject({ in_flight: 0, succeeded: 0, failed: 1, dropped: 0 });
    expectEveryItemAccounted(summary);

    // A redelivery (at least once) neither fails the item twice nor adds a row.
    await deliver(ROLLOUT_QUEUE, [body], 1);
    expect(await describeFeeder(feeder)).toMatchObject({ failed: 1 });
    const again = await json<{ dead_letters: { count: number } }>(call(`/v1/runs/${run}/stats`));
    expect(again.dead_letters.count).toBe(1);
  });

  it("acks and retries per message: one failing item does not hold back the others", async () => {
    const { run, envId, feeder } = await newRun("mixed");
    const good = crypto.randomUUID();
    const bad = crypto.randomUUID();
    await seedFeeder(run, feeder, envId, [good, bad]);
    const result = await deliver(
      ROLLOUT_QUEUE,
      [
        message(run, feeder, envId, good, { key: good, failures: 0 }),
        message(run, feeder, envId, bad, { key: bad, failures: 3 }),
      ],
      3,
    );
    expect(result.explicitAcks).toEqual([`${good}-a3-0`]);
    // Exponential backoff: 2^attempts seconds.
    expect(result.retries).toEqual([{ id: `${bad}-a3-1`, delaySeconds: 8 }]);
    expect(await storedGroups(run)).toHaveLength(1);
    expect(await describeFeeder(feeder)).toMatchObject({ in_flight: 1, succeeded: 1 });
  });

  it("stores one group when the same message is delivered again after success", async () => {
    const { run, envId, feeder } = await newRun("redeliver");
    const itemId = crypto.randomUUID();
    await seedFeeder(run, feeder, envId, [itemId]);
    const body = message(run, feeder, envId, itemId, { key: itemId, failures: 0 });

    const first = await deliver(ROLLOUT_QUEUE, [body], 1);
    const again = await deliver(ROLLOUT_QUEUE, [body], 1);
    expect(first.explicitAcks).toHaveLength(1);
    expect(again.explicitAcks).toHaveLength(1);
    // The env really ran twice and produced different content both times.
    expect(attemptsByKey.get(itemId)).toBe(2);
    expect(await storedGroups(run)).toHaveLength(1);
    const keys = await bindings.DB.prepare(
      "SELECT key FROM idempotency_keys WHERE run = ?1 ORDER BY key",
    )
      .bind(run)
      .all<{ key: string }>();
    expect(keys.results.map((r) => r.key)).toEqual([`item:${itemId}:0`]);
    // The second report is for an item no longer in flight: counted once. (The report also
    // refilled the freed slot, so in_flight is whatever the feeder issued since.)
    const summary = await describeFeeder(feeder);
    expect(summary).toMatchObject({ succeeded: 1, failed: 0 });
    expectEveryItemAccounted(summary);
    // The freed slot is refilled by an early tick, 1/50 of the regular interval after the
    // report (ticks run by hand here: FEEDER_TICK_MS is an hour in this suite).
    const tickMs = Number(bindings.FEEDER_TICK_MS);
    const alarm = await runInDurableObject(feederStub(feeder), (_, state) =>
      state.storage.getAlarm(),
    );
    expect(alarm).not.toBeNull();
    expect(alarm! - Date.now()).toBeLessThanOrEqual(tickMs / 50);
    expect(await runDurableObjectAlarm(feederStub(feeder))).toBe(true);
    expect((await describeFeeder(feeder)).in_flight).toBeGreaterThan(0);
  });

  it("stores one group when duplicate copies of a message arrive in the same batch", async () => {
    const { run, envId, feeder } = await newRun("dupbatch");
    const itemId = crypto.randomUUID();
    await seedFeeder(run, feeder, envId, [itemId]);
    const body = message(run, feeder, envId, itemId, { key: itemId, failures: 0 });
    const result = await deliver(ROLLOUT_QUEUE, [body, body, body], 1);
    expect(result.explicitAcks).toHaveLength(3);
    expect(result.retries).toEqual([]);
    expect(await storedGroups(run)).toHaveLength(1);
    expect(await describeFeeder(feeder)).toMatchObject({ in_flight: 0, succeeded: 1 });
  });

  it("records exhausted items as dead letters, visible in run stats and the feeder's failed counter", async () => {
    const { run, envId, feeder } = await newRun("dlq");
    const itemId = crypto.randomUUID();
    await seedFeeder(run, feeder, envId, [itemId]);
    const body = message(run, feeder, envId, itemId, { key: itemId, failures: 99 });

    // The main queue retries up to max_retries (5); every attempt fails.
    for (let attempt = 1; attempt <= 5; attempt++) {
      const result = await deliver(ROLLOUT_QUEUE, [body], attempt);
      expect(result.retries).toEqual([
        { id: `${itemId}-a${attempt}-0`, delaySeconds: 2 ** attempt },
      ]);
    }
    // Then the platform moves it to the dead-letter queue, whose consumer records it.
    const dead = await deliver(DEAD_LETTER_QUEUE, [body], 1);
    expect(dead.explicitAcks).toEqual([`${itemId}-a1-0`]);
    expect(await storedGroups(run)).toEqual([]);

    const stats = await json<{ dead_letters: { count: number; recent: { env_id: number }[] } }>(
      call(`/v1/runs/${run}/stats`),
    );
    expect(stats.dead_letters.count).toBe(1);
    expect(stats.dead_letters.recent[0]!.env_id).toBe(envId);
    const summary = await describeFeeder(feeder);
    expect(summary).toMatchObject({ succeeded: 0, failed: 1 });
    expectEveryItemAccounted(summary);

    // A duplicate dead-letter delivery is neither a second failure nor a second row.
    await deliver(DEAD_LETTER_QUEUE, [body], 2);
    expect(await describeFeeder(feeder)).toMatchObject({ failed: 1 });
    const again = await json<{ dead_letters: { count: number } }>(call(`/v1/runs/${run}/stats`));
    expect(again.dead_letters.count).toBe(1);
  });

  it("drops items issued before a reset instead of writing them into the run's new data", async () => {
    const { run, envId, feeder } = await newRun("stale");
    const live = crypto.randomUUID();
    const dead = crypto.randomUUID();
    const issuedBefore = [
      message(run, feeder, envId, live, { key: live, failures: 0 }),
      message(run, feeder, envId, dead, { key: dead, failures: 0 }),
    ];
    // Issued a moment before the reset, still on the queue when it happens (the run the reset
    // recreates is created at or after now, so later than these).
    for (const m of issuedBefore) m.issuedAt = Date.now() - 1;
    expect(await (await call(`/runs/${run}/reset_data`)).text()).toBe("Reset successful");

    // Gone run: nothing is written, not even a dead letter.
    const whileGone = await deliver(ROLLOUT_QUEUE, [issuedBefore[0]!], 1);
    expect(whileGone.explicitAcks).toEqual([`${live}-a1-0`]);

    // A new trainer and env 0 registered after the reset get none of the old items' data.
    const { envIds } = await setupRun(run, 8, [GROUP_SIZE]);
    expect(envIds[0]).toBe(envId);
    const later = await deliver(ROLLOUT_QUEUE, [issuedBefore[0]!], 2);
    expect(later.explicitAcks).toEqual([`${live}-a2-0`]);
    const deadLetter = await deliver(DEAD_LETTER_QUEUE, [issuedBefore[1]!], 1);
    expect(deadLetter.explicitAcks).toEqual([`${dead}-a1-0`]);
    expect(await storedGroups(run)).toEqual([]);
    const stats = await json<{ dead_letters: { count: number } }>(call(`/v1/runs/${run}/stats`));
    expect(stats.dead_letters.count).toBe(0);

    // An item issued after the new registration is rolled out as usual.
    const fresh = crypto.randomUUID();
    await deliver(ROLLOUT_QUEUE, [message(run, feeder, envId, fresh, { key: fresh, failures: 0 })]);
    expect(await storedGroups(run)).toHaveLength(1);
  });
});

/** Every issued item is in flight, succeeded, failed or dropped: exactly one of them. */
function expectEveryItemAccounted(summary: {
  issued: number;
  in_flight: number;
  succeeded: number;
  failed: number;
  dropped: number;
}) {
  expect(summary.in_flight).toBe(
    summary.issued - summary.succeeded - summary.failed - summary.dropped,
  );
}

describe("in-process submission", () => {
  it("stores one group when two deliveries of an item submit different samples at the same time", async () => {
    const run = uniqueRun("race");
    const { base, envIds } = await setupRun(run, 8, [GROUP_SIZE]);
    const sample = (attempt: number) => ({
      tokens: Array.from({ length: GROUP_SIZE }, (_, s) => [attempt, s, 1, 2]),
      masks: Array.from({ length: GROUP_SIZE }, (_, s) => [-100, s, 1, 2]),
      scores: [1, 0, 1, 0],
      env_id: envIds[0]!,
    });
    const results = await Promise.all(
      [1, 2, 3].map((attempt) => submitGroupInProcess(bindings, run, sample(attempt), "item:x:0")),
    );
    expect(results.filter((r) => r.status === "duplicate")).toHaveLength(2);
    expect((await json<{ queue_size: number }>(call(`${base}/status`))).queue_size).toBe(1);
  });

  it("refuses an item the run's limits refuse without using its key, so a fixed redelivery is stored", async () => {
    const run = uniqueRun("refused-item");
    const { base, envIds } = await setupRun(run, 8, [GROUP_SIZE], { maxTokenLen: 4 });
    const sample = (length: number, envId: number) => ({
      tokens: Array.from({ length: GROUP_SIZE }, (_, s) => Array.from({ length }, (_, i) => s + i)),
      masks: Array.from({ length: GROUP_SIZE }, (_, s) => Array.from({ length }, (_, i) => s + i)),
      scores: [1, 0, 1, 0],
      env_id: envId,
    });
    await expect(
      submitGroupInProcess(bindings, run, sample(5, envIds[0]!), "item:y:0"),
    ).rejects.toThrow(/max_token_len \(4/);
    await expect(
      submitGroupInProcess(bindings, run, sample(4, envIds[0]! + 7), "item:y:0"),
    ).rejects.toThrow(/is not registered/);
    expect((await json<{ queue_size: number }>(call(`${base}/status`))).queue_size).toBe(0);
    const stored = await submitGroupInProcess(bindings, run, sample(4, envIds[0]!), "item:y:0");
    expect(stored.status).toBe("received");
    expect((await json<{ queue_size: number }>(call(`${base}/status`))).queue_size).toBe(1);
  });

  it("answers 503 'send it again' when the limits change between a refusing commit and its explanation", async () => {
    const run = uniqueRun("limits-changed");
    const { base, envIds } = await setupRun(run, 8, [GROUP_SIZE]);
    const next = envIds[0]! + 1;
    const group = {
      tokens: Array.from({ length: GROUP_SIZE }, (_, s) => [s, 1, 2]),
      masks: Array.from({ length: GROUP_SIZE }, () => [-100, 1, 2]),
      scores: [1, 0, 1, 0],
      env_id: next,
    };
    // The env the group names registers right after the commit that refused it, before the
    // refusal is explained: that order cannot be arranged from outside the binding.
    let registered = false;
    const db = new Proxy(bindings.DB, {
      get(target, prop) {
        if (prop !== "batch") {
          const value = Reflect.get(target, prop);
          return typeof value === "function" ? value.bind(target) : value;
        }
        return async (statements: D1PreparedStatement[]) => {
          const results = await target.batch(statements);
          if (!registered) {
            registered = true;
            const env = await json<{ env_id: number }>(
              post(`${base}/register-env`, {
                max_token_length: 1024,
                desired_name: "late",
                weight: 1,
                group_size: GROUP_SIZE,
              }),
            );
            expect(env.env_id).toBe(next);
          }
          return results;
        };
      },
    });
    await expect(
      submitGroupInProcess({ ...bindings, DB: db }, run, group, "item:late:0"),
    ).rejects.toMatchObject({ status: 503, message: expect.stringMatching(/send it again/) });
    expect(registered).toBe(true);
    expect((await json<{ queue_size: number }>(call(`${base}/status`))).queue_size).toBe(0);
    // Sent again, it is stored under the same key: the refusal used nothing up.
    const stored = await submitGroupInProcess(bindings, run, group, "item:late:0");
    expect(stored.status).toBe("received");
    expect((await json<{ queue_size: number }>(call(`${base}/status`))).queue_size).toBe(1);
  });
});
