/**
 * Token texts an env sends with a group (`token_texts`) are stored with it and shown by
 * GET /v1/runs/{run}/groups/{id}, while batches keep exactly Atropos' 14 keys.
 */
import { describe, expect, it } from "vitest";
import { GROUP_KEYS } from "../../src/core/wire/canonical-group";
import { call, group, json, post, setupRun, uniqueRun } from "./helpers";

describe("token texts", () => {
  it("are shown with the group and never delivered in a batch", async () => {
    const run = uniqueRun("texts");
    const { base, envIds } = await setupRun(run, 4, [4]);
    const g = group(1, 4, envIds[0]!, 3);
    const texts = g.tokens.map((seq) => seq.map((t) => `<${t}>`));
    expect((await post(`${base}/scored_data`, { ...g, token_texts: texts })).status).toBe(200);
    const { groups } = await json<{ groups: { id: number }[] }>(call(`/v1/runs/${run}/groups`));
    const detail = await json<{ token_texts: string[][] | null; payload: Record<string, unknown> }>(
      call(`/v1/runs/${run}/groups/${groups[0]!.id}`),
    );
    expect(detail.token_texts).toEqual(texts);
    expect(Object.keys(detail.payload)).toEqual([...GROUP_KEYS]);

    const batch = await json<{ batch: Record<string, unknown>[] }>(call(`${base}/batch`));
    expect(Object.keys(batch.batch[0]!)).toEqual([...GROUP_KEYS]);
  });

  it("refuses token texts that do not line up with the tokens, storing nothing", async () => {
    const run = uniqueRun("texts-bad");
    const { base, envIds } = await setupRun(run, 4, [4]);
    const g = group(2, 4, envIds[0]!, 3);
    const res = await post(`${base}/scored_data`, { ...g, token_texts: [["a"]] });
    expect(res.status).toBe(422);
    expect(await res.text()).toContain("token_texts has 1 sequence(s) but tokens has 4");
    const { groups } = await json<{ groups: unknown[] }>(call(`/v1/runs/${run}/groups`));
    expect(groups).toEqual([]);
  });
});
