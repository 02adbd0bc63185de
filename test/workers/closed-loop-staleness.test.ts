import { describe, expect, it } from "vitest";
import { call, group, json, post, setupRun, uniqueRun } from "./helpers";

interface StatusEnv {
  queue_size: number;
  self_queue_size: number;
  env_weight: number;
  unallocated_fraction: number;
  policy_version: number;
}

async function stats(run: string) {
  return json<{ queue: { groups: number; stale_groups: number } }>(call(`/v1/runs/${run}/stats`));
}

describe("staleness without stalls", () => {
  it("sets groups too old for max_staleness aside, out of /status-env, and says so in the 204", async () => {
    const run = uniqueRun("stall");
    const { base, envIds } = await setupRun(run, 8, [2]);
    const envId = envIds[0]!;
    for (let i = 0; i < 4; i++) await post(`${base}/scored_data`, group(i, 2, envId));
    await post(`/v1/runs/${run}/policy`, { version: 5 });
    const before = await json<StatusEnv>(call(`${base}/status-env?env_id=${envId}`));
    expect(before).toMatchObject({ queue_size: 4, self_queue_size: 4, policy_version: 5 });

    const res = await post(`/v1/runs/${run}/batches/lease`, { max_staleness: 1 });
    expect(res.status).toBe(204);
    const reason = res.headers.get("x-atropos-edge-reason") ?? "";
    expect(reason).toContain("waiting for data");
    expect(reason).toContain("max_staleness 1 at policy version 5");
    expect(reason).toContain("4 queued group(s) sampled before policy version 4 were evicted");

    // The env no longer sees a full queue it cannot drain, so it samples again.
    const after = await json<StatusEnv>(call(`${base}/status-env?env_id=${envId}`));
    expect(after).toMatchObject({ queue_size: 0, self_queue_size: 0 });
    expect((await stats(run)).queue).toMatchObject({ groups: 0, stale_groups: 4 });
    const listed = await json<{ groups: { status: string }[] }>(
      call(`/v1/runs/${run}/groups?status=stale`),
    );
    expect(listed.groups.map((g) => g.status)).toEqual(["stale", "stale", "stale", "stale"]);

    // A second 204 still names staleness, though nothing more was evicted.
    const again = await post(`/v1/runs/${run}/batches/lease`, { max_staleness: 1 });
    expect(again.headers.get("x-atropos-edge-reason")).toContain("4 stale in total");

    // Fresh groups form batches; stale ones are never delivered within the bound.
    for (let i = 0; i < 4; i++) await post(`${base}/scored_data`, group(10 + i, 2, envId));
    const leased = await json<{ groups: { policy_version: number }[] }>(
      post(`/v1/runs/${run}/batches/lease`, { max_staleness: 1 }),
    );
    expect(leased.groups.map((g) => g.policy_version)).toEqual([5, 5, 5, 5]);
  });

  it("evicts in the same step that forms a batch, and a policy reset queues stale groups again", async () => {
    const run = uniqueRun("evict-ok");
    const { base, envIds } = await setupRun(run, 4, [2]);
    const envId = envIds[0]!;
    await post(`${base}/scored_data`, { ...group(1, 2, envId), policy_version: 0 });
    await post(`/v1/runs/${run}/policy`, { version: 3 });
    await post(`${base}/scored_data`, group(2, 2, envId));
    await post(`${base}/scored_data`, group(3, 2, envId));
    const ok = await post(`/v1/runs/${run}/batches/lease`, { max_staleness: 0 });
    expect(ok.status).toBe(200);
    expect((await stats(run)).queue).toMatchObject({ groups: 0, stale_groups: 1 });

    expect(await json(post(`/v1/runs/${run}/policy`, { version: 0, reset: true }))).toEqual({
      policy_version: 0,
    });
    expect((await stats(run)).queue).toMatchObject({ groups: 1, stale_groups: 0 });
  });

  it("a lease without a bound takes stale groups back when the queue alone cannot form a batch", async () => {
    const run = uniqueRun("unbounded");
    const { base, envIds } = await setupRun(run, 2, [2]);
    await post(`${base}/scored_data`, group(1, 2, envIds[0]!));
    await post(`/v1/runs/${run}/policy`, { version: 9 });
    expect((await post(`/v1/runs/${run}/batches/lease`, { max_staleness: 2 })).status).toBe(204);
    expect((await stats(run)).queue.stale_groups).toBe(1);
    const res = await post(`/v1/runs/${run}/batches/lease`, {});
    expect(res.status).toBe(200);
    expect((await res.json<{ groups: { policy_version: number }[] }>()).groups).toHaveLength(1);
  });
});

describe("staleness eviction on successful leases", () => {
  it("evicts again when the bound moves up with the policy version", async () => {
    const run = uniqueRun("evict-bump");
    const { base, envIds } = await setupRun(run, 2, [2]);
    const envId = envIds[0]!;
    const queue = async () =>
      (
        await json<{ queue: { groups: number; stale_groups: number } }>(
          call(`/v1/runs/${run}/stats`),
        )
      ).queue;
    for (let i = 0; i < 3; i++) await post(`${base}/scored_data`, group(i, 2, envId)); // v0
    await post(`/v1/runs/${run}/policy`, { version: 1 });
    for (let i = 0; i < 2; i++) await post(`${base}/scored_data`, group(10 + i, 2, envId)); // v1
    // Bound 1 accepts v0: a batch, nothing stale.
    expect((await post(`/v1/runs/${run}/batches/lease`, { max_staleness: 1 })).status).toBe(200);
    expect(await queue()).toMatchObject({ groups: 4, stale_groups: 0 });
    // At v2 the same bound accepts v1 and up: the lease forms a batch from v1 and sets the two v0
    // groups aside in the same step.
    await post(`/v1/runs/${run}/policy`, { version: 2 });
    await post(`${base}/scored_data`, group(20, 2, envId)); // v2
    const leased = await json<{ groups: { policy_version: number }[] }>(
      post(`/v1/runs/${run}/batches/lease`, { max_staleness: 1 }),
    );
    expect(leased.groups.map((g) => g.policy_version)).toEqual([1]);
    expect(await queue()).toMatchObject({ groups: 2, stale_groups: 2 });
  });
});
