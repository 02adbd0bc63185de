import { afterEach, describe, expect, it } from "vitest";
import { advanceClock, resetClock } from "../../src/core/concurrency/clock";
import {
  call,
  callWith,
  group,
  gzip,
  json,
  post,
  REGISTRATION,
  setupRun,
  uniqueRun,
} from "./helpers";

interface Leased {
  batch_id: string;
  lease_id: string;
  step: number;
  lease_expires_at: number;
  redelivered: boolean;
  groups: { group_id: number; env_id: number | null; policy_version: number; num_seqs: number }[];
  batch: { tokens: number[][]; scores: number[] }[];
}

async function lease(run: string, body: unknown = {}) {
  const res = await post(`/v1/runs/${run}/batches/lease`, body);
  if (res.status === 204) return { status: 204, reason: res.headers.get("x-atropos-edge-reason") };
  expect(res.status).toBe(200);
  return { status: 200, batch: await res.json<Leased>() };
}

// Time advanced by one test must not shift the next one's runs and leases.
afterEach(resetClock);
describe("exactly-once delivery", () => {
  it("concurrent trainers never receive the same group, and every group is delivered", async () => {
    const run = uniqueRun("lease");
    const { base, envIds } = await setupRun(run, 8, [4, 2]);
    const sent = new Set<number>();
    for (let i = 0; i < 60; i++) {
      const g = group(1000 + i, i % 3 === 0 ? 2 : 4, envIds[i % 3 === 0 ? 1 : 0]!);
      sent.add(g.tokens[0]![0]!);
      expect((await post(`${base}/scored_data`, g)).status).toBe(200);
    }
    const seen: number[] = [];
    const steps: number[] = [];
    const trainer = async () => {
      for (;;) {
        const r = await lease(run, { lease_seconds: 60 });
        if (r.status === 204) return;
        const b = r.batch!;
        steps.push(b.step);
        expect(b.batch.reduce((s, g) => s + g.tokens.length, 0)).toBe(8);
        for (const g of b.batch) seen.push(g.tokens[0]![0]!);
        const ack = await json<{ status: string }>(
          post(`/v1/runs/${run}/batches/${b.batch_id}/ack`, { lease_id: b.lease_id }),
        );
        expect(ack.status).toBe("acked");
      }
    };
    await Promise.all([trainer(), trainer(), trainer()]);
    expect(new Set(seen).size).toBe(seen.length);
    // 60 groups = 40×4 + 20×2 = 200 sequences = 25 batches of 8.
    expect(seen.length).toBe(60);
    expect(new Set(seen)).toEqual(sent);
    expect([...steps].sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    expect(await json(call(`${base}/status`))).toEqual({ current_step: 25, queue_size: 0 });
  });

  it("redelivers the same batch after its lease expires, and refuses an ack of the stale lease", async () => {
    const run = uniqueRun("expire");
    const { base, envIds } = await setupRun(run, 4, [4]);
    await post(`${base}/scored_data`, group(1, 4, envIds[0]!));
    const first = (await lease(run, { lease_seconds: 1 })).batch!;
    expect((await lease(run)).status).toBe(204);
    advanceClock(1100); // the 1 s lease has expired
    const again = (await lease(run, { lease_seconds: 60 })).batch!;
    expect(again.batch_id).toBe(first.batch_id);
    expect(again.step).toBe(first.step);
    expect(again.redelivered).toBe(true);
    expect(again.batch).toEqual(first.batch);
    const stale = await post(`/v1/runs/${run}/batches/${first.batch_id}/ack`, {
      lease_id: first.lease_id,
    });
    expect(stale.status).toBe(409);
    expect(await stale.text()).toContain("leased again");
    const ok = await json(
      post(`/v1/runs/${run}/batches/${again.batch_id}/ack`, { lease_id: again.lease_id }),
    );
    expect(ok).toMatchObject({ status: "acked", already_acked: false });
    const twice = await json(post(`/v1/runs/${run}/batches/${again.batch_id}/ack`, {}));
    expect(twice).toMatchObject({ status: "acked", already_acked: true });
    expect((await post(`/v1/runs/${run}/batches/nope/ack`, {})).status).toBe(404);
  });

  it("gives unmodified Atropos trainers at-least-once: re-registering redelivers the unacked batch", async () => {
    const run = uniqueRun("compat");
    const { base, envIds } = await setupRun(run, 4, [4]);
    await post(`${base}/scored_data`, group(1, 4, envIds[0]!));
    await post(`${base}/scored_data`, group(2, 4, envIds[0]!));
    const b1 = await json<{ batch: { tokens: number[][] }[] }>(call(`${base}/batch`));
    // The trainer crashes and restarts: /register again, then pulls.
    await post(`${base}/register`, { ...REGISTRATION, batch_size: 4 });
    const again = await json<{ batch: { tokens: number[][] }[] }>(call(`${base}/batch`));
    expect(again.batch).toEqual(b1.batch);
    // Pulling again acknowledges it and moves on.
    const b2 = await json<{ batch: { tokens: number[][] }[] }>(call(`${base}/batch`));
    expect(b2.batch[0]!.tokens).toEqual(group(2, 4, 0).tokens);
    expect(await json(call(`${base}/batch`))).toEqual({ batch: null });
  });

  it("never includes groups older than max_staleness policy versions", async () => {
    const run = uniqueRun("stale");
    const { base, envIds } = await setupRun(run, 4, [4]);
    await post(`${base}/scored_data`, group(1, 4, envIds[0]!));
    expect(await json(post(`/v1/runs/${run}/policy`, { version: 5 }))).toEqual({
      policy_version: 5,
    });
    const none = await lease(run, { max_staleness: 2 });
    expect(none.status).toBe(204);
    expect(none.reason).toContain("waiting for data");
    await post(`${base}/scored_data`, group(2, 4, envIds[0]!));
    await post(`${base}/scored_data`, { ...group(3, 4, envIds[0]!), policy_version: 2 });
    const fresh = (await lease(run, { max_staleness: 2 })).batch!;
    expect(fresh.batch[0]!.tokens).toEqual(group(2, 4, 0).tokens);
    // The lease says which policy version each group was sampled under (default: the run's).
    expect(fresh.groups).toEqual([
      {
        group_id: expect.any(Number),
        env_id: envIds[0],
        policy_version: 5,
        num_seqs: 4,
        replayed: false,
      },
    ]);
    // The 204 set group 1 (v0) aside as stale, out of the queue counts; group 3 (v2) came later
    // and waits in the queue (a successful lease evicts again only once the bound moves up) …
    const stats = await json<{
      queue: { groups: number; stale_groups: number };
      policy_versions: { queued_min: number | null; queued_max: number | null };
    }>(call(`/v1/runs/${run}/stats`));
    expect(stats.queue).toMatchObject({ groups: 1, stale_groups: 1 });
    expect(stats.policy_versions).toMatchObject({ queued_min: 2, queued_max: 2 });
    // … where a lease with a wider bound takes it.
    const older = (await lease(run, { max_staleness: 3 })).batch!;
    expect(older.batch[0]!.tokens).toEqual(group(3, 4, 0).tokens);
    expect(older.groups[0]!.policy_version).toBe(2);
  });

  it("refuses a policy version lower than the current one unless the body says reset", async () => {
    const run = uniqueRun("policy-back");
    await setupRun(run, 4, [4]);
    const policy = (body: unknown) => post(`/v1/runs/${run}/policy`, body);
    expect(await json(policy({ version: 3 }))).toEqual({ policy_version: 3 });
    expect(await json(policy({ version: 3 }))).toEqual({ policy_version: 3 });
    const back = await policy({ version: 2 });
    expect(back.status).toBe(409);
    const message = (await back.json<{ error: { message: string } }>()).error.message;
    expect(message).toContain("lower than the run's current policy version 3");
    expect(message).toContain('"reset": true');
    expect(await json(call(`/v1/runs/${run}/policy`))).toEqual({ policy_version: 3 });
    expect(await json(policy({ version: 1, reset: true }))).toEqual({ policy_version: 1 });
    expect(await json(call(`/v1/runs/${run}/policy`))).toEqual({ policy_version: 1 });
    expect((await policy({ version: 2, reset: "yes" })).status).toBe(422);
  });

  it("explains why no batch can be formed", async () => {
    const run = uniqueRun("why");
    const { base, envIds } = await setupRun(run, 4, [8]);
    await post(`${base}/scored_data`, group(1, 8, envIds[0]!));
    const r = await lease(run);
    expect(r.status).toBe(204);
    expect(r.reason).toContain("can never be batched");
    const stats = await json<{ blocked_reason: string }>(call(`/v1/runs/${run}/stats`));
    expect(stats.blocked_reason).toContain("more sequences than batch_size 4");
    const unregistered = await post(`/v1/runs/${uniqueRun()}/batches/lease`, {});
    expect(unregistered.status).toBe(409);
  });

  it("honours min_batch_allocation and blocks with a reason when an allocated env has no data", async () => {
    const run = uniqueRun("alloc");
    await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 8 });
    await post(`/runs/${run}/register-env`, {
      max_token_length: 512,
      desired_name: "big",
      weight: 1,
      group_size: 2,
    });
    await post(`/runs/${run}/register-env`, {
      max_token_length: 512,
      desired_name: "small",
      weight: 1,
      group_size: 2,
      min_batch_allocation: 0.5,
    });
    for (let i = 0; i < 8; i++) await post(`/runs/${run}/scored_data`, group(10 + i, 2, 0));
    const blocked = await lease(run);
    expect(blocked.reason).toContain("min_batch_allocation");
    await post(`/runs/${run}/scored_data`, group(50, 2, 1));
    await post(`/runs/${run}/scored_data`, group(51, 2, 1));
    const b = (await lease(run)).batch!;
    const fromSmall = b.batch.filter((g) =>
      [group(50, 2, 1), group(51, 2, 1)].some((x) => x.tokens[0]![0] === g.tokens[0]![0]),
    );
    expect(fromSmall.length).toBe(2);
  });
});

