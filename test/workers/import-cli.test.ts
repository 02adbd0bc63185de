/**
 * `atropos-edge import` against the real API (workerd, local D1/R2): the command function with a
 * fetch that enters the Worker app, as the CLI's HTTP requests would.
 */
import { describe, expect, it } from "vitest";
import { type ImportProgress, importGroupsJsonl } from "../../src/cli/import-command";
import { call, callWith, group, json, post, setupRun, uniqueRun } from "./helpers";

const ADMIN = "admin-secret-for-import-tests";
const fetchApp: typeof fetch = async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  return callWith({ API_TOKEN: ADMIN }, `${url.pathname}${url.search}`, init);
};
const connection = { api: "http://api.test/", token: ADMIN, fetch: fetchApp };

/** JSONL as `process` writes it: one group per line, no env_id. */
function jsonl(n: number, size: number, score = 1): string {
  return Array.from({ length: n }, (_, i) => {
    const { env_id: _envId, ...g } = group(1000 + i, size, null);
    return JSON.stringify({ ...g, scores: g.scores.map(() => score) });
  }).join("\n");
}

const queued = async (run: string) =>
  (await json<{ queue: { groups: number } }>(call(`/v1/runs/${run}/stats`))).queue.groups;

describe("atropos-edge import", () => {
  it("loads a file into the queue once, however often it is imported, with progress", async () => {
    const run = uniqueRun("import-q");
    await setupRun(run, 4, [2]);
    const text = `${jsonl(70, 2)}\n`;
    const progress: ImportProgress[] = [];
    const first = await importGroupsJsonl(connection, text, { run }, (p) => progress.push(p));
    expect(first).toMatchObject({ lines: 70, stored: 70, duplicates: 0, into: "queue" });
    // Two chunks (64 + 6 lines), one progress report each.
    expect(progress.map((p) => p.linesDone)).toEqual([64, 70]);
    expect(await queued(run)).toBe(70);
    const again = await importGroupsJsonl(connection, text, { run });
    expect(again).toMatchObject({ stored: 0, duplicates: 70 });
    expect(await queued(run)).toBe(70);
    // The imported groups form batches like any others.
    expect((await post(`/v1/runs/${run}/batches/lease`, {})).status).toBe(200);
  });

  it("validates every line before sending anything", async () => {
    const run = uniqueRun("import-bad");
    await setupRun(run, 4, [2]);
    const lines = jsonl(4, 2).split("\n");
    lines[1] = "{not json";
    lines[2] = JSON.stringify({ tokens: [[1, 2]], masks: [[1]], scores: "high" });
    await expect(importGroupsJsonl(connection, lines.join("\n"), { run })).rejects.toThrow(
      /nothing imported: 2 invalid line\(s\)\nline 2: not JSON.*\nline 3: /s,
    );
    expect(await queued(run)).toBe(0);
    await expect(
      importGroupsJsonl(connection, jsonl(1, 2), { run, into: "elsewhere" }),
    ).rejects.toThrow("--into must be queue or replay");
  });

  it("loads offline groups into the replay buffer, which batches then mix in", async () => {
    const run = uniqueRun("import-r");
    const { base, envIds } = await setupRun(run, 4, [2]);
    const imported = await importGroupsJsonl(connection, jsonl(3, 2, 0.9), {
      run,
      into: "replay",
    });
    expect(imported).toMatchObject({ stored: 3, keptForReplay: 3, into: "replay" });
    expect(await queued(run)).toBe(0);
    const again = await importGroupsJsonl(connection, jsonl(3, 2, 0.9), { run, into: "replay" });
    expect(again).toMatchObject({ stored: 0, duplicates: 3 });
    expect(await json(call(`/v1/runs/${run}/replay`))).toMatchObject({ buffered_groups: 3 });

    // Offline groups alone never form a batch; with replay on, they join online data.
    await call(`/v1/runs/${run}/replay`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ enabled: true, fraction: 0.5 }),
    });
    expect((await post(`/v1/runs/${run}/batches/lease`, {})).status).toBe(204);
    await post(`${base}/scored_data`, group(1, 2, envIds[0]!));
    const leased = await json<{ groups: { replayed: boolean; env_id: number | null }[] }>(
      post(`/v1/runs/${run}/batches/lease`, {}),
    );
    expect(leased.groups.map((g) => g.replayed).sort()).toEqual([false, true]);
  });
});
