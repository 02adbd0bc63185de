/**
 * Bad groups are refused, not stored: each rule a group breaks gets a 422 that names the field and
 * the rule, and nothing is stored (the run's queue stays empty). Atropos stored all of these.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, group, json, post, REGISTRATION, setupRun, uniqueRun } from "./helpers";

type Group = ReturnType<typeof group> & Record<string, unknown>;

interface Refusal {
  detail: { loc: (string | number)[]; msg: string }[];
}

async function expectRefused(
  run: string,
  path: string,
  body: unknown,
  loc: (string | number)[],
  rule: string,
) {
  const res = await post(`/runs/${run}${path}`, body);
  const text = await res.text();
  expect(res.status, text).toBe(422);
  const { detail } = JSON.parse(text) as Refusal;
  expect(detail[0]!.loc).toEqual(loc);
  expect(detail[0]!.msg).toContain(rule);
  const { groups } = await json<{ groups: unknown[] }>(call(`/v1/runs/${run}/groups`));
  expect(groups).toEqual([]);
}

/** The group with `tokens[s][i]` (and its mask) set to `id`, written as raw JSON text. */
function withTokenText(g: Group, id: string): string {
  return JSON.stringify({
    ...g,
    tokens: [[424242, ...g.tokens[0]!.slice(1)], ...g.tokens.slice(1)],
  }).replace("424242", id);
}

