import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { AdminApiError, AdminClient } from "../../../src/client/admin-client";
import { TrainerApiError, TrainerClient } from "../../../src/client/trainer-client";
import type { RunStats } from "../../../src/core/wire/api-schemas";
import { ApiResponseError } from "../../../src/core/wire/http-client";

let server: Server | null = null;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(null)));
  server = null;
});

/** GET /v1/runs/{run}/stats of a run with nothing in it yet, at `step`. */
function emptyStats(run: string, step: number): RunStats {
  return {
    run,
    now: 0,
    step,
    policy_version: 0,
    batch_size: -1,
    max_token_len: -1,
    registered: false,
    queue: {
      groups: 0,
      sequences: 0,
      buffered_groups: 0,
      buffered_sequences: 0,
      stale_groups: 0,
      oldest_queued_at: null,
      oldest_queued_age_s: null,
      by_env: [],
    },
    leases: { outstanding: 0, expired: 0 },
    rates: {
      window_s: 60,
      ingest_groups_per_s: 0,
      ingest_sequences_per_s: 0,
      delivered_batches_per_s: 0,
      delivered_sequences_per_s: 0,
    },
    batch_formation: { samples: 0, last_ms: null, p50_ms: null, p99_ms: null },
    envs: [],
    dead_letters: { count: 0, recent: [] },
    blocked_reason: null,
    policy_versions: { current: 0, queued_min: null, queued_max: null },
    retention: { hours: null, kept_groups: 0, kept_bytes: 0, delivered_groups: 0 },
    by_token: [],
  };
}

/** A stand-in API answering `answer(path, n)` to the n-th request (from 1), with `status`. */
async function standIn(
  answer: (path: string, n: number) => unknown,
  status = 200,
): Promise<{ url: string; paths: string[] }> {
  const paths: string[] = [];
  server = createServer((req, res) => {
    paths.push(req.url ?? "");
    res.statusCode = status;
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(answer(req.url ?? "", paths.length)));
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths };
}

/** A stand-in API whose stats step goes up by one per request. */
const statsServer = () => standIn((_, n) => emptyStats("exp", n));

describe("TrainerClient.watchStats", () => {
  it("streams a snapshot per interval until the consumer stops", async () => {
    const { url, paths } = await statsServer();
    const trainer = new TrainerClient({ url, run: "exp" });
    const steps: number[] = [];
    for await (const stats of trainer.watchStats(5)) {
      steps.push(stats.step);
      if (steps.length === 3) break;
    }
    expect(steps).toEqual([1, 2, 3]);
    expect(paths).toEqual(Array(3).fill("/v1/runs/exp/stats"));
  });

  it("ends when its signal aborts, without waiting out the interval", async () => {
    const { url } = await statsServer();
    const trainer = new TrainerClient({ url, run: "exp" });
    const abort = new AbortController();
    const started = Date.now();
    let seen = 0;
    for await (const _ of trainer.watchStats(60_000, abort.signal)) {
      seen++;
      setTimeout(() => abort.abort(), 10);
    }
    expect(seen).toBe(1);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe("the clients check answers against the routes' schemas", () => {
  it("TrainerClient refuses stats of another shape, naming the field", async () => {
    const { url } = await standIn(() => ({ run: "exp", step: 1 }));
    const trainer = new TrainerClient({ url, run: "exp", attempts: 1 });
    const error = await trainer.stats().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiResponseError);
    expect((error as Error).message).toMatch(/^stats: the answer does not match the API's schema/);
    expect((error as Error).message).toContain("now");
  });

  it("TrainerClient refuses a lease whose batch is not a list of groups", async () => {
    const lease = {
      batch_id: "b1",
      lease_id: "l1",
      step: 1,
      lease_expires_at: 0,
      redelivered: false,
      groups: [],
      batch: [[1, 2, 3]],
    };
    // The first answer carries a batch entry that is no group; the second is well formed.
    const { url } = await standIn((_, n) =>
      n === 1 ? lease : { ...lease, batch: [{ tokens: [[1]], env_id: 0 }] },
    );
    const trainer = new TrainerClient({ url, run: "exp", attempts: 1 });
    await expect(trainer.lease()).rejects.toThrow(/lease: the answer does not match.*batch\.0/);
    const leased = await trainer.lease();
    expect(leased.batch?.groups).toEqual([{ tokens: [[1]], env_id: 0 }]);
  });

  it("both clients report a refused request with the same error class and message form", async () => {
    const body = { error: { code: "FORBIDDEN", message: "token lacks scope admin" } };
    const { url } = await standIn(() => body, 403);
    const trainer = new TrainerClient({ url, run: "exp", attempts: 1 });
    const admin = new AdminClient({ url });
    const fromTrainer = await trainer.stats().catch((e: unknown) => e);
    const fromAdmin = await admin.listTokens().catch((e: unknown) => e);
    for (const error of [fromTrainer, fromAdmin]) {
      expect(error).toBeInstanceOf(ApiResponseError);
      expect(error).toBeInstanceOf(TrainerApiError);
      expect(error).toBeInstanceOf(AdminApiError);
      expect((error as ApiResponseError).status).toBe(403);
      expect((error as Error).message).toContain("HTTP 403: token lacks scope admin");
    }
  });

  it("AdminClient refuses an answer of another shape", async () => {
    const { url } = await standIn(() => ({ tokens: [{ id: 7 }] }));
    await expect(new AdminClient({ url }).listTokens()).rejects.toThrow(
      /GET \/v1\/tokens: the answer does not match the API's schema \(tokens\.0\./,
    );
  });
});
