/**
 * /reset_data removes ALL of a run's data: every D1 table that holds run data, the R2 payloads,
 * the env checkpoints (EnvSession) and the env workers (EnvFeeder). The D1 tables are read from
 * sqlite_master, so a new table fails this test until it gets a reset rule (or is declared not
 * to hold run data below).
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { call, group, json, post, setupRun, uniqueRun } from "./helpers";
import { IdleTestEnv } from "./test-envs";

const bindings = env as unknown as Bindings;

/**
 * Tables that hold no run data: migration bookkeeping, SQLite/D1 internals, and API tokens with
 * their quota usage (a reset must leave access control alone; test/workers/api-scopes.test.ts).
 */
const NON_RUN_TABLES = new Set([
  "d1_migrations",
  "sqlite_sequence",
  "_cf_KV",
  "_cf_METADATA",
  "api_tokens",
  "token_usage",
  // Never holds a row: its trigger ignores or aborts every insert.
  "lease_plan_checks",
]);

/** The column naming the run; every run-data table has one. */
const runColumn = (table: string) => (table === "runs" ? "name" : "run");

async function runDataTables(): Promise<string[]> {
  const { results } = await bindings.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
  ).all<{ name: string }>();
  return results.map((r) => r.name).filter((name) => !NON_RUN_TABLES.has(name));
}

async function rowsOfRun(table: string, run: string): Promise<number> {
  const columns = await bindings.DB.prepare(`SELECT name FROM pragma_table_info('${table}')`).all<{
    name: string;
  }>();
  const column = runColumn(table);
  if (!columns.results.some((c) => c.name === column)) {
    throw new Error(
      `table ${table} has no '${column}' column: give it one and a reset rule (RunCoordinator.reset), or list it in NON_RUN_TABLES`,
    );
  }
  const row = await bindings.DB.prepare(`SELECT COUNT(*) AS n FROM "${table}" WHERE ${column} = ?1`)
    .bind(run)
    .first<{ n: number }>();
  return row!.n;
}