describe("group rules", () => {
  it("refuses token ids outside [0, 2^31): negative, 2^63, 1e300", async () => {
    const run = uniqueRun("rules-ids");
    const { envIds } = await setupRun(run, 8, [2]);
    const g = group(1, 2, envIds[0]!) as Group;
    for (const id of ["-5", "9223372036854775808", "1e300", "2147483648"]) {
      await expectRefused(
        run,
        "/scored_data",
        withTokenText(g, id),
        ["body", "tokens", 0, 0],
        "[0, 2^31)",
      );
    }
    // The largest allowed id is stored.
    expect((await post(`/runs/${run}/scored_data`, withTokenText(g, "2147483647"))).status).toBe(
      200,
    );
  });

  it("refuses an empty sequence", async () => {
    const run = uniqueRun("rules-empty");
    const { envIds } = await setupRun(run, 8, [2]);
    const g = group(2, 2, envIds[0]!) as Group;
    const empty = {
      ...g,
      tokens: [g.tokens[0], []],
      masks: [g.masks[0], []],
      inference_logprobs: [g.inference_logprobs[0], []],
    };
    await expectRefused(run, "/scored_data", empty, ["body", "tokens", 1], "must not be empty");
  });

  it("refuses advantages and logprobs whose shape differs from tokens", async () => {
    const run = uniqueRun("rules-shape");
    const { envIds } = await setupRun(run, 8, [2]);
    const g = group(3, 2, envIds[0]!) as Group;
    const short = g.tokens.map((seq, s) => seq.slice(s).map(() => 0.5));
    await expectRefused(
      run,
      "/scored_data",
      { ...g, advantages: short },
      ["body", "advantages", 1],
      "shape of tokens",
    );
    await expectRefused(
      run,
      "/scored_data",
      { ...g, advantages: [short[0]] },
      ["body", "advantages"],
      "shape of tokens",
    );
    await expectRefused(
      run,
      "/scored_data",
      { ...g, inference_logprobs: short },
      ["body", "inference_logprobs", 1],
      "entries but tokens[1]",
    );
    await expectRefused(
      run,
      "/scored_data",
      { ...g, ref_logprobs: short },
      ["body", "ref_logprobs", 1],
      "shape of tokens",
    );
  });

  it("refuses sequences longer than the trainer's max_token_len, in a list too", async () => {
    const run = uniqueRun("rules-len");
    const { envIds } = await setupRun(run, 8, [2], { maxTokenLen: 16 });
    const fits = group(4, 2, envIds[0]!, 16);
    const long = group(5, 2, envIds[0]!, 17);
    await expectRefused(run, "/scored_data", long, ["body", "tokens", 0], "max_token_len (16");
    await expectRefused(
      run,
      "/scored_data_list",
      [fits, long],
      ["body", 1, "tokens", 0],
      "max_token_len (16",
    );
    expect((await post(`/runs/${run}/scored_data`, fits)).status).toBe(200);
  });

  it("keeps a refused group's env heartbeat as it was; a stored group renews it", async () => {
    const run = uniqueRun("rules-beat");
    const { envIds } = await setupRun(run, 8, [2], { maxTokenLen: 16 });
    const lastSeen = async () =>
      (await env.DB.prepare("SELECT last_seen_at AS t FROM envs WHERE run = ?1 AND env_id = ?2")
        .bind(run, envIds[0]!)
        .first<{ t: number }>())!.t;
    await env.DB.prepare("UPDATE envs SET last_seen_at = 0 WHERE run = ?1").bind(run).run();
    const long = group(5, 2, envIds[0]!, 17);
    await expectRefused(run, "/scored_data", long, ["body", "tokens", 0], "max_token_len (16");
    expect(await lastSeen()).toBe(0);
    expect((await post(`/runs/${run}/scored_data`, group(4, 2, envIds[0]!, 16))).status).toBe(200);
    expect(await lastSeen()).toBeGreaterThan(0);
  });

  it("names the group of a list that breaks a rule and stores none of the list", async () => {
    const run = uniqueRun("rules-list");
    const { envIds } = await setupRun(run, 8, [2]);
    const good = group(6, 2, envIds[0]!);
    const bad = {
      ...group(7, 2, envIds[0]!),
      tokens: [[-1, 2, 3, 4, 5, 6], group(7, 2, 0).tokens[1]],
    };
    await expectRefused(
      run,
      "/scored_data_list",
      [good, bad],
      ["body", 1, "tokens", 0, 0],
      "[0, 2^31)",
    );
  });

  it("refuses a non-finite float (1e400) instead of storing it as null", async () => {
    const run = uniqueRun("rules-finite");
    const { envIds } = await setupRun(run, 8, [2]);
    const g = group(8, 2, envIds[0]!) as Group;
    const text = JSON.stringify({ ...g, advantages: g.tokens.map((seq) => seq.map(() => 424242)) });
    await expectRefused(
      run,
      "/scored_data",
      text.replace("424242", "1e400"),
      ["body", "advantages", 0, 0],
      "finite",
    );
  });

  it("refuses mask entries that are neither -100 nor a token id", async () => {
    const run = uniqueRun("rules-masks");
    const { envIds } = await setupRun(run, 8, [2]);
    const g = group(9, 2, envIds[0]!) as Group;
    for (const bad of [-1, 2 ** 31, 2 ** 63]) {
      const masks = [[bad, ...g.masks[0]!.slice(1)], ...g.masks.slice(1)];
      await expectRefused(run, "/scored_data", { ...g, masks }, ["body", "masks", 0, 0], "-100");
    }
  });

  it("refuses distillation arrays whose shape differs from tokens", async () => {
    const run = uniqueRun("rules-distill");
    const { envIds } = await setupRun(run, 8, [2]);
    const g = group(10, 2, envIds[0]!) as Group;
    const ids = g.tokens.map((seq) => seq.map((t) => [t, 1]));
    const logprobs = ids.map((seq) => seq.map((k) => k.map(() => -0.5)));
    const short = [ids[0]!.slice(1), ids[1]!];
    await expectRefused(
      run,
      "/scored_data",
      { ...g, distill_token_ids: short, distill_logprobs: logprobs },
      ["body", "distill_token_ids", 0],
      "shape of tokens",
    );
    const narrow = [[[-0.5], ...logprobs[0]!.slice(1)], logprobs[1]!];
    await expectRefused(
      run,
      "/scored_data",
      { ...g, distill_token_ids: ids, distill_logprobs: narrow },
      ["body", "distill_logprobs", 0, 0],
      "shape of distill_token_ids",
    );
    const ok = { ...g, distill_token_ids: ids, distill_logprobs: logprobs };
    expect((await post(`/runs/${run}/scored_data`, ok)).status).toBe(200);
  });

  it("accepts a UTF-8 byte order mark before a list, as before a single group", async () => {
    const run = uniqueRun("rules-bom");
    const { envIds } = await setupRun(run, 8, [2]);
    const list = `\uFEFF${JSON.stringify([group(11, 2, envIds[0]!)])}`;
    const res = await post(`/runs/${run}/scored_data_list`, list);
    expect(res.status, await res.text()).toBe(200);
  });

  it("bounds the sizes a trainer and an env register; Atropos' own values pass", async () => {
    const run = uniqueRun("rules-sizes");
    for (const [field, value] of [
      ["max_token_len", 0],
      ["batch_size", 1e9],
    ] as const) {
      const res = await post(`/runs/${run}/register`, { ...REGISTRATION, [field]: value });
      expect(res.status).toBe(422);
      const { detail } = await res.json<Refusal>();
      expect(detail[0]!.loc).toEqual(["body", field]);
    }
    expect(
      (await post(`/runs/${run}/register`, { ...REGISTRATION, max_token_len: -1 })).status,
    ).toBe(200);
    const env = { max_token_length: 2048, desired_name: "sizes", group_size: 16, weight: 1 };
    for (const [field, value] of [
      ["max_token_length", -5],
      ["group_size", 1e9],
      ["desired_name", "x".repeat(100_000)],
    ] as const) {
      const res = await post(`/runs/${run}/register-env`, { ...env, [field]: value });
      expect(res.status).toBe(422);
      const { detail } = await res.json<Refusal>();
      expect(detail[0]!.loc).toEqual(["body", field]);
    }
    expect((await post(`/runs/${run}/register-env`, env)).status).toBe(200);
  });

  it("refuses an env weight that is not finite and bounded; /status-env stays a number", async () => {
    const run = uniqueRun("rules-weight");
    expect((await post(`/runs/${run}/register`, REGISTRATION)).status).toBe(200);
    const env = { max_token_length: 1024, desired_name: "heavy", group_size: 2 };
    const res = await post(`/runs/${run}/register-env`, { ...env, weight: 1e308 });
    expect(res.status).toBe(422);
    const { detail } = await res.json<Refusal>();
    expect(detail[0]!.loc).toEqual(["body", "weight"]);
    expect(detail[0]!.msg).toContain("between 0 and 1e6");
    expect((await post(`/runs/${run}/register-env`, { ...env, weight: -1 })).status).toBe(422);
    const ok = await json<{ env_id: number }>(
      post(`/runs/${run}/register-env`, { ...env, weight: 1e6 }),
    );
    await post(`/runs/${run}/register-env`, { ...env, desired_name: "light", weight: 1 });
    const status = await json<{ env_weight: unknown }>(
      call(`/runs/${run}/status-env?env_id=${ok.env_id}`),
    );
    expect(typeof status.env_weight).toBe("number");
  });
});
