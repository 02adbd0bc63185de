import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, callWith, group, json, post, setupRun, uniqueRun } from "./helpers";

interface Manifest {
  group_id: number;
  policy_version: number;
  num_seqs: number;
  replayed: boolean;
}
interface Leased {
  batch_id: string;
  groups: Manifest[];
  batch: { tokens: number[][]; scores: number[] }[];
}

/** A group of `size` sequences whose every score is `score`. */
function scored(seed: number, size: number, envId: number, score: number) {
  return { ...group(seed, size, envId), scores: Array.from({ length: size }, () => score) };
}

function putReplay(run: string, body: unknown) {
  return call(`/v1/runs/${run}/replay`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** POST /replay/groups without an Idempotency-Key: the body names the submission. */
function importReplay(run: string, groups: unknown[]) {
  return call(`/v1/runs/${run}/replay/groups`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(groups),
  });
}

async function leaseAndAck(run: string, body: unknown = {}): Promise<Leased> {
  const res = await post(`/v1/runs/${run}/batches/lease`, body);
  expect(res.status).toBe(200);
  const leased = await res.json<Leased>();
  expect((await post(`/v1/runs/${run}/batches/${leased.batch_id}/ack`, {})).status).toBe(200);
  return leased;
}

describe("replay buffer and mixing", () => {
  it("is off by default: nothing is kept or replayed", async () => {
    const run = uniqueRun("replay-off");
    const { base, envIds } = await setupRun(run, 4, [2]);
    for (let i = 0; i < 4; i++) await post(`${base}/scored_data`, scored(i, 2, envIds[0]!, 1));
    await leaseAndAck(run);
    const second = await leaseAndAck(run);
    expect(second.groups.every((g) => !g.replayed)).toBe(true);
    expect(await json(call(`/v1/runs/${run}/replay`))).toMatchObject({
      enabled: false,
      threshold: 0.7,
      max_replays: 1,
      fraction: 0.3,
      buffered_groups: 0,
      replayed_sequences: 0,
    });
  });

  it("mixes replayed groups at the configured fraction; online groups are delivered once", async () => {
    const run = uniqueRun("replay-mix");
    const { base, envIds } = await setupRun(run, 8, [2]);
    const envId = envIds[0]!;
    const set = await putReplay(run, { enabled: true, fraction: 0.25, capacity: 100 });
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({
      enabled: true,
      threshold: 0.7,
      capacity: 100,
      max_replays: 1,
      fraction: 0.25,
    });

    // Two batches of online data: half of them good enough to keep (mean score 1 ≥ 0.7).
    let seed = 0;
    for (let i = 0; i < 8; i++) {
      await post(`${base}/scored_data`, scored(seed++, 2, envId, i % 2 === 0 ? 1 : 0.2));
    }
    const first = await leaseAndAck(run);
    expect(first.groups.some((g) => g.replayed)).toBe(false);
    const kept = await json<{ buffered_groups: number }>(call(`/v1/runs/${run}/replay`));
    expect(kept.buffered_groups).toBe(2);

    const online = new Set(first.groups.map((g) => g.group_id));
    let replayedSeqs = 0;
    let totalSeqs = first.groups.reduce((s, g) => s + g.num_seqs, 0);
    for (let b = 0; b < 6; b++) {
      for (let i = 0; i < 3; i++) {
        await post(`${base}/scored_data`, scored(seed++, 2, envId, i === 0 ? 0.9 : 0.1));
      }
      const leased = await leaseAndAck(run);
      const seqs = leased.groups.reduce((s, g) => s + g.num_seqs, 0);
      expect(seqs).toBe(8);
      expect(leased.batch).toHaveLength(leased.groups.length);
      const replayed = leased.groups.filter((g) => g.replayed);
      // 25% of 8 sequences = 2 groups of 2, within one group, whenever the buffer has them.
      const inBatch = replayed.reduce((s, g) => s + g.num_seqs, 0);
      expect(Math.abs(inBatch - 2)).toBeLessThanOrEqual(2);
      for (const g of leased.groups) {
        if (g.replayed) {
          expect(online.has(g.group_id)).toBe(true);
        } else {
          expect(online.has(g.group_id)).toBe(false);
          online.add(g.group_id);
        }
      }
      replayedSeqs += inBatch;
      totalSeqs += seqs;
    }
    // Over the run: about the configured fraction of all sequences came from the buffer.
    expect(replayedSeqs / totalSeqs).toBeGreaterThan(0.15);
    expect(replayedSeqs / totalSeqs).toBeLessThanOrEqual(0.25);
    const status = await json<{ replayed_sequences: number }>(call(`/v1/runs/${run}/replay`));
    expect(status.replayed_sequences).toBe(replayedSeqs);

    // GET …/batches (the dashboard's batches page) says which groups were replays.
    const page = await json<{
      batches: {
        replayed_groups: number;
        num_groups: number;
        groups: { id: number; replayed: boolean }[];
      }[];
    }>(call(`/v1/runs/${run}/batches`));
    expect(page.batches).toHaveLength(7);
    const listed = page.batches.flatMap((b) => b.groups.filter((g) => g.replayed));
    expect(listed.reduce((n) => n + 2, 0)).toBe(replayedSeqs);
    expect(listed.length).toBeGreaterThan(0);
    for (const b of page.batches) {
      expect(b.replayed_groups).toBe(b.groups.filter((g) => g.replayed).length);
    }
    // The first batch was all online.
    expect(page.batches.at(-1)!.replayed_groups).toBe(0);
  });

  it("replays each group at most max_replays times, highest score first, within the staleness bound", async () => {
    const run = uniqueRun("replay-bound");
    const { base, envIds } = await setupRun(run, 4, [1]);
    const envId = envIds[0]!;
    await putReplay(run, { enabled: true, fraction: 0.25, max_replays: 1, capacity: 2 });
    // Three keepable groups of 1 sequence; capacity 2 keeps the two best (0.9 and 0.95).
    const scores = [0.8, 0.95, 0.9, 0.1];
    for (const [i, score] of scores.entries()) {
      await post(`${base}/scored_data`, scored(i, 1, envId, score));
    }
    const first = await leaseAndAck(run);
    const idOf = (score: number) => first.groups[scores.indexOf(score)]!.group_id;
    expect(await json(call(`/v1/runs/${run}/replay`))).toMatchObject({
      buffered_groups: 2,
      replays_left: 2,
    });

    for (let i = 0; i < 3; i++) await post(`${base}/scored_data`, scored(10 + i, 1, envId, 0));
    const second = await leaseAndAck(run);
    expect(second.groups.filter((g) => g.replayed).map((g) => g.group_id)).toEqual([idOf(0.95)]);

    // The other kept group was sampled at policy v0: a lease with max_staleness 1 at v5 cannot
    // replay it, and forms an online-only batch.
    await post(`/v1/runs/${run}/policy`, { version: 5 });
    for (let i = 0; i < 4; i++) await post(`${base}/scored_data`, scored(20 + i, 1, envId, 0));
    const bounded = await leaseAndAck(run, { max_staleness: 1 });
    expect(bounded.groups.some((g) => g.replayed)).toBe(false);
    const later = await json<{ buffered_groups: number }>(call(`/v1/runs/${run}/replay`));
    expect(later.buffered_groups).toBe(1);

    // Without a bound it is replayed once, then never again.
    for (let i = 0; i < 3; i++) await post(`${base}/scored_data`, scored(30 + i, 1, envId, 0));
    const third = await leaseAndAck(run);
    expect(third.groups.filter((g) => g.replayed).map((g) => g.group_id)).toEqual([idOf(0.9)]);
    for (let i = 0; i < 4; i++) await post(`${base}/scored_data`, scored(40 + i, 1, envId, 0));
    const fourth = await leaseAndAck(run);
    expect(fourth.groups.some((g) => g.replayed)).toBe(false);
  });

  it("refuses bad settings with a message, and an unknown run with 404", async () => {
    const run = uniqueRun("replay-bad");
    await setupRun(run, 4, [2]);
    const high = await putReplay(run, { fraction: 1 });
    expect(high.status).toBe(422);
    expect(await high.text()).toContain("fraction must be at most 0.9");
    expect((await putReplay(run, { max_replays: 0 })).status).toBe(422);
    expect((await putReplay(run, { enable: true })).status).toBe(422);
    expect((await putReplay(uniqueRun("nope"), { enabled: true })).status).toBe(404);
  });

  it("stores imported groups as delivered: a lease right after their insert cannot take one", async () => {
    const run = uniqueRun("replay-import-lease");
    await setupRun(run, 2, []);
    const leases: number[] = [];
    // The same D1, except that a trainer leases the moment the groups' insert has committed,
    // before the import adds them to the buffer.
    const db = new Proxy(env.DB, {
      get(target, prop) {
        if (prop !== "batch") return Reflect.get(target, prop, target);
        return async (statements: D1PreparedStatement[]) => {
          const results = await target.batch(statements);
          const inserted = results.some((r) =>
            (r.results ?? []).some((row) => typeof row === "object" && row && "status" in row),
          );
          if (inserted && leases.length === 0) {
            leases.push((await post(`/v1/runs/${run}/batches/lease`, {})).status);
          }
          return results;
        };
      },
    });
    const offline = [1, 2].map((seed) => ({ ...group(seed, 2, null), scores: [1, 1] }));
    const res = await callWith({ DB: db }, `/v1/runs/${run}/replay/groups`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(offline),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ groups_processed: 2, kept_for_replay: 2 });
    expect(leases).toEqual([204]);
    expect(await json(call(`/v1/runs/${run}/replay`))).toMatchObject({ buffered_groups: 2 });
    expect(await json(call(`/runs/${run}/status`))).toMatchObject({ queue_size: 0 });
  });

  it("does not bring back an imported group the buffer trimmed when the import is sent again", async () => {
    const run = uniqueRun("replay-import-again");
    await setupRun(run, 2, []);
    expect((await putReplay(run, { capacity: 1 })).status).toBe(200);
    const offline = [0.2, 0.9].map((score, i) => ({
      ...group(i + 1, 2, null),
      scores: [score, score],
    }));
    // No Idempotency-Key: the body names the submission, so sending it again is a retry.
    const send = () => importReplay(run, offline);
    expect(await (await send()).json()).toMatchObject({ groups_processed: 2, kept_for_replay: 1 });
    // Room for both now: the retry's groups are duplicates, and the trimmed one stays out.
    expect((await putReplay(run, { capacity: 10 })).status).toBe(200);
    const again = await send();
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({
      groups_processed: 0,
      duplicates: 2,
      kept_for_replay: 1,
    });
    expect(await json(call(`/v1/runs/${run}/replay`))).toMatchObject({ buffered_groups: 1 });
  });

  it("does not bring back an imported group replayed max_replays times when the import is sent again", async () => {
    const run = uniqueRun("replay-import-used");
    const { base, envIds } = await setupRun(run, 4, [1]);
    await putReplay(run, { enabled: true, fraction: 0.25, max_replays: 1, capacity: 10 });
    const offline = [{ ...group(900, 1, null), scores: [0.9] }];
    const send = () => importReplay(run, offline);
    expect(await (await send()).json()).toMatchObject({ groups_processed: 1, kept_for_replay: 1 });
    for (let i = 0; i < 3; i++) await post(`${base}/scored_data`, scored(i, 1, envIds[0]!, 0));
    const replayed = (await leaseAndAck(run)).groups.filter((g) => g.replayed);
    expect(replayed).toHaveLength(1);
    expect(await json(call(`/v1/runs/${run}/replay`))).toMatchObject({ buffered_groups: 0 });
    // Sent again (a retry: the same body, no key): a duplicate, and it stays used up.
    expect(await (await send()).json()).toMatchObject({ duplicates: 1, kept_for_replay: 0 });
    expect(await json(call(`/v1/runs/${run}/replay`))).toMatchObject({ buffered_groups: 0 });
  });

  it("tells the client when the database lacks migration 0021, without naming the column", async () => {
    const run = uniqueRun("replay-import-unmigrated");
    await setupRun(run, 2, []);
    const offline = [{ ...group(1, 2, null), scores: [1, 1] }];
    const send = () => importReplay(run, offline);
    // As a database that never got 0021: D1's own error for the missing column.
    await env.DB.exec("ALTER TABLE groups RENAME COLUMN replay_adopted_at TO replay_adopted_away");
    try {
      const res = await send();
      expect(res.status).toBe(500);
      const text = await res.text();
      expect(text).toContain("lacks a migration its code needs");
      expect(text).toContain("npx wrangler d1 migrations apply DB");
      expect(text).not.toContain("replay_adopted");
    } finally {
      await env.DB.exec(
        "ALTER TABLE groups RENAME COLUMN replay_adopted_away TO replay_adopted_at",
      );
    }
    // Migrated, the retry adopts the group the failed attempt stored.
    expect(await (await send()).json()).toMatchObject({ duplicates: 1, kept_for_replay: 1 });
  });

  it("adds an import's groups to the buffer on the retry after a failure between insert and buffer", async () => {
    const run = uniqueRun("replay-import-retry");
    await setupRun(run, 2, []);
    let failNext = false;
    let failed = false;
    // The same D1, except that the batch after the groups' insert (adding them to the buffer)
    // fails once, as a D1 outage between the two would.
    const db = new Proxy(env.DB, {
      get(target, prop) {
        if (prop !== "batch") return Reflect.get(target, prop, target);
        return async (statements: D1PreparedStatement[]) => {
          if (failNext && !failed) {
            failed = true;
            throw new Error("D1_ERROR: injected outage");
          }
          const results = await target.batch(statements);
          failNext = results.some((r) =>
            (r.results ?? []).some((row) => typeof row === "object" && row && "status" in row),
          );
          return results;
        };
      },
    });
    const offline = [1, 2].map((seed) => ({ ...group(seed, 2, null), scores: [1, 1] }));
    const send = (bindings: { DB: D1Database } | Record<string, never>) =>
      callWith(bindings, `/v1/runs/${run}/replay/groups`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": "chunk-0" },
        body: JSON.stringify(offline),
      });
    const failedOnce = await send({ DB: db });
    expect(failedOnce.status).toBe(500);
    expect(await failedOnce.text()).toContain("the request may be retried");
    expect(failed).toBe(true);
    const retry = await send({});
    expect(retry.status).toBe(200);
    expect(await retry.json()).toMatchObject({
      groups_processed: 0,
      duplicates: 2,
      kept_for_replay: 2,
    });
    expect(await json(call(`/v1/runs/${run}/replay`))).toMatchObject({ buffered_groups: 2 });
  });
});

