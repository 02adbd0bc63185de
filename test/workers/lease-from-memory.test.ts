/**
 * A new lease is planned from the queue state the previous lease's write read back, and written
 * in one D1 round trip under a plan check. These tests change that state between two leases in
 * each way the coordinator does not see, and check that the second lease is what a fresh read
 * would have formed, with nothing half-written.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { advanceClock, resetClock } from "../../src/core/concurrency/clock";
import { call, group, json, post, setupRun, uniqueRun } from "./helpers";

interface Leased {
  batch_id: string;
  lease_id: string;
  step: number;
  redelivered: boolean;
  groups: { group_id: number; env_id: number | null; num_seqs: number; replayed?: boolean }[];
}

/** A lease, with whether it read D1 before writing (its Server-Timing has a read stage). */
async function lease(run: string, body: unknown = {}) {
  const res = await post(`/v1/runs/${run}/batches/lease`, body);
  expect(res.status).toBe(200);
  const read = (res.headers.get("server-timing") ?? "").includes("lease-read");
  return { batch: await res.json<Leased>(), read };
}

const ack = (run: string, batchId: string) =>
  post(`/v1/runs/${run}/batches/${batchId}/ack`, {}).then((r) => expect(r.status).toBe(200));

const seqs = (b: Leased) => b.groups.reduce((s, g) => s + g.num_seqs, 0);

async function batchRows(run: string) {
  const rows = await env.DB.prepare("SELECT step, status FROM batches WHERE run = ? ORDER BY step")
    .bind(run)
    .all<{ step: number; status: string }>();
  return rows.results;
}

async function queuedIds(run: string): Promise<number[]> {
  const rows = await env.DB.prepare(
    "SELECT id FROM groups WHERE run = ? AND status = 'queued' ORDER BY id",
  )
    .bind(run)
    .all<{ id: number }>();
  return rows.results.map((r) => r.id);
}

afterEach(resetClock);

