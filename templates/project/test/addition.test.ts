/**
 * Runs inside workerd (the Workers pool) against this project's own Worker with local D1, R2,
 * Queues and Durable Objects.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import addition, { AdditionEnv, scoreAnswer } from "../src/envs/addition";

// why: the generated `exports` type does not describe this Worker's default export.
const worker = exports as unknown as { default: { fetch(request: Request): Promise<Response> } };
const call = (path: string, body?: unknown) =>
  worker.default.fetch(
    new Request(`http://api.test${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );

describe("addition env", () => {
  it("scores the last number of an answer", () => {
    expect(scoreAnswer({ a: 2, b: 3 }, "5")).toBe(1);
    expect(scoreAnswer({ a: 2, b: 3 }, "2 + 3 = 5")).toBe(1);
    expect(scoreAnswer({ a: 2, b: 3 }, "6")).toBe(0);
    expect(scoreAnswer({ a: 2, b: 3 }, "no idea")).toBe(0);
  });

  it("is registered under its name with its defaults", () => {
    expect(addition.name).toBe(AdditionEnv.envName);
    expect(addition.defaultConfig.group_size).toBeGreaterThan(1);
  });

  it("is served by this project's Worker: a scored group goes in, a batch comes out", async () => {
    const registered = await call("/register", {
      wandb_group: "g",
      wandb_project: "p",
      batch_size: 2,
      max_token_len: 64,
      checkpoint_dir: "ckpt",
      save_checkpoint_interval: 10,
      starting_step: 0,
      num_steps: 10,
    });
    expect(registered.status).toBe(200);
    const env = await call("/register-env", {
      max_token_length: 64,
      desired_name: addition.name,
      weight: 1,
      group_size: 2,
    });
    const { env_id } = (await env.json()) as { env_id: number };
    const submitted = await call("/scored_data", {
      tokens: [
        [1, 2, 3],
        [1, 2, 4],
      ],
      masks: [
        [-100, 2, 3],
        [-100, 2, 4],
      ],
      scores: [1, 0],
      env_id,
    });
    expect(submitted.status).toBe(200);
    const batch = (await (await call("/batch")).json()) as { batch: { scores: number[] }[] };
    expect(batch.batch).toHaveLength(1);
    expect(batch.batch[0]?.scores).toEqual([1, 0]);
  });
});