describe("imported groups in the buffer before migration 0021", () => {
  it("count as adopted; others do not", async () => {
    const run = uniqueRun("replay-adopted-backfill");
    await setupRun(run, 2, []);
    const offline = [1, 2].map((seed) => ({ ...group(seed, 2, null), scores: [1, 1] }));
    const res = await importReplay(run, offline);
    expect(res.status).toBe(200);
    const db = env.DB;
    const ids = (
      await db
        .prepare("SELECT id FROM groups WHERE run = ?1 ORDER BY id")
        .bind(run)
        .all<{ id: number }>()
    ).results.map((r) => r.id);
    // As a database migrated from 0020 holds them: the first one in the buffer, neither marked.
    await db.batch([
      db.prepare("UPDATE groups SET replay_adopted_at = NULL WHERE run = ?1").bind(run),
      db.prepare("DELETE FROM replay_groups WHERE run = ?1 AND group_id = ?2").bind(run, ids[1]),
      db.prepare("UPDATE replay_groups SET added_at = 1234 WHERE run = ?1").bind(run),
    ]);
    const migration = env.TEST_MIGRATIONS.find((m) => m.name.startsWith("0021_"));
    const backfill = migration!.queries.filter((q) => /^\s*UPDATE/m.test(q.replace(/--.*$/gm, "")));
    expect(backfill).toHaveLength(1);
    await db.prepare(backfill[0]!).run();
    const marked = await db
      .prepare("SELECT id, replay_adopted_at AS at FROM groups WHERE run = ?1 ORDER BY id")
      .bind(run)
      .all<{ id: number; at: number | null }>();
    expect(marked.results).toEqual([
      { id: ids[0], at: 1234 },
      { id: ids[1], at: null },
    ]);
  });
});
