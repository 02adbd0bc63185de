/**
 * Env workers never carry inference API keys in queue messages or feeder state: they use the
 * run's stored servers (keys sealed in D1, resolved where a rollout needs them), and a listed
 * server with an api_key is refused with 422 saying where to put it instead.
 */
import {
  createExecutionContext,
  createMessageBatch,
  getQueueResult,
  runInDurableObject,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import type { RolloutItemMessage } from "../../src/core/wire/queue-messages";
import type { EnvFeeder } from "../../src/worker/env-feeder";
import { handleQueueBatch, ROLLOUT_QUEUE } from "../../src/worker/queue-handler";
import { resolveSpec } from "../../src/worker/spec-inference";
import { call, post, REGISTRATION, uniqueRun } from "./helpers";
import { ConstantRewardTestEnv, FaultyTestEnv, GROUP_SIZE } from "./test-envs";
import { testEnvCatalog } from "./test-worker";

const bindings = env as unknown as Bindings;
const KEY = "sk-env-worker-key-never-on-the-queue";
const SERVER = { base_url: "http://127.0.0.1:9/v1", server_type: "vllm", model_name: "m" };

function start(run: string, body: Record<string, unknown>) {
  return post(`/v1/runs/${run}/env-workers`, {
    env: ConstantRewardTestEnv.envName,
    config: { group_size: 4, max_num_workers: 2, worker_timeout: -1 },
    ...body,
  });
}

describe("env worker inference keys", () => {
  it("refuses a listed server with an api_key, and a run without stored servers", async () => {
    const run = uniqueRun("ew-keys-refused");
    const keyed = await start(run, { inference: [{ ...SERVER, api_key: KEY }] });
    expect(keyed.status).toBe(422);
    const text = await keyed.text();
    expect(text).toContain("inference[0].api_key would travel in plaintext in every queue message");
    expect(text).toContain(`PUT /v1/runs/${run}/inference`);
    const none = await start(run, {});
    expect(none.status).toBe(422);
    expect(await none.text()).toContain(`run '${run}' has no stored inference servers`);
    const listed = await call(`/v1/runs/${run}/env-workers/${ConstantRewardTestEnv.envName}/0`);
    expect(listed.status).toBe(404);
  });

  it("refers to the run's stored servers: no key in queue messages or feeder state", async () => {
    const run = uniqueRun("ew-keys-run");
    await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 8 });
    const put = await call(`/v1/runs/${run}/inference`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([{ ...SERVER, api_key: KEY }]),
    });
    expect(put.status).toBe(200);
    expect((await start(run, {})).status).toBe(200);

    const name = `${run}/${ConstantRewardTestEnv.envName}/0`;
    const stub = bindings.ENV_FEEDER.get(bindings.ENV_FEEDER.idFromName(name));
    const sent: RolloutItemMessage[] = [];
    const stored = await runInDurableObject(stub, async (object, state) => {
      const feeder = object as unknown as EnvFeeder;
      // Messages are captured instead of sent.
      const queue = {
        sendBatch: async (batch: { body: RolloutItemMessage }[]) => {
          sent.push(...batch.map((m) => m.body));
        },
      };
      Reflect.set(feeder, "env", { ...bindings, ROLLOUT_ITEMS: queue });
      await feeder.alarm();
      return JSON.stringify(await state.storage.list());
    });
    expect(sent.length).toBeGreaterThan(0);
    expect(JSON.stringify(sent)).not.toContain(KEY);
    expect(sent[0]!.spec.inference).toBe("run");
    expect(stored).not.toContain(KEY);
    // Where a rollout runs, the reference becomes the run's servers with their key.
    const resolved = await resolveSpec(bindings, run, sent[0]!.spec);
    expect(resolved.inference).toMatchObject([{ base_url: SERVER.base_url, api_key: KEY }]);
    await stub.stop();
  });
});

describe("a failed rollout's error", () => {
  it("is logged without the run's key, even when the inference server echoed it", async () => {
    const run = uniqueRun("ew-keys-log");
    await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 8 });
    await call(`/v1/runs/${run}/inference`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([{ ...SERVER, api_key: KEY }]),
    });
    const itemId = crypto.randomUUID();
    const body: RolloutItemMessage = {
      itemId,
      run,
      feeder: `${run}/${FaultyTestEnv.envName}/0`,
      envId: 0,
      spec: {
        envName: FaultyTestEnv.envName,
        config: { group_size: GROUP_SIZE },
        inference: "run",
      },
      item: {
        key: itemId,
        failures: 1,
        message: `inference server answered 401: bad credentials 'Bearer ${KEY}' (${KEY})`,
      },
      policyVersion: 0,
      issuedAt: Date.now(),
    };
    const logged: string[] = [];
    vi.spyOn(console, "error").mockImplementation((line: unknown) => {
      logged.push(String(line));
    });
    try {
      const batch = createMessageBatch<RolloutItemMessage>(ROLLOUT_QUEUE, [
        { id: `${itemId}-0`, timestamp: new Date(), attempts: 1, body },
      ]);
      const ctx = createExecutionContext();
      await handleQueueBatch(batch, bindings, ctx, testEnvCatalog);
      expect((await getQueueResult(batch, ctx)).retryMessages).toHaveLength(1);
    } finally {
      vi.restoreAllMocks();
    }
    const line = logged.find((l) => l.includes("rollout item failed"));
    expect(line).toContain("bad credentials 'Bearer [redacted]' ([redacted])");
    expect(logged.join("\n")).not.toContain(KEY);
  });
});
