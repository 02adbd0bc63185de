/**
 * The EnvFeeder's state model and step metrics, in Node without a Durable Object: each change is
 * a synchronous function of (state, input, now).
 */
import { describe, expect, it } from "vitest";
import {
  addObservations,
  clearStepMetrics,
  MAX_OBSERVATIONS,
  stepMetrics,
} from "../../../src/worker/feeder/metrics";
import {
  applyReport,
  expireInFlight,
  type FeederState,
  forgetRegistration,
  issue,
  maySend,
  sendFailed,
  sent,
  startedState,
  summarize,
  takeUnsent,
} from "../../../src/worker/feeder/state";

const SPEC = { envName: "gsm8k", config: {}, inference: [] };

function fresh(): FeederState {
  const state = startedState("run", "run/gsm8k/0", SPEC, null);
  state.envId = 0;
  state.status = "running";
  return state;
}

describe("feeder state", () => {
  it("a restart keeps counters and in-flight items, and the checkpoint only for the same env", () => {
    const before = fresh();
    issue(before, "a", { n: 1 }, 10);
    before.succeeded = 3;
    before.checkpoint = { pos: 7 };
    const again = startedState("run", "run/gsm8k/0", SPEC, before);
    expect(again).toMatchObject({ envId: 0, succeeded: 3, checkpoint: { pos: 7 } });
    expect(Object.keys(again.inFlight)).toEqual(["a"]);
    const other = startedState("run", "run/gsm8k/0", { ...SPEC, envName: "other" }, before);
    expect(other).toMatchObject({ envId: null, checkpoint: null, succeeded: 3 });
  });

  it("counts a report once, issues its backlog, and feeds the curriculum only scored items", () => {
    const state = fresh();
    issue(state, "a", { n: 1 }, 0);
    const report = {
      ok: true,
      scores: [1, 0],
      submitted: 1,
      rejected: ["identical scores"],
      observations: { acc: [1] },
      backlogJson: JSON.stringify([{ itemId: "a.b0", item: { n: 2 } }]),
    };
    expect(applyReport(state, "a", report, 5)).toEqual({
      entry: { item: { n: 1 }, issuedAt: 0 },
      scored: true,
    });
    expect(applyReport(state, "a", report, 6)).toBeNull();
    expect(state).toMatchObject({ succeeded: 1, rejected: 1, failed: 0 });
    expect(state.inFlight).toEqual({ "a.b0": { item: { n: 2 }, issuedAt: 5 } });
    expect(state.dropReasons).toEqual({ "identical scores": 1 });
    expect(applyReport(state, "a.b0", { ok: false }, 7)).toEqual({
      entry: { item: { n: 2 }, issuedAt: 5 },
      scored: false,
    });
    expect(summarize(state, false)).toMatchObject({ in_flight: 0, succeeded: 1, failed: 1 });
  });

  it("an item the env dropped counts as a drop with its reason, and enough drops back off", () => {
    const state = fresh();
    for (let i = 0; i < 200; i++) {
      issue(state, `i${i}`, i, 0);
      applyReport(state, `i${i}`, { ok: true, dropped: "no group" }, 1000);
    }
    expect(state.dropped).toBe(200);
    expect(state.backingOff).toEqual({ message: expect.any(String), reported_at: 1000 });
    issue(state, "kept", 0, 0);
    applyReport(state, "kept", { ok: true, submitted: 1 }, 2000);
    expect(state.backingOff).toBeNull();
  });

  it("drops items past twice worker_timeout, and none when worker_timeout ≤ 0", () => {
    const state = fresh();
    issue(state, "old", 1, 0);
    issue(state, "new", 2, 15_000);
    expireInFlight(state, 0, 1e12);
    expect(Object.keys(state.inFlight)).toHaveLength(2);
    expireInFlight(state, 10, 20_001);
    expect(Object.keys(state.inFlight)).toEqual(["new"]);
    expect(state.dropReasons).toEqual({ "worker timeout": 1 });
  });

  it("a failed send frees its slots at once and resends the same items after 0, 1, 3 … ticks", () => {
    const state = fresh();
    issue(state, "a", { n: 1 }, 0);
    issue(state, "b", { n: 2 }, 0);
    const items = [
      { itemId: "a", item: { n: 1 } },
      { itemId: "b", item: { n: 2 } },
    ];
    sendFailed(state, items, "queue unavailable");
    expect(state.inFlight).toEqual({});
    expect(state.lastError).toContain("queue unavailable");
    expect(maySend(state)).toBe(true); // first failure: the next tick tries again
    expect(takeUnsent(state, 1)).toEqual([items[0]]);
    sendFailed(state, [items[0]!], "still down");
    expect(maySend(state)).toBe(false); // second failure: one tick skipped
    expect(maySend(state)).toBe(true);
    expect(takeUnsent(state, 5)).toEqual(items);
    expect(state.unsent).toBeUndefined();
    sent(state, 2);
    expect(state).toMatchObject({ issued: 2, sendFailures: 0 });
    sendFailed(state, items, "down");
    forgetRegistration(state);
    expect(state.unsent).toBeUndefined();
  });
});

describe("feeder step metrics", () => {
  it("summarizes a step's observations and drops, bounded per name, and starts over", () => {
    const state = fresh();
    addObservations(state, { acc: [1, 0] });
    addObservations(state, { acc: Array(MAX_OBSERVATIONS).fill(1) });
    expect(state.stepObservations!.acc).toHaveLength(MAX_OBSERVATIONS);
    issue(state, "a", 1, 0);
    applyReport(state, "a", { ok: true, dropped: "too long" }, 0);
    expect(stepMetrics(state)).toMatchObject({ "drops/too long": 1 });
    expect(Object.keys(stepMetrics(state)).some((k) => k.startsWith("acc"))).toBe(true);
    clearStepMetrics(state);
    expect(stepMetrics(state)).toEqual({});
    expect(state.dropReasons).toEqual({ "too long": 1 });
  });
});