describe("idempotent submissions", () => {
  it("replays the original answer for a retried Idempotency-Key and stores the group once", async () => {
    const run = uniqueRun("idem");
    const { base, envIds } = await setupRun(run, 8, [4]);
    const g = group(1, 4, envIds[0]!);
    const a = await post(`${base}/scored_data`, g, { "idempotency-key": "k-1" });
    const b = await post(`${base}/scored_data`, g, { "idempotency-key": "k-1" });
    expect(await a.json()).toEqual({ status: "received" });
    expect(await b.json()).toEqual({ status: "received" });
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect((await json<{ queue_size: number }>(call(`${base}/status`))).queue_size).toBe(1);
    const reused = await post(`${base}/scored_data`, group(2, 4, envIds[0]!), {
      "idempotency-key": "k-1",
    });
    expect(reused.status).toBe(422);
    expect((await json<{ queue_size: number }>(call(`${base}/status`))).queue_size).toBe(1);
  });

  it("stores every group of one list, even identical ones, so the batch forms", async () => {
    const run = uniqueRun("same-in-list");
    const { base, envIds } = await setupRun(run, 16, [4]);
    const g = group(7, 4, envIds[0]!);
    expect(await json(post(`${base}/scored_data_list`, [g, g, g, g]))).toEqual({
      status: "received",
      groups_processed: 4,
    });
    expect(await json(call(`${base}/status`))).toEqual({ current_step: 0, queue_size: 4 });
    const batch = await json<{ batch: { tokens: number[][] }[] }>(call(`${base}/batch`));
    expect(batch.batch).toHaveLength(4);
  });

  it("treats an identical body from the same env within the window as a retry, and says so", async () => {
    const run = uniqueRun("dedupe");
    const { base, envIds } = await setupRun(run, 8, [4, 4]);
    const g = group(7, 4, envIds[0]!);
    const queueSize = async () =>
      (await json<{ queue_size: number }>(call(`${base}/status`))).queue_size;
    expect(await json(post(`${base}/scored_data`, g))).toEqual({ status: "received" });
    expect(await json(post(`${base}/scored_data`, g))).toEqual({
      status: "received",
      duplicate: true,
    });
    expect(await queueSize()).toBe(1);
    // A list is its own request body: not a retry of the single submission.
    expect(await json(post(`${base}/scored_data_list`, [g, g]))).toEqual({
      status: "received",
      groups_processed: 2,
    });
    expect(await json(post(`${base}/scored_data_list`, [g, g]))).toEqual({
      status: "received",
      groups_processed: 0,
      duplicates: 2,
    });
    expect(await queueSize()).toBe(3);
    // The same group from another env is another env's data.
    const other = { ...g, env_id: envIds[1]! };
    expect(await json(post(`${base}/scored_data`, other))).toEqual({ status: "received" });
    expect(await queueSize()).toBe(4);
  });

  it("stores an identical body again once the dedupe window has passed", async () => {
    const run = uniqueRun("dedupe-window");
    const { base, envIds } = await setupRun(run, 8, [4]);
    const body = JSON.stringify(group(9, 4, envIds[0]!));
    const submit = () =>
      callWith({ DEDUPE_WINDOW_SECONDS: "0.2" }, `${base}/scored_data`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
    expect(await (await submit()).json()).toEqual({ status: "received" });
    expect(await (await submit()).json()).toEqual({ status: "received", duplicate: true });
    advanceClock(300); // past the 0.2 s window
    expect(await (await submit()).json()).toEqual({ status: "received" });
    expect((await json<{ queue_size: number }>(call(`${base}/status`))).queue_size).toBe(2);
  });

  it("lets the Idempotency-Key decide: distinct keys store identical bodies, a reused key replays", async () => {
    const run = uniqueRun("idem-list");
    const { base, envIds } = await setupRun(run, 8, [4]);
    const list = [group(5, 4, envIds[0]!), group(5, 4, envIds[0]!)];
    const first = await post(`${base}/scored_data_list`, list, { "idempotency-key": "L-1" });
    expect(await first.json()).toEqual({ status: "received", groups_processed: 2 });
    const replay = await post(`${base}/scored_data_list`, list, { "idempotency-key": "L-1" });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await replay.json()).toEqual({ status: "received", groups_processed: 2 });
    const second = await post(`${base}/scored_data_list`, list, { "idempotency-key": "L-2" });
    expect(await second.json()).toEqual({ status: "received", groups_processed: 2 });
    expect((await json<{ queue_size: number }>(call(`${base}/status`))).queue_size).toBe(4);
  });

  it("processes /scored_data_list all-or-nothing", async () => {
    const run = uniqueRun("list");
    const { base, envIds } = await setupRun(run, 8, [4]);
    const ok = await json(
      post(`${base}/scored_data_list`, [group(1, 4, envIds[0]!), group(2, 2, envIds[0]!)]),
    );
    expect(ok).toEqual({
      status: "received",
      groups_processed: 2,
      buffered: 1,
      last_buffer_size: 2,
    });
    const bad = await post(`${base}/scored_data_list`, [group(3, 4, envIds[0]!), group(4, 4, 99)]);
    expect(bad.status).toBe(422);
    expect(await bad.text()).toContain("env_id 99 is not registered");
    expect((await json<{ queue_size: number }>(call(`${base}/status`))).queue_size).toBe(1);
    expect(await json(post(`${base}/scored_data_list`, []))).toEqual({
      status: "received",
      groups_processed: 0,
    });
  });
});