describe("reset", () => {
  it("removes every piece of the run's data, and only that run's", async () => {
    const run = uniqueRun("reset-all");
    const keep = uniqueRun("reset-keep");
    const { base, envIds } = await setupRun(run, 4, [4], { maxTokenLen: 16_384 });
    await setupRun(keep, 4, [4]);
    const envId = envIds[0]!;
    expect(envId).toBe(0);
    await post(`/runs/${keep}/scored_data`, group(1, 4, 0));

    // Fill every kind of run data.
    const withTexts = group(1, 4, envId);
    const tokenTexts = withTexts.tokens.map((seq) => seq.map((t) => `t${t}`));
    await post(
      `${base}/scored_data`,
      { ...withTexts, token_texts: tokenTexts },
      { "idempotency-key": "k-1" },
    );
    // Large enough for R2 (smaller groups are stored inline in their D1 row).
    const trajectory = {
      task: "t",
      steps: [],
      final_response: null,
      success: null,
      judge_score: null,
      token_count: 6,
      wall_time_ms: 1,
      sequence: 0,
      source: "env",
    };
    await post(`${base}/scored_data`, {
      ...group(2, 4, envId, 12_000),
      trajectories: [trajectory],
    });
    // Replay keeps acked groups whose mean score (0.5 here) reaches the threshold.
    const replay = await call(`/v1/runs/${run}/replay`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ enabled: true, threshold: 0.4 }),
    });
    expect(replay.status).toBe(200);
    const leased = await post(`/v1/runs/${run}/batches/lease`, {});
    expect(leased.status).toBe(200);
    const { batch_id } = await leased.json<{ batch_id: string }>();
    expect((await post(`/v1/runs/${run}/batches/${batch_id}/ack`, {})).status).toBe(200);
    await post(`${base}/scored_data`, group(3, 4, envId));
    const servers = [{ base_url: "http://127.0.0.1:9/v1", server_type: "vllm" }];
    const inference = await call(`/v1/runs/${run}/inference`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(servers),
    });
    expect(inference.status).toBe(200);
    expect((await post(`/v1/runs/${run}/atropos-proxy/sessions/create`, {})).status).toBe(200);
    const saved = await call(`/v1/runs/${run}/envs/${envId}/checkpoints/5`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ position: 17 }),
    });
    expect(saved.status).toBe(200);
    await post(`/v1/runs/${run}/envs/${envId}/evals`, { step: 1, metrics: { accuracy: 0.5 } });
    // The regression guard: its settings, the baseline above, and an event for a drop.
    const guard = await call(`/v1/runs/${run}/guard`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ factor: 0.9 }),
    });
    expect(guard.status).toBe(200);
    await post(`/v1/runs/${run}/envs/${envId}/evals`, { step: 2, metrics: { accuracy: 0.1 } });
    await bindings.DB.prepare(
      `INSERT INTO dead_letters (run, env_name, env_id, item, error, attempts, created_at)
       VALUES (?1, 'x', ?2, '{}', 'item i: retries exhausted', 5, ?3)`,
    )
      .bind(run, envId, Date.now())
      .run();
    expect((await post(`/v1/runs/${run}/tasks`, { name: "t", difficulty: 2 })).status).toBe(200);
    await bindings.DB.prepare(
      "INSERT INTO task_groups (run, group_id, task, token_id, score_mean, created_at) VALUES (?1, 1, 't', NULL, 0.5, ?2)",
    )
      .bind(run, Date.now())
      .run();
    const started = await post(`/v1/runs/${run}/env-workers`, {
      env: IdleTestEnv.envName,
      config: { group_size: 4 },
      inference: [{ base_url: "http://127.0.0.1:9", server_type: "vllm", model_name: "unused" }],
    });
    expect(started.status).toBe(200);
    const feederName = `${run}/${IdleTestEnv.envName}/0`;
    const feeder = bindings.ENV_FEEDER.get(bindings.ENV_FEEDER.idFromName(feederName));
    // Its first tick registers it (env 1) and reports its stats; the alarm may already be
    // running on its own.
    for (let i = 0; (await rowsOfRun("worker_stats", run)) === 0; i++) {
      if (i > 100) throw new Error("the env worker never registered");
      await runDurableObjectAlarm(feeder);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await feeder.describe())!.env_id).toBe(1);

    const tables = await runDataTables();
    for (const table of tables) {
      expect(await rowsOfRun(table, run), `${table} has rows before the reset`).toBeGreaterThan(0);
    }
    const payloads = () => bindings.PAYLOADS.list({ prefix: `runs/${run}/` });
    expect((await payloads()).objects.length).toBeGreaterThan(0);

    const reset = await call(`${base}/reset_data`);
    expect(await reset.text()).toBe("Reset successful");

    for (const table of tables) {
      expect(await rowsOfRun(table, run), `${table} still has rows of the run`).toBe(0);
    }
    expect((await payloads()).objects).toEqual([]);
    // The env worker is gone, not just idle: no state, no alarm that could re-register it.
    expect(await feeder.describe()).toBeNull();
    expect(await runDurableObjectAlarm(feeder)).toBe(false);
    expect((await call(`/v1/runs/${run}/env-workers/${IdleTestEnv.envName}/0`)).status).toBe(404);

    // A new env 0 starts from nothing.
    const again = await setupRun(run, 4, [4]);
    expect(again.envIds).toEqual([0]);
    expect((await call(`/v1/runs/${run}/envs/0/checkpoints/latest`)).status).toBe(404);
    expect(await json(call(`/v1/runs/${run}/envs/0/checkpoints`))).toEqual({ checkpoints: [] });

    // Other runs are untouched.
    expect(await json(call(`/runs/${keep}/status`))).toEqual({ current_step: 0, queue_size: 1 });
  });
});
