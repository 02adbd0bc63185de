import { describe, expect, it } from "vitest";
import {
  envCounts,
  ProgressPrinter,
  progressLines,
  RecentMean,
  summaryLines,
  type TrainerProgress,
  wrapLine,
} from "../../../src/cli/progress";
import type { RunStats } from "../../../src/client/trainer-client";
import type { FeederSummary } from "../../../src/worker/env-feeder";

const progress: TrainerProgress = {
  step: 17,
  targetSteps: 20,
  elapsedS: 12.5,
  batches: 17,
  sequences: 544,
  meanScore: 0.4375,
  staleness: { mean: 1.25, max: 3 },
  lastReason:
    "queued sequences 24 < batch_size is 32; waiting for 8 more from env letter_counting (env_id 1)",
  problems: 0,
};

const stats: RunStats = {
  run: "default",
  step: 17,
  policy_version: 17,
  batch_size: 32,
  registered: true,
  queue: {
    groups: 7,
    sequences: 40,
    buffered_groups: 0,
    by_env: [
      { env_id: 0, name: "gsm8k_lite", groups: 3, sequences: 24 },
      { env_id: 1, name: "letter_counting", groups: 4, sequences: 16 },
    ],
  },
  rates: { delivered_batches_per_s: 1.36, ingest_sequences_per_s: 50.5 },
  envs: [
    { env_id: 0, name: "gsm8k_lite", status: "active", groups_submitted: 25, mean_score: 0.5 },
    {
      env_id: 1,
      name: "letter_counting",
      status: "active",
      groups_submitted: 131,
      mean_score: 0.375,
    },
  ],
  policy_versions: { current: 17, queued_min: 15, queued_max: 17 },
  blocked_reason: null,
};

function feeder(envId: number, name: string): FeederSummary {
  return {
    run: "default",
    name,
    env: name,
    env_id: envId,
    status: "running",
    in_flight: 4,
    issued: 40,
    succeeded: 32,
    failed: 1,
    dropped: 2,
    rejected: 7,
    last_error: null,
    eval_running: false,
    evaluations: 0,
    drop_reasons: {},
    backing_off: null,
  };
}

const numbers = (text: string) => (text.match(/\d+(?:\.\d+)?/g) ?? []).sort();

function fakeTty(columns: number) {
  const writes: string[] = [];
  const out = {
    isTTY: true,
    columns,
    write: (s: string) => writes.push(s),
  } as unknown as NodeJS.WriteStream;
  return { writes, out };
}

describe("progress block", () => {
  const envs = envCounts(
    [
      { name: "gsm8k_lite", envId: null, feeder: feeder(0, "gsm8k_lite"), pollError: null },
      { name: "letter_counting", envId: 1, droppedBeforeSend: 3, errors: [] },
    ],
    stats,
  );
  const lines = progressLines(progress, envs);

  it.each([40, 80, 120])("wraps at %i columns without cutting any number", (columns) => {
    const rows = lines.flatMap((l) => wrapLine(l, columns));
    // Each row is checked on its own: a number split across rows would not match.
    expect(rows.flatMap(numbers).sort()).toEqual(lines.flatMap(numbers).sort());
    expect(rows.join(" ")).toContain("batch_size is 32");
    for (const row of rows) {
      if (row.trim().includes(" ")) expect(row.length).toBeLessThan(columns);
    }
  });

  it("draws every number of the block on a narrow terminal", () => {
    const { writes, out } = fakeTty(40);
    const printer = new ProgressPrinter(out);
    printer.draw(lines);
    printer.draw(lines);
    const [first, second] = writes;
    expect(first!.split("\n").flatMap(numbers).sort()).toEqual(
      expect.arrayContaining(lines.flatMap(numbers)),
    );
    expect(first).toContain("batch_size is 32;");
    // The second draw moves up over exactly the rows the first one used.
    const rowsDrawn = first!.split("\n").length - 1;
    expect(second!.startsWith(`\x1b[${rowsDrawn}F`)).toBe(true);
  });
});

describe("progress and summary counts", () => {
  it("define submitted once (the API's record) and print the same env line in both", () => {
    const envs = envCounts(
      [{ name: "gsm8k_lite", envId: 0, feeder: feeder(0, "gsm8k_lite"), pollError: null }],
      stats,
    );
    expect(envs[0]).toMatchObject({
      submitted: 25,
      queued: 3,
      items: { issued: 40, ran: 32, rejectedGroups: 7, failed: 1, dropped: 2, inFlight: 4 },
    });
    const block = progressLines({ ...progress, lastReason: null }, envs);
    const summary = summaryLines(progress, envs, { command: "train", stopped: false, totalS: 30 });
    expect(summary[1]).toBe("── atropos-edge train: summary ──");
    const envLine = summary.find((l) => l.startsWith("env "))!.slice("env ".length);
    expect(block).toContain(`  ${envLine}`);
    expect(envLine).toMatch(/submitted 25 groups .*ran 32 \(7 groups rejected\)/);
    // The same rates: from the training time, not the time the summary is printed.
    expect(block[0]).toContain("1.36 batches/s");
    expect(block[0]).toContain("43.5 rollouts/s");
    expect(summary).toContain("batches/s         1.36");
    expect(summary).toContain("rollouts trained  544 (43.5/s)");
  });

  it("counts an env that has not registered yet as nothing submitted", () => {
    const [c] = envCounts([{ name: "new_env", envId: null, droppedBeforeSend: 0 }], stats);
    expect(c).toMatchObject({ submitted: 0, queued: 0, status: "starting", items: null });
  });

  it("shows failed items and their share, and says the score covers only successful items", () => {
    const envs = envCounts(
      [
        {
          name: "letter_counting",
          envId: 1,
          droppedBeforeSend: 0,
          failed: 12,
          finishedItems: 48,
          errors: ["boom"],
        },
        { name: "gsm8k_lite", envId: 0, feeder: feeder(0, "gsm8k_lite"), pollError: null },
      ],
      stats,
    );
    expect(envs[0]!.failedShare).toBe(0.25);
    // The Worker env: 1 failed of 32 ran + 1 failed.
    expect(envs[1]!.failedShare).toBeCloseTo(1 / 33);
    const block = progressLines(progress, envs);
    expect(block[1]).toContain("failed 12 of 48 items (25.0%)");
    expect(block[2]).toContain("failed 1 (3.0%)");
    const summary = summaryLines(progress, envs, { command: "start", stopped: false, totalS: 1 });
    expect(summary).toContain(
      "mean score        0.438 (successful items only: the 13 failed items have no score)",
    );
    expect(summary).toContain("failed items      13 of 81 (16.0%)");
  });

  it("the progress line's mean says which steps it covers: the last 10, and all of them", () => {
    const recent = new RecentMean();
    for (let i = 0; i < 10; i++) recent.add(0, 32);
    expect(recent.add(1, 32)).toBeCloseTo(0.1); // steps 2–11: one of ten scored 1
    let last = null as number | null;
    for (let i = 0; i < 9; i++) last = recent.add(1, 32);
    expect(last).toBe(1);
    const [line] = progressLines({ ...progress, recentMeanScore: 0.9 }, []);
    expect(line).toContain("mean score 0.900 last 10 steps, 0.438 cumulative");
  });
});
