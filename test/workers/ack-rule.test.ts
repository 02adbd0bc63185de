/**
 * Leases mean what docs/API.md says: an ack completes a batch only for the lease that holds it.
 * A lapsed lease id, an id that never was a lease of the batch, or no id while another trainer's
 * lease (or a redelivery) is live is refused with 409 saying which; a repeat by the lease that
 * completed the batch stays 200 `already_acked`. Lease expiry is moved in D1, not waited for.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { group, json, post, setupRun, uniqueRun } from "./helpers";

interface Leased {
  batch_id: string;
  lease_id: string;
  redelivered: boolean;
}

async function tokenFor(name: string): Promise<string> {
  const created = await json<{ secret: string }>(
    post("/v1/tokens", { name, scopes: ["trainer"], run: null }),
  );
  return created.secret;
}

const as = (secret: string | null): Record<string, string> =>
  secret === null ? {} : { authorization: `Bearer ${secret}` };

async function lease(run: string, secret: string | null): Promise<Leased> {
  const res = await post(`/v1/runs/${run}/batches/lease`, { lease_seconds: 600 }, as(secret));
  expect(res.status, await res.clone().text()).toBe(200);
  return res.json<Leased>();
}

function ack(run: string, batchId: string, leaseId: string | undefined, secret: string | null) {
  return post(
    `/v1/runs/${run}/batches/${batchId}/ack`,
    leaseId === undefined ? {} : { lease_id: leaseId },
    as(secret),
  );
}

/** The lease lapses now (as if its lease_seconds had passed). */
async function lapse(batchId: string): Promise<void> {
  await env.DB.prepare("UPDATE batches SET lease_expires_at = 0 WHERE id = ?1").bind(batchId).run();
}

async function batchStatus(batchId: string): Promise<string | undefined> {
  const row = await env.DB.prepare("SELECT status FROM batches WHERE id = ?1")
    .bind(batchId)
    .first<{ status: string }>();
  return row?.status;
}

async function oneBatchRun(prefix: string): Promise<string> {
  const run = uniqueRun(prefix);
  const { base, envIds } = await setupRun(run, 4, [4]);
  expect((await post(`${base}/scored_data`, group(1, 4, envIds[0]!))).status).toBe(200);
  return run;
}

describe("acks after a redelivery", () => {
  it("refuses the lapsed holder, a random id and a lease-less ack; the new holder's repeat stays 200", async () => {
    const run = await oneBatchRun("ack-redeliver");
    const [first, second] = [await tokenFor("trainer-a"), await tokenFor("trainer-b")];
    const lapsed = await lease(run, first);
    await lapse(lapsed.batch_id);
    const current = await lease(run, second);
    expect(current).toMatchObject({ batch_id: lapsed.batch_id, redelivered: true });
    const id = lapsed.batch_id;

    // While the new holder's lease is live.
    const lapsedAck = await ack(run, id, lapsed.lease_id, first);
    expect(lapsedAck.status).toBe(409);
    expect(await lapsedAck.text()).toMatch(
      /lapsed and the batch was leased again \(lease 2 of it, live until/,
    );
    const random = await ack(run, id, crypto.randomUUID(), first);
    expect(random.status).toBe(409);
    expect(await random.text()).toContain("is not a lease id of batch");
    const none = await ack(run, id, undefined, first);
    expect(none.status).toBe(409);
    expect(await none.text()).toContain("is leased to another trainer");
    expect(await batchStatus(id)).toBe("leased");

    // The new holder completes it; repeating that ack is idempotent.
    expect(await json(ack(run, id, current.lease_id, second))).toMatchObject({
      already_acked: false,
    });
    expect(await json(ack(run, id, current.lease_id, second))).toMatchObject({
      already_acked: true,
    });

    // After it was acked, the lapsed lease and a random id are still refused, saying so.
    const late = await ack(run, id, lapsed.lease_id, first);
    expect(late.status).toBe(409);
    expect(await late.text()).toContain("the batch was leased again and that lease acked it at");
    const randomLate = await ack(run, id, crypto.randomUUID(), second);
    expect(randomLate.status).toBe(409);
    expect(await randomLate.text()).toContain("acked at");
  });

  it("refuses a lease-less ack of a redelivered batch even from the same identity", async () => {
    const run = await oneBatchRun("ack-same");
    const lapsed = await lease(run, null);
    await lapse(lapsed.batch_id);
    const current = await lease(run, null);
    const none = await ack(run, current.batch_id, undefined, null);
    expect(none.status).toBe(409);
    expect(await none.text()).toContain("send the lease_id your lease answered");
    expect((await ack(run, current.batch_id, current.lease_id, null)).status).toBe(200);
  });
});

describe("acks of a first lease", () => {
  it("lets only the holder ack without lease_id while the lease is live", async () => {
    const run = await oneBatchRun("ack-live");
    const [holder, other] = [await tokenFor("holder"), await tokenFor("other")];
    const leased = await lease(run, holder);
    const wrong = await ack(run, leased.batch_id, crypto.randomUUID(), holder);
    expect(wrong.status).toBe(409);
    const wrongText = await wrong.text();
    expect(wrongText).toContain("is not a lease id of batch");
    // Not what happened: the lease neither expired nor was handed out again.
    expect(wrongText).not.toContain("leased again");
    const foreign = await ack(run, leased.batch_id, undefined, other);
    expect(foreign.status).toBe(409);
    expect(await foreign.text()).toContain("is leased to another trainer");
    expect(await batchStatus(leased.batch_id)).toBe("leased");
    expect(await json(ack(run, leased.batch_id, undefined, holder))).toMatchObject({
      already_acked: false,
    });
    expect(await json(ack(run, leased.batch_id, undefined, other))).toMatchObject({
      already_acked: true,
    });
  });

  it("completes a lapsed lease nobody took again, with or without its id", async () => {
    const run = await oneBatchRun("ack-lapsed");
    const leased = await lease(run, null);
    await lapse(leased.batch_id);
    expect(await json(ack(run, leased.batch_id, undefined, null))).toMatchObject({
      already_acked: false,
    });
    expect(await json(ack(run, leased.batch_id, leased.lease_id, null))).toMatchObject({
      already_acked: true,
    });
  });
});
