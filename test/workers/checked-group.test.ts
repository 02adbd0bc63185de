/**
 * The queue path checks every group of an item before it submits any (CheckedGroup.of), so the
 * trajectories sent beside a group are checked there too: an item whose second group names a
 * sequence it does not have stores nothing, instead of its first group.
 */
import { describe, expect, it } from "vitest";
import { CheckedGroup } from "../../src/api/ingest-submit";
import { group, trajectory } from "./helpers";

describe("CheckedGroup.of", () => {
  it("refuses a group whose trajectories name a sequence it does not have", () => {
    const ok = { ...group(1, 2, null), trajectories: [trajectory(0), trajectory(1)] };
    expect(CheckedGroup.of(ok).group.tokens).toHaveLength(2);
    const outside = { ...group(2, 2, null), trajectories: [trajectory(5)] };
    expect(() => CheckedGroup.of(outside)).toThrow(/trajectory names sequence 5; the group has 2/);
  });
});
