import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { renewEmptyEpoch } from "../../src/api/storage/empty-epoch";
import { call, group, gzip, json, post, REGISTRATION, setupRun, uniqueRun } from "./helpers";

const LEASE_STAGES = ["lease", "lease-read", "lease-plan", "lease-write"];
const phasesOf = (res: Response) =>
  (res.headers.get("server-timing") ?? "").split(", ").map((p) => p.split(";")[0]);

describe("Atropos wire compatibility", () => {
  it("answers / and the unregistered defaults exactly like Atropos", async () => {
    const run = uniqueRun();
    expect(await json(call("/"))).toEqual({ message: "AtroposLib API" });
    expect(await json(call(`/runs/${run}/info`))).toEqual({ batch_size: -1, max_token_len: -1 });
    expect(await json(call(`/runs/${run}/wandb_info`))).toEqual({ group: null, project: null });
    expect(await json(call(`/runs/${run}/status`))).toEqual({ current_step: 0, queue_size: 0 });
    expect(await json(call(`/runs/${run}/batch`))).toEqual({
      status: "error",
      message: "Trainer not registered. Call /register first.",
      batch: [],
    });
    const latest = await json(call(`/runs/${run}/latest_example`));
    expect(latest).toEqual({
      tokens: [],
      masks: [],
      scores: [],
      advantages: [],
      ref_logprobs: [],
      generation_params: [],
      inference_logprobs: [],
      messages: [],
      images: [],
    });
  });

  it("returns the trainer uuid as a bare 128-bit JSON integer", async () => {
    const res = await post(`/runs/${uniqueRun()}/register`, REGISTRATION);
    const text = await res.text();
    expect(text).toMatch(/^\{"uuid":\d{30,39}\}$/);
    expect(BigInt(text.slice(8, -1)) < 2n ** 128n).toBe(true);
  });

  it("does not wedge when data arrives before /register, and re-registration resumes at a new step", async () => {
    const run = uniqueRun();
    const early = await post(`/runs/${run}/scored_data`, group(1, 4, null));
    expect(await early.json()).toEqual({ status: "received" });
    await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 4 });
    expect(await json(call(`/runs/${run}/info`))).toEqual({ batch_size: 4, max_token_len: 2048 });
    const batch = await json<{ batch: unknown[] }>(call(`/runs/${run}/batch`));
    expect(batch.batch).toHaveLength(1);
    await post(`/runs/${run}/register`, { ...REGISTRATION, batch_size: 2, starting_step: 40 });
    expect(await json(call(`/runs/${run}/info`))).toEqual({ batch_size: 2, max_token_len: 2048 });
    expect((await json<{ current_step: number }>(call(`/runs/${run}/status`))).current_step).toBe(
      40,
    );
  });

  it("registers envs only after the trainer, with Atropos' naming and fields", async () => {
    const run = uniqueRun();
    const env = { max_token_length: 512, desired_name: "gsm8k", weight: 1, group_size: 4 };
    expect(await json(post(`/runs/${run}/register-env`, env))).toEqual({
      status: "wait for trainer to start",
    });
    await post(`/runs/${run}/register`, { ...REGISTRATION, starting_step: 3 });
    const first = await json(post(`/runs/${run}/register-env`, env));
    expect(first).toMatchObject({
      status: "success",
      env_id: 0,
      wandb_name: "gsm8k_0",
      checkpoint_dir: "ckpt",
      starting_step: 3,
      checkpoint_interval: 10,
      num_steps: 100,
    });
    const second = await json(post(`/runs/${run}/register-env`, env));
    expect(second).toMatchObject({ env_id: 1, wandb_name: "gsm8k_1" });
  });

  it("resumes an env identity with env_key, and a disconnected env of the same name", async () => {
    const run = uniqueRun();
    await post(`/runs/${run}/register`, REGISTRATION);
    const env = { max_token_length: 512, desired_name: "math", weight: 1, group_size: 4 };
    const a = await json<{ env_id: number }>(
      post(`/runs/${run}/register-env`, { ...env, env_key: "worker-a" }),
    );
    const again = await json<{ env_id: number; resumed: boolean }>(
      post(`/runs/${run}/register-env`, { ...env, env_key: "worker-a" }),
    );
    expect(again.env_id).toBe(a.env_id);
    expect(again.resumed).toBe(true);
    const plain = await json<{ env_id: number }>(post(`/runs/${run}/register-env`, env));
    expect(await json(post(`/runs/${run}/disconnect-env`, { env_id: plain.env_id }))).toEqual({
      status: "success",
    });
    const restarted = await json<{ env_id: number; wandb_name: string }>(
      post(`/runs/${run}/register-env`, env),
    );
    expect(restarted.env_id).toBe(plain.env_id);
    expect(restarted.wandb_name).toBe("math_1");
  });

  it("computes /status-env exactly like Atropos' worked example", async () => {
    const run = uniqueRun();
    await post(`/runs/${run}/register`, REGISTRATION);
    await post(`/runs/${run}/register-env`, {
      max_token_length: 512,
      desired_name: "a",
      weight: 1,
      group_size: 4,
    });
    await post(`/runs/${run}/register-env`, {
      max_token_length: 1024,
      desired_name: "b",
      weight: 2,
      group_size: 2,
      min_batch_allocation: 0.25,
    });
    for (let i = 0; i < 4; i++) await post(`/runs/${run}/scored_data`, group(100 + i, 4, 0));
    await post(`/runs/${run}/scored_data`, group(200, 3, null));
    // (The GET-with-JSON-body form Python clients use is exercised over real HTTP in test/e2e.)
    const env0 = await json(call(`/runs/${run}/status-env?env_id=0`));
    expect(env0).toEqual({
      current_step: 0,
      queue_size: 5,
      unallocated_fraction: 0.75,
      self_queue_size: 4,
      max_group_size: 4,
      env_weight: 0.2,
      policy_version: 0,
    });
    const env1 = await json(call(`/runs/${run}/status-env?env_id=1`));
    expect(env1).toEqual({
      current_step: 0,
      queue_size: 10,
      unallocated_fraction: 0.75,
      self_queue_size: 0,
      max_group_size: 4,
      env_weight: 0.8,
      policy_version: 0,
    });
    const missing = await call(`/runs/${run}/status-env`);
    expect(missing.status).toBe(422);
    const unknown = await call(`/runs/${run}/status-env?env_id=9`);
    expect(unknown.status).toBe(404);
  });

  it("buffers smaller groups until they sum to group_size, and queues larger ones", async () => {
    const run = uniqueRun();
    const { base, envIds } = await setupRun(run, 8, [4]);
    const envId = envIds[0]!;
    expect(await json(post(`${base}/scored_data`, group(1, 3, envId)))).toEqual({
      status: "buffered",
      buffer_size: 3,
    });
    expect(await json(post(`${base}/scored_data`, group(2, 2, envId)))).toEqual({
      status: "buffered",
      buffer_size: 5,
    });
    // 3 + 1 = 4: the earliest combination is released, the 2 stays buffered.
    expect(await json(post(`${base}/scored_data`, group(3, 1, envId)))).toEqual({
      status: "buffered",
      buffer_size: 2,
    });
    expect(await json(call(`${base}/status`))).toEqual({ current_step: 0, queue_size: 2 });
    expect(await json(post(`${base}/scored_data`, group(4, 8, envId)))).toEqual({
      status: "received",
    });
    expect(await json(call(`${base}/status`))).toEqual({ current_step: 0, queue_size: 3 });
  });

  it("serves batches FIFO, one step per batch, with any mix of group sizes", async () => {
    const run = uniqueRun();
    const { base, envIds } = await setupRun(run, 6, [4, 2]);
    await post(`${base}/scored_data`, group(1, 4, envIds[0]!));
    await post(`${base}/scored_data`, group(2, 4, envIds[0]!));
    await post(`${base}/scored_data`, group(3, 2, envIds[1]!));
    await post(`${base}/scored_data`, group(4, 2, envIds[1]!));
    // Atropos deadlocks here (6 is not a multiple of 4); any combination summing to 6 works.
    const first = await json<{ batch: { tokens: number[][]; env_id: number }[] }>(
      call(`${base}/batch`),
    );
    expect(first.batch.map((g) => g.tokens.length)).toEqual([4, 2]);
    expect(first.batch[0]!.tokens[0]![0]).toBe(group(1, 4, 0).tokens[0]![0]);
    expect(await json(call(`${base}/status`))).toEqual({ current_step: 1, queue_size: 2 });
    const second = await json<{ batch: { tokens: number[][] }[] }>(call(`${base}/batch`));
    expect(second.batch.map((g) => g.tokens[0]![0])).toEqual([
      group(2, 4, 0).tokens[0]![0],
      group(4, 2, 0).tokens[0]![0],
    ]);
    const third = await json<{ batch: unknown[] | null }>(call(`${base}/batch`));
    expect(third.batch).toBeNull();
    expect(await json(call(`${base}/status`))).toEqual({ current_step: 2, queue_size: 0 });
  });

  it("serves the 14-key group with coerced numbers: floats as floats, lax strings accepted", async () => {
    const run = uniqueRun();
    const { base } = await setupRun(run, 2, [2]);
    const submitted = {
      ...group(5, 2, null),
      env_id: "0",
      scores: [1, "0.5"],
      seed: 1234,
      overrides: [{ set_advantage_to_zero: true }, {}],
      messages: [[{ role: "dog", content: null, extra: 1 }], [{ role: "user", content: "hi" }]],
    };
    expect((await post(`${base}/scored_data`, submitted)).status).toBe(200);
    const res = await call(`${base}/batch`, { headers: { "accept-encoding": "identity" } });
    const text = await res.text();
    expect(text).toContain('"scores":[1.0,0.5]');
    const batch = JSON.parse(text).batch;
    expect(Object.keys(batch[0])).toEqual([
      "tokens",
      "masks",
      "scores",
      "advantages",
      "ref_logprobs",
      "messages",
      "generation_params",
      "inference_logprobs",
      "overrides",
      "group_overrides",
      "images",
      "env_id",
      "distill_token_ids",
      "distill_logprobs",
    ]);
    expect(batch[0].env_id).toBe(0);
    expect(batch[0].messages[0][0]).toEqual({ role: "dog", content: null, extra: 1 });
    expect(batch[0].inference_logprobs[0][0]).toBe(1);
  });

  it("accepts gzip request bodies and rejects a bad one with Atropos' plain-text 400", async () => {
    const run = uniqueRun();
    const { base, envIds } = await setupRun(run, 4, [4]);
    const body = await gzip(JSON.stringify(group(9, 4, envIds[0]!)));
    const ok = await call(`${base}/scored_data`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "GZIP" },
      body,
    });
    expect(await ok.json()).toEqual({ status: "received" });
    const bad = await call(`${base}/scored_data`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: "definitely not gzip",
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toBe("Invalid gzip payload");
    const batch = await json<{ batch: { tokens: number[][] }[] }>(call(`${base}/batch`));
    expect(batch.batch[0]!.tokens).toEqual(group(9, 4, 0).tokens);
  });

  it("reports ingest phases in Server-Timing and echoes the request id", async () => {
    const run = uniqueRun();
    const { base, envIds } = await setupRun(run, 4, [4]);
    const res = await post(`${base}/scored_data`, group(21, 4, envIds[0]!), {
      "x-request-id": "req-42",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe("req-42");
    const header = res.headers.get("server-timing") ?? "";
    const phases = header.split(", ").map((p) => p.split(";")[0]);
    expect(phases).toEqual([
      "read",
      "hash",
      "parse",
      "validate",
      "canonical",
      "commit",
      "r2",
      "d1",
    ]);
    expect(header).toMatch(/commit;dur=[\d.]+;desc="1 group from 1 request"/);
  });

  it("reports where a lease's time went in Server-Timing, empty or not, on both lease paths", async () => {
    const run = uniqueRun();
    const { base, envIds } = await setupRun(run, 4, [4]);
    const empty = await post(`/v1/runs/${run}/batches/lease`, {});
    expect(empty.status).toBe(204);
    expect(phasesOf(empty)).toEqual(LEASE_STAGES);
    expect((await post(`${base}/scored_data`, group(31, 4, envIds[0]!))).status).toBe(200);
    const leased = await post(`/v1/runs/${run}/batches/lease`, {});
    expect(leased.status).toBe(200);
    expect(phasesOf(leased)).toEqual(LEASE_STAGES);
    expect(leased.headers.get("server-timing")).toMatch(/^lease;dur=[\d.]+, lease-read;dur=/);
    const pulled = await call(`${base}/batch`);
    expect(pulled.status).toBe(200);
    expect(phasesOf(pulled)).toEqual(LEASE_STAGES);
  });

  it("answers a repeated empty lease from memory, but never once a group is queued or a lease is out", async () => {
    const run = uniqueRun();
    const { base, envIds } = await setupRun(run, 4, [4]);
    const lease = () => post(`/v1/runs/${run}/batches/lease`, {});
    const first = await lease();
    expect(first.status).toBe(204);
    expect(phasesOf(first)).toEqual(LEASE_STAGES);
    const again = await lease();
    expect(again.status).toBe(204);
    expect(again.headers.get("server-timing")).toMatch(/^lease;dur=[\d.]+;desc="from memory"$/);
    expect(again.headers.get("x-atropos-edge-reason")).toBe(
      first.headers.get("x-atropos-edge-reason"),
    );
    const compat = await call(`${base}/batch`);
    expect(await compat.json()).toEqual({ batch: null });
    expect(compat.headers.get("server-timing")).toMatch(/desc="from memory"/);
    // A stored group reaches the very next lease.
    expect((await post(`${base}/scored_data`, group(41, 4, envIds[0]!))).status).toBe(200);
    const leased = await lease();
    expect(leased.status).toBe(200);
    // While that lease is out (it may expire and be redelivered), empty answers read D1.
    for (let i = 0; i < 2; i++) {
      const empty = await lease();
      expect(empty.status).toBe(204);
      expect(phasesOf(empty)).toEqual(LEASE_STAGES);
    }
  });

  it("drops its empty answer for a group stored in every idle period, across a reset too", async () => {
    const run = uniqueRun();
    let { base, envIds } = await setupRun(run, 4, [4]);
    const pull = () => call(`${base}/batch`);
    const epoch = async () =>
      (await env.DB.prepare("SELECT empty_epoch AS e FROM runs WHERE name = ?1")
        .bind(run)
        .first<{ e: number }>())!.e;
    const epochs = new Set<number>();
    for (let period = 0; period < 4; period++) {
      if (period === 1) {
        expect((await call(`${base}/reset_data`)).status).toBe(200);
        ({ base, envIds } = await setupRun(run, 4, [4]));
      }
      // The pull that finds the queue empty keeps its answer under a new epoch…
      expect(await (await pull()).json()).toEqual({ batch: null });
      const remembered = await pull();
      expect(remembered.headers.get("server-timing")).toMatch(/desc="from memory"/);
      epochs.add(await epoch());
      // …and two groups stored in turn (the second under an epoch already told) are delivered.
      for (const seed of [1, 2]) {
        const stored = await post(`${base}/scored_data`, group(100 * period + seed, 4, envIds[0]!));
        expect(stored.status).toBe(200);
        const { batch } = await json<{ batch: unknown[] | null }>(pull());
        expect(batch).toHaveLength(1);
      }
    }
    expect(epochs.size).toBe(4);
  });

  it("draws no empty epoch while a group is queued", async () => {
    const run = uniqueRun();
    const { base, envIds } = await setupRun(run, 8, [4]);
    expect(await renewEmptyEpoch(env.DB, run)).toBe(true);
    expect((await post(`${base}/scored_data`, group(7, 4, envIds[0]!))).status).toBe(200);
    expect(await renewEmptyEpoch(env.DB, run)).toBe(false);
    // Not enough for a batch of 8: empty, and not kept (the next pull reads D1 again).
    expect(await (await call(`${base}/batch`)).json()).toEqual({ batch: null });
    const again = await call(`${base}/batch`);
    expect(again.headers.get("server-timing")).not.toMatch(/from memory/);
  });

  it("gzips large responses when the client accepts gzip", async () => {
    const run = uniqueRun();
    const { base, envIds } = await setupRun(run, 4, [4]);
    await post(`${base}/scored_data`, group(11, 4, envIds[0]!, 400));
    const res = await call(`${base}/batch`, { headers: { "accept-encoding": "gzip" } });
    expect(res.headers.get("content-encoding")).toBe("gzip");
    const small = await call(`${base}/status`, { headers: { "accept-encoding": "gzip" } });
    expect(small.headers.get("content-encoding")).toBeNull();
  });

  it("decides gzip by the client's own Accept-Encoding and keeps the edge off plain bodies", async () => {
    // What Cloudflare's edge hands the Worker: its own Accept-Encoding, the client's in `cf`.
    const fromEdge = (clientAcceptEncoding: string): RequestInit => ({
      headers: { "accept-encoding": "br, gzip" },
      // why: the init type wants every property of an incoming request's cf object.
      cf: { clientAcceptEncoding } as unknown as RequestInit["cf"],
    });
    const plain = await call("/openapi.json", fromEdge(""));
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(plain.headers.get("cache-control")).toBe("no-transform");
    expect((await plain.json<{ openapi: string }>()).openapi).toBeDefined();
    const gzipped = await call("/openapi.json", fromEdge("gzip, deflate"));
    expect(gzipped.headers.get("content-encoding")).toBe("gzip");
    expect(gzipped.headers.get("cache-control")).toBeNull();
    const small = await call("/", fromEdge("gzip, deflate"));
    expect(small.headers.get("content-encoding")).toBeNull();
    expect(small.headers.get("cache-control")).toBe("no-transform");
  });

  it("reports validation errors as FastAPI-style 422 details with a readable message", async () => {
    const run = uniqueRun();
    const { tokens, masks } = group(1, 2, null);
    const missing = await post(`/runs/${run}/scored_data`, { tokens, masks });
    expect(missing.status).toBe(422);
    const body = await missing.json<{
      detail: { type: string; loc: unknown[] }[];
      error: { message: string; request_id: string };
    }>();
    expect(body.detail[0]).toMatchObject({ type: "missing", loc: ["body", "scores"] });
    expect(body.error.message).toContain("scores");
    expect(body.error.request_id).toBeTruthy();
    const frac = await post(`/runs/${run}/scored_data`, {
      tokens: [[1.5]],
      masks: [[1]],
      scores: [1],
    });
    expect(
      (await frac.json<{ detail: { type: string; loc: unknown[] }[] }>()).detail[0],
    ).toMatchObject({
      type: "int_from_float",
      loc: ["body", "tokens", 0, 0],
    });
    const noRole = await post(`/runs/${run}/scored_data`, {
      tokens: [[1]],
      masks: [[1]],
      scores: [1],
      messages: [[{ content: "x" }]],
    });
    expect(noRole.status).toBe(422);
    expect(await noRole.text()).toContain("Message must have 'role' and 'content' fields");
  });

  it("resets a run with a text answer, and refuses cross-site resets", async () => {
    const run = uniqueRun();
    const { base, envIds } = await setupRun(run, 4, [4]);
    await post(`${base}/scored_data`, group(1, 4, envIds[0]!));
    const blocked = await call(`${base}/reset_data`, {
      headers: { "sec-fetch-site": "cross-site" },
    });
    expect(blocked.status).toBe(403);
    expect((await json<{ queue_size: number }>(call(`${base}/status`))).queue_size).toBe(1);
    const res = await call(`${base}/reset_data`);
    expect(res.headers.get("content-type")).toContain("text/plain");
    expect(await res.text()).toBe("Reset successful");
    expect(await json(call(`${base}/status`))).toEqual({ current_step: 0, queue_size: 0 });
    expect(await json(call(`${base}/info`))).toEqual({ batch_size: -1, max_token_len: -1 });
  });
});