describe("security", () => {
  it("requires the API token (Bearer or Basic password) on everything but /", async () => {
    const t = { API_TOKEN: "s3cret" };
    expect((await callWith(t, "/")).status).toBe(200);
    const none = await callWith(t, "/status");
    expect(none.status).toBe(401);
    expect(await none.text()).toContain("Authorization: Bearer");
    expect(
      (await callWith(t, "/status", { headers: { authorization: "Bearer nope" } })).status,
    ).toBe(401);
    expect(
      (await callWith(t, "/status", { headers: { authorization: "Bearer s3cret" } })).status,
    ).toBe(200);
    const basic = `Basic ${btoa("user:s3cret")}`;
    expect((await callWith(t, "/status", { headers: { authorization: basic } })).status).toBe(200);
    expect((await callWith(t, "/reset_data")).status).toBe(401);
  });

  it("refuses data endpoints of a deployment without a token unless explicitly allowed", async () => {
    const res = await callWith({ DEPLOYMENT: "production", API_TOKEN: undefined }, "/status");
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("wrangler secret put API_TOKEN");
    const allowed = await callWith(
      { DEPLOYMENT: "production", API_TOKEN: undefined, ALLOW_UNAUTHENTICATED: "true" },
      "/status",
    );
    expect(allowed.status).toBe(200);
  });

  it("does not reflect arbitrary origins; allowlisted origins get CORS headers", async () => {
    const evil = await call("/status", { headers: { origin: "https://evil.example" } });
    expect(evil.headers.get("access-control-allow-origin")).toBeNull();
    const ok = await callWith({ CORS_ORIGINS: "https://lab.example" }, "/status", {
      headers: { origin: "https://lab.example" },
    });
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://lab.example");
    expect(ok.headers.get("access-control-allow-credentials")).toBeNull();
  });

  it("bounds request bodies and gzip inflation with a clear 413", async () => {
    const run = uniqueRun("limits");
    const big = JSON.stringify({ ...group(1, 4, null, 2000) });
    const res = await callWith({ MAX_BODY_BYTES: "10000" }, `/runs/${run}/scored_data`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: big,
    });
    expect(res.status).toBe(413);
    const zeros = new Uint8Array(5_000_000);
    const bomb = new Uint8Array(
      await new Response(
        new Blob([zeros]).stream().pipeThrough(new CompressionStream("gzip")),
      ).arrayBuffer(),
    );
    const inflated = await callWith({ MAX_INFLATED_BYTES: "1000000" }, `/runs/${run}/scored_data`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: bomb,
    });
    expect(inflated.status).toBe(413);
    expect(await inflated.text()).toContain("decompressed request body exceeds");
    expect(await json(call(`/runs/${run}/status`))).toEqual({ current_step: 0, queue_size: 0 });
  });

  it("accepts a gzip body that inflates to exactly the limit, and not one byte more", async () => {
    const run = uniqueRun("inflate-edge");
    const { base, envIds } = await setupRun(run, 4, [4]);
    const text = JSON.stringify(group(3, 4, envIds[0]!));
    const body = await gzip(text);
    const submit = (limit: number) =>
      callWith({ MAX_INFLATED_BYTES: String(limit) }, `${base}/scored_data`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-encoding": "gzip" },
        body,
      });
    const over = await submit(text.length - 1);
    expect(over.status).toBe(413);
    expect(await json(call(`${base}/status`))).toEqual({ current_step: 0, queue_size: 0 });
    const exact = await submit(text.length);
    expect(await exact.json()).toEqual({ status: "received" });
    expect(await json(call(`${base}/status`))).toEqual({ current_step: 0, queue_size: 1 });
  });
});