describe("a lease planned from the previous lease's read-back", () => {
  it("forms each next batch in one round trip while nothing else changed", async () => {
    const run = uniqueRun("memo");
    const { base, envIds } = await setupRun(run, 4, [2]);
    for (let i = 0; i < 6; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    const leases = [];
    for (let i = 0; i < 3; i++) {
      const l = await lease(run);
      await ack(run, l.batch.batch_id);
      leases.push(l);
    }
    expect(leases.map((l) => l.read)).toEqual([true, false, false]);
    expect(leases.map((l) => l.batch.step)).toEqual([1, 2, 3]);
    expect(leases.every((l) => seqs(l.batch) === 4)).toBe(true);
    const ids = leases.flatMap((l) => l.batch.groups.map((g) => g.group_id));
    expect(new Set(ids).size).toBe(6);
    expect(await json(call(`${base}/status`))).toEqual({ current_step: 3, queue_size: 0 });
  });

  it("plans afresh when a planned group left the queue meanwhile, writing nothing twice", async () => {
    const run = uniqueRun("memo-gone");
    const { base, envIds } = await setupRun(run, 4, [2]);
    for (let i = 0; i < 6; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    await lease(run);
    // A writer outside the coordinator taking a queued group (replay imports did, before they
    // stored their groups as delivered).
    const [taken] = await queuedIds(run);
    await env.DB.prepare("UPDATE groups SET status = 'delivered' WHERE id = ?").bind(taken).run();
    const second = await lease(run);
    expect(second.read).toBe(true);
    expect(second.batch.step).toBe(2);
    expect(seqs(second.batch)).toBe(4);
    expect(second.batch.groups.map((g) => g.group_id)).not.toContain(taken);
    expect(await batchRows(run)).toEqual([
      { step: 1, status: "leased" },
      { step: 2, status: "leased" },
    ]);
    expect(await json(call(`${base}/status`))).toMatchObject({ current_step: 2 });
  });

  it("honours a min_batch_allocation an operator set between two leases", async () => {
    const run = uniqueRun("memo-alloc");
    const { base, envIds } = await setupRun(run, 4, [2, 2]);
    const [older, newer] = [envIds[0]!, envIds[1]!];
    for (let i = 0; i < 6; i++) await post(`${base}/scored_data`, group(i, 2, older));
    await post(`${base}/scored_data`, group(100, 2, newer));
    const first = await lease(run);
    expect(first.batch.groups.every((g) => g.env_id === older)).toBe(true);
    const set = await call(`/v1/runs/${run}/envs/${newer}`, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ min_batch_allocation: 0.5 }),
    });
    expect(set.status).toBe(200);
    const second = await lease(run);
    // Without the allocation the two oldest groups (both of the older env) would go out.
    expect(second.batch.groups.filter((g) => g.env_id === newer)).toHaveLength(1);
    expect(seqs(second.batch)).toBe(4);
  });

  it("mixes replays in once replay is switched on between two leases", async () => {
    const run = uniqueRun("memo-replay");
    const { base, envIds } = await setupRun(run, 4, [2]);
    for (let i = 0; i < 10; i++) {
      await post(`${base}/scored_data`, { ...group(i, 2, envIds[0]!), scores: [1, 1] });
    }
    const setReplay = async (body: unknown) => {
      const res = await call(`/v1/runs/${run}/replay`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
    };
    // The first batch fills the buffer; the second is formed and remembered with replay off.
    await setReplay({ enabled: true, fraction: 0.5, capacity: 10 });
    const first = await lease(run);
    await ack(run, first.batch.batch_id);
    await setReplay({ enabled: false });
    const second = await lease(run);
    expect(second.batch.groups.some((g) => g.replayed)).toBe(false);
    await ack(run, second.batch.batch_id);
    await setReplay({ enabled: true });
    const third = await lease(run);
    expect(third.read).toBe(true);
    expect(third.batch.groups.some((g) => g.replayed)).toBe(true);
    expect(seqs(third.batch)).toBe(4);
  });

  it("hands an expired lease out again before forming a new batch", async () => {
    const run = uniqueRun("memo-expired");
    const { base, envIds } = await setupRun(run, 4, [2]);
    for (let i = 0; i < 6; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    const first = await lease(run, { lease_seconds: 1 });
    advanceClock(1100);
    const again = await lease(run, { lease_seconds: 60 });
    expect(again.batch.batch_id).toBe(first.batch.batch_id);
    expect(again.batch.redelivered).toBe(true);
    // The same groups, read in the lease's second round trip (only an expired lease takes one).
    const ids = (l: typeof first) => l.batch.groups.map((g) => g.group_id);
    expect(ids(again)).toEqual(ids(first));
    expect(ids(again)).toHaveLength(2);
    expect(await batchRows(run)).toEqual([{ step: 1, status: "leased" }]);
  });

  it("hands an expired lease with replayed groups out again with the same groups, marked", async () => {
    const run = uniqueRun("memo-expired-replay");
    const { base, envIds } = await setupRun(run, 4, [2]);
    for (let i = 0; i < 10; i++) {
      await post(`${base}/scored_data`, { ...group(i, 2, envIds[0]!), scores: [1, 1] });
    }
    const res = await call(`/v1/runs/${run}/replay`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ enabled: true, fraction: 0.5, capacity: 10 }),
    });
    expect(res.status).toBe(200);
    // The first batch fills the buffer; the second mixes a replayed group in, and lapses.
    const first = await lease(run);
    await ack(run, first.batch.batch_id);
    const second = await lease(run, { lease_seconds: 1 });
    const marked = (l: typeof second) =>
      l.batch.groups.map((g) => [g.group_id, g.replayed === true]).sort((a, b) => +a[0]! - +b[0]!);
    expect(second.batch.groups.some((g) => g.replayed)).toBe(true);
    advanceClock(1100);
    const again = await lease(run, { lease_seconds: 60 });
    expect(again.batch.batch_id).toBe(second.batch.batch_id);
    expect(again.batch.redelivered).toBe(true);
    expect(marked(again)).toEqual(marked(second));
  });

  it("forms a batch from groups queued after the read-back when the remembered head falls short", async () => {
    const run = uniqueRun("memo-short");
    const { base, envIds } = await setupRun(run, 4, [2]);
    for (let i = 0; i < 3; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    await lease(run);
    await post(`${base}/scored_data`, group(3, 2, envIds[0]!));
    const second = await lease(run);
    expect(second.read).toBe(true);
    expect(seqs(second.batch)).toBe(4);
  });

  it("lets a group queued since the read-back bring in the older group a fresh read would take", async () => {
    const run = uniqueRun("memo-order");
    const { base } = await setupRun(run, 4, []);
    // The first batch takes 2 + 2; the earliest exact batch of the rest (3, 2, 2) skips the 3.
    for (const [i, size] of [2, 2, 3, 2, 2].entries()) {
      expect((await post(`${base}/scored_data`, group(i, size, null))).status).toBe(200);
    }
    await lease(run);
    const [three] = await queuedIds(run);
    await post(`${base}/scored_data`, group(9, 1, null));
    const one = (await queuedIds(run)).at(-1);
    const second = await lease(run);
    // The queue is 3, 2, 2, 1 now: the oldest group goes out with the new one.
    expect(second.batch.groups.map((g) => g.group_id)).toEqual([three, one]);
    expect(second.read).toBe(true);
  });

  it("keeps the one round trip when nothing queued since could change the plan", async () => {
    const run = uniqueRun("memo-order-kept");
    const { base } = await setupRun(run, 4, []);
    for (const [i, size] of [2, 2, 3, 2, 2].entries()) {
      await post(`${base}/scored_data`, group(i, size, null));
    }
    await lease(run);
    // Nothing queued since: the remembered plan (2 + 2 behind the 3) is what a read would form.
    const [, d, e] = await queuedIds(run);
    const second = await lease(run);
    expect(second.read).toBe(false);
    expect(second.batch.groups.map((g) => g.group_id)).toEqual([d, e]);

    // A plan of the oldest groups stays what a read would form whatever is queued behind them.
    const prefixRun = uniqueRun("memo-order-prefix");
    const prefix = await setupRun(prefixRun, 4, []);
    for (let i = 0; i < 6; i++) await post(`${prefix.base}/scored_data`, group(i, 2, null));
    await lease(prefixRun);
    await post(`${prefix.base}/scored_data`, group(9, 1, null));
    const [oldest, next] = await queuedIds(prefixRun);
    const after = await lease(prefixRun);
    expect(after.read).toBe(false);
    expect(after.batch.groups.map((g) => g.group_id)).toEqual([oldest, next]);
  });

  it("GET /batch acknowledges the last batch and leases the next in the same round trip", async () => {
    const run = uniqueRun("memo-compat");
    const { base, envIds } = await setupRun(run, 4, [2]);
    for (let i = 0; i < 6; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    const pulls = [];
    for (let i = 0; i < 3; i++) {
      const res = await call(`${base}/batch`);
      pulls.push({
        read: (res.headers.get("server-timing") ?? "").includes("lease-read"),
        batch: (await res.json<{ batch: { tokens: number[][] }[] }>()).batch,
      });
    }
    expect(pulls.map((p) => p.read)).toEqual([true, false, false]);
    expect(pulls.every((p) => p.batch.reduce((s, g) => s + g.tokens.length, 0) === 4)).toBe(true);
    expect(await batchRows(run)).toEqual([
      { step: 1, status: "acked" },
      { step: 2, status: "acked" },
      { step: 3, status: "leased" },
    ]);
  });

  it("GET /batch whose plan check is refused acknowledges in its fresh read instead", async () => {
    const run = uniqueRun("memo-compat-refused");
    const { base, envIds } = await setupRun(run, 4, [2]);
    for (let i = 0; i < 6; i++) {
      await post(`${base}/scored_data`, { ...group(i, 2, envIds[0]!), scores: [1, 1] });
    }
    const pull = async () => {
      const res = await call(`${base}/batch`);
      expect(res.status).toBe(200);
      return (res.headers.get("server-timing") ?? "").includes("lease-read");
    };
    expect([await pull(), await pull()]).toEqual([true, false]);
    // Replay on (mixing none in): the third pull's check is refused, and with it the
    // acknowledgement of the second batch in the same transaction; the fresh read acknowledges
    // that batch again and admits its groups to the buffer.
    const put = await call(`/v1/runs/${run}/replay`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ enabled: true, fraction: 0, threshold: 0.5 }),
    });
    expect(put.status).toBe(200);
    expect(await pull()).toBe(true);
    const second = await env.DB.prepare("SELECT group_ids FROM batches WHERE run = ? AND step = 2")
      .bind(run)
      .first<{ group_ids: string }>();
    const buffered = await env.DB.prepare(
      "SELECT group_id FROM replay_groups WHERE run = ? ORDER BY group_id",
    )
      .bind(run)
      .all<{ group_id: number }>();
    expect(buffered.results.map((r) => r.group_id)).toEqual(JSON.parse(second!.group_ids));
    expect(await batchRows(run)).toEqual([
      { step: 1, status: "acked" },
      { step: 2, status: "acked" },
      { step: 3, status: "leased" },
    ]);
  });
});

