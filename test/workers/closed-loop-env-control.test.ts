import { describe, expect, it } from "vitest";
import { call, group, json, post, setupRun, uniqueRun } from "./helpers";

function patch(run: string, envId: number | string, body: unknown) {
  return call(`/v1/runs/${run}/envs/${envId}`, {
    method: "PATCH",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

const statusEnv = (base: string, envId: number) =>
  json<{ env_weight: number; unallocated_fraction: number; self_queue_size: number }>(
    call(`${base}/status-env?env_id=${envId}`),
  );

describe("PATCH /v1/runs/{run}/envs/{id}", () => {
  it("changes weight and allocation for the next /status-env; pausing reports a zero quota", async () => {
    const run = uniqueRun("mix");
    const { base, envIds } = await setupRun(run, 8, [2, 2]);
    const [a, b] = [envIds[0]!, envIds[1]!];
    expect((await statusEnv(base, a)).env_weight).toBeCloseTo(0.5);

    const changed = await patch(run, a, { weight: 3, min_batch_allocation: 0.25 });
    expect(changed.status).toBe(200);
    expect(await changed.json()).toEqual({
      env_id: a,
      name: "env0_0",
      weight: 3,
      min_batch_allocation: 0.25,
      paused: false,
    });
    expect((await statusEnv(base, a)).env_weight).toBeCloseTo(0.75);
    expect((await statusEnv(base, b)).unallocated_fraction).toBeCloseTo(0.75);

    expect((await json(patch(run, a, { paused: true }))).paused).toBe(true);
    expect(await statusEnv(base, a)).toMatchObject({
      env_weight: 0,
      unallocated_fraction: -1,
      self_queue_size: 2 ** 31 - 1,
    });
    // The other env gets the whole weight and batch; its stats show the pause.
    expect(await statusEnv(base, b)).toMatchObject({ env_weight: 1, unallocated_fraction: 1 });

    // Resuming restores the env's quota.
    expect((await json(patch(run, a, { paused: false }))).paused).toBe(false);
    expect((await statusEnv(base, a)).env_weight).toBeCloseTo(0.75);
  });

  it("keeps what an operator set when the env registers again after a restart", async () => {
    const run = uniqueRun("mix-restart");
    const { base, envIds } = await setupRun(run, 8, [2, 2]);
    const [a, b] = [envIds[0]!, envIds[1]!];
    await patch(run, a, { weight: 3, min_batch_allocation: 0.25 });
    // Both envs restart and register again with their own settings.
    for (const [envId, name, weight] of [
      [a, "env0", 1],
      [b, "env1", 5],
    ] as const) {
      expect((await post(`${base}/disconnect-env`, { env_id: envId })).status).toBe(200);
      const again = await json<{ env_id: number; resumed: boolean }>(
        post(`${base}/register-env`, {
          max_token_length: 1024,
          desired_name: name,
          weight,
          group_size: 2,
        }),
      );
      expect(again).toMatchObject({ env_id: envId, resumed: true });
    }
    // The PATCHed env keeps weight 3 and its allocation; the other takes its new weight.
    expect((await statusEnv(base, a)).env_weight).toBeCloseTo(3 / 8);
    expect((await statusEnv(base, b)).env_weight).toBeCloseTo(5 / 8);
    expect((await statusEnv(base, b)).unallocated_fraction).toBeCloseTo(0.75);
  });

  it("a paused env's allocation no longer blocks batches of the others", async () => {
    const run = uniqueRun("mix-alloc");
    const { base, envIds } = await setupRun(run, 4, [2, 2]);
    const [a, b] = [envIds[0]!, envIds[1]!];
    await patch(run, a, { min_batch_allocation: 0.5 });
    for (let i = 0; i < 2; i++) await post(`${base}/scored_data`, group(i, 2, b));
    const blocked = await post(`/v1/runs/${run}/batches/lease`, {});
    expect(blocked.status).toBe(204);
    expect(blocked.headers.get("x-atropos-edge-reason")).toContain("min_batch_allocation");
    await patch(run, a, { paused: true });
    expect((await post(`/v1/runs/${run}/batches/lease`, {})).status).toBe(200);
  });

  it("refuses bad input with a 4xx that says what to fix, changing nothing", async () => {
    const run = uniqueRun("mix-bad");
    const { base, envIds } = await setupRun(run, 8, [2]);
    const a = envIds[0]!;
    const empty = await patch(run, a, {});
    expect(empty.status).toBe(422);
    expect(await empty.text()).toContain("at least one of weight, min_batch_allocation, paused");
    const negative = await patch(run, a, { weight: -1 });
    expect(negative.status).toBe(422);
    expect(await negative.text()).toContain("weight must be above 0");
    const unknownField = await patch(run, a, { wieght: 2 });
    expect(unknownField.status).toBe(422);
    const tooMuch = await patch(run, a, { min_batch_allocation: 1.5 });
    expect(tooMuch.status).toBe(422);
    expect((await statusEnv(base, a)).env_weight).toBe(1);
    const missing = await patch(run, 42, { paused: true });
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain("env_id 42 is not registered");
  });
});
