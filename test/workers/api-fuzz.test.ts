import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../src/core/codecs/rng";
import { call, group, gzip, json, post, setupRun, uniqueRun } from "./helpers";

/** Values that are invalid for each field (wrong types, shapes that disagree with tokens). */
const INVALID: Record<string, unknown[]> = {
  tokens: [null, "x", [[1.5]], [["a"]], {}, [], [[1, 2]], 7],
  masks: [null, "x", [[1.5]], {}, [[1]], true],
  scores: [null, "x", [["a"]], {}, [1], ["1e400"]],
  inference_logprobs: ["x", [["a"]], {}, [[]], [[1, 2, 3]]],
  messages: ["x", [[{}]], [["a"]], {}, [[{ role: "user" }]]],
  env_id: ["abc", -1, 1.5, 99, [0]],
  overrides: ["x", [1], {}],
  advantages: ["x", [["a"]], {}],
};

describe("fuzz: malformed submissions", () => {
  it("answers hundreds of malformed bodies with 4xx + message and leaves the queue unchanged", async () => {
    const run = uniqueRun("fuzz");
    const { base, envIds } = await setupRun(run, 8, [4]);
    await post(`${base}/scored_data`, group(1, 4, envIds[0]!));
    const before = await json(call(`${base}/status`));
    // Deterministic, so a failing case can be reproduced.
    const rand = mulberry32(42);
    const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;
    const valid = () => group(1000 + Math.floor(rand() * 1e6), 4, envIds[0]!);
    const keys = Object.keys(INVALID);
    const cases: { body: BodyInit; headers?: Record<string, string>; path?: string }[] = [];
    for (let i = 0; i < 300; i++) {
      const kind = i % 6;
      const g: Record<string, unknown> = valid();
      if (kind === 0) {
        const key = pick(keys);
        g[key] = pick(INVALID[key]!);
      } else if (kind === 1) delete g[pick(["tokens", "masks", "scores"])];
      else if (kind === 2)
        cases.push({ body: JSON.stringify(g).slice(0, Math.floor(rand() * 200)) });
      else if (kind === 3) g.env_id = pick([99, -1, 12345, "abc"]);
      else if (kind === 4)
        cases.push({
          body: JSON.stringify(g).slice(0, 50),
          headers: { "content-encoding": "gzip" },
        });
      else g.scores = (g.scores as number[]).slice(0, 2);
      if (kind === 0 || kind === 1 || kind === 3 || kind === 5) {
        const path = rand() < 0.3 ? `${base}/scored_data_list` : `${base}/scored_data`;
        cases.push({ body: JSON.stringify(path.endsWith("list") ? [valid(), g] : g), path });
      }
    }
    cases.push({ body: await gzip("[1,2"), headers: { "content-encoding": "gzip" } });
    cases.push({ body: "" });
    cases.push({ body: "[]" });
    let checked = 0;
    for (const c of cases) {
      const res = await call(c.path ?? `${base}/scored_data`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(c.headers ?? {}) },
        body: c.body,
      });
      const text = await res.text();
      expect(
        res.status,
        `case ${checked}: ${String(c.body).slice(0, 80)} → ${text}`,
      ).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      if (res.status === 400) expect(text).toBe("Invalid gzip payload");
      else expect(JSON.parse(text).error.message.length).toBeGreaterThan(5);
      checked++;
    }
    expect(checked).toBeGreaterThan(250);
    expect(await json(call(`${base}/status`))).toEqual(before);
    const stats = await json<{ queue: { buffered_groups: number } }>(call(`/v1/runs/${run}/stats`));
    expect(stats.queue.buffered_groups).toBe(0);
  });
});