describe("an ack of the batch the last lease formed", () => {
  /** An ack's status, answer and whether it read the batch row first (its Server-Timing). */
  async function ackOf(run: string, batchId: string, body: unknown = {}) {
    const res = await post(`/v1/runs/${run}/batches/${batchId}/ack`, body);
    const read = (res.headers.get("server-timing") ?? "").includes("read the batch");
    return { status: res.status, body: await res.json<Record<string, unknown>>(), read };
  }

  it("decides without reading the row; other batches, repeats and conflicts read it", async () => {
    const run = uniqueRun("ack-memo");
    const { base, envIds } = await setupRun(run, 4, [2]);
    for (let i = 0; i < 8; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    const a = (await lease(run)).batch;
    const first = await ackOf(run, a.batch_id, { lease_id: a.lease_id });
    expect(first).toEqual({
      status: 200,
      body: { batch_id: a.batch_id, status: "acked", already_acked: false, step: 1 },
      read: false,
    });
    // Two batches out: only the later one is remembered.
    const b = (await lease(run)).batch;
    const c = (await lease(run)).batch;
    expect((await ackOf(run, b.batch_id)).read).toBe(true);
    // A refused ack decides from memory too, and forgets it: the holder's ack reads the row.
    const refused = await ackOf(run, c.batch_id, { lease_id: crypto.randomUUID() });
    expect([refused.status, refused.read]).toEqual([409, false]);
    const right = await ackOf(run, c.batch_id, { lease_id: c.lease_id });
    expect([right.status, right.body.already_acked, right.read]).toEqual([200, false, true]);
    const repeat = await ackOf(run, a.batch_id, { lease_id: a.lease_id });
    expect([repeat.status, repeat.body.already_acked, repeat.read]).toEqual([200, true, true]);
    expect(await batchRows(run)).toEqual([
      { step: 1, status: "acked" },
      { step: 2, status: "acked" },
      { step: 3, status: "acked" },
    ]);
    expect(await queuedIds(run)).toHaveLength(2);
  });

  it("reads the row after any other transition, and of a redelivered batch", async () => {
    const run = uniqueRun("ack-memo-forgot");
    const { base, envIds } = await setupRun(run, 4, [2]);
    for (let i = 0; i < 10; i++) await post(`${base}/scored_data`, group(i, 2, envIds[0]!));
    const a = (await lease(run)).batch;
    expect((await post(`/v1/runs/${run}/policy`, { version: 1 })).status).toBe(200);
    expect((await ackOf(run, a.batch_id, { lease_id: a.lease_id })).read).toBe(true);
    // A GET /batch pull between a lease and its ack (it writes batch rows too).
    const pulled = (await lease(run)).batch;
    expect((await call(`${base}/batch`)).status).toBe(200);
    expect((await ackOf(run, pulled.batch_id, { lease_id: pulled.lease_id })).read).toBe(true);

    const b = (await lease(run, { lease_seconds: 1 })).batch;
    advanceClock(1100);
    const again = (await lease(run, { lease_seconds: 60 })).batch;
    expect([again.batch_id, again.redelivered]).toEqual([b.batch_id, true]);
    // The lapsed lease is refused by what the row says (its lease history), not by memory.
    const lapsed = await ackOf(run, b.batch_id, { lease_id: b.lease_id });
    expect([lapsed.status, lapsed.read]).toEqual([409, true]);
    const acked = await ackOf(run, b.batch_id, { lease_id: again.lease_id });
    expect([acked.status, acked.body.step, acked.read]).toEqual([200, 4, true]);
  });
});
