/**
 * A minimal Atropos-wire rollout API on 127.0.0.1 for client tests: register-env waits for the
 * "trainer", /status-env demands a JSON body on GET (422 otherwise, like the original), submissions
 * may be gzipped, and a built-in trainer forms a batch (step + 1) whenever enough sequences queue.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  wireBytes: number;
  json: unknown;
}

export interface FakeAtroposOptions {
  batchSize?: number;
  registerWaits?: number;
  /** Fail this many POSTs to /scored_data* with 503 (after storing the first one: a lost reply). */
  failScoredPosts?: number;
  rejectScoredWith4xx?: boolean;
  /** Don't let the trainer consume batches (queue fills up → env pauses). */
  trainerPaused?: boolean;
  /** Answer atropos-edge's POST /v1/runs/{run}/envs/{id}/metrics (Atropos itself has no such route). */
  acceptMetrics?: boolean;
  /** Sent as /status-env's policy_version (atropos-edge's extra field) when set. */
  policyVersion?: number;
}

export async function startFakeAtropos(options: FakeAtroposOptions = {}) {
  const batchSize = options.batchSize ?? 8;
  const state = {
    registerCalls: 0,
    step: 0,
    queue: [] as { tokens: unknown[]; env_id: number; policy_version?: number }[],
    /** Every group accepted, in order (the queue drains as batches form). */
    received: [] as { tokens: unknown[]; env_id: number; policy_version?: number }[],
    accepted: 0,
    seenKeys: new Set<string>(),
    requests: [] as RecordedRequest[],
    failScoredPosts: options.failScoredPosts ?? 0,
    trainerPaused: options.trainerPaused ?? false,
    groupSize: 1,
    policyVersion: options.policyVersion,
  };

  const formBatches = () => {
    if (state.trainerPaused) return;
    for (;;) {
      const seqs = state.queue.reduce((a, g) => a + g.tokens.length, 0);
      if (seqs < batchSize) return;
      let taken = 0;
      while (taken < batchSize && state.queue.length > 0)
        taken += state.queue.shift()!.tokens.length;
      state.step++;
    }
  };

  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const body = req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw;
    let json: unknown = null;
    try {
      json = body.length ? JSON.parse(body.toString("utf8")) : null;
    } catch {
      json = null;
    }
    const path = (req.url ?? "/").split("?")[0]!;
    state.requests.push({
      method: req.method ?? "",
      path,
      headers: req.headers,
      wireBytes: raw.length,
      json,
    });
    const send = (status: number, value: unknown) => {
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(value));
    };
    if (req.method === "POST" && path === "/register-env") {
      state.registerCalls++;
      if (state.registerCalls <= (options.registerWaits ?? 0))
        return send(200, { status: "wait for trainer to start" });
      state.groupSize = (json as { group_size: number }).group_size;
      return send(200, {
        status: "success",
        env_id: 0,
        wandb_name: `${(json as { desired_name: string }).desired_name}_0`,
        checkpoint_dir: "",
        starting_step: 0,
        checkpoint_interval: 2,
        num_steps: 5,
      });
    }
    if (req.method === "GET" && path === "/info")
      return send(200, { batch_size: batchSize, max_token_len: 4096 });
    if (req.method === "GET" && path === "/status-env") {
      if (req.headers["content-type"] !== "application/json" || !json)
        return send(422, { detail: "Field required" });
      formBatches();
      const seqs = state.queue.reduce((a, g) => a + g.tokens.length, 0);
      return send(200, {
        current_step: state.step,
        queue_size: Math.floor(seqs / state.groupSize),
        unallocated_fraction: 1,
        self_queue_size: Math.floor(seqs / state.groupSize),
        max_group_size: state.groupSize,
        env_weight: 1,
        ...(state.policyVersion === undefined ? {} : { policy_version: state.policyVersion }),
      });
    }
    if (req.method === "POST" && (path === "/scored_data" || path === "/scored_data_list")) {
      if (options.rejectScoredWith4xx) return send(422, { detail: "bad" });
      const key = String(req.headers["idempotency-key"] ?? "");
      const groups = (Array.isArray(json) ? json : [json]) as {
        tokens: unknown[];
        env_id: number;
      }[];
      if (!state.seenKeys.has(key)) {
        state.seenKeys.add(key);
        state.queue.push(...groups);
        state.received.push(...groups);
        state.accepted += groups.length;
      }
      if (state.failScoredPosts > 0) {
        state.failScoredPosts--;
        return send(503, { detail: "try again" });
      }
      return send(200, { status: "received" });
    }
    if (
      options.acceptMetrics &&
      req.method === "POST" &&
      /^\/v1\/runs\/[^/]+\/envs\/\d+\/metrics$/.test(path)
    ) {
      return send(200, { status: "stored", step: (json as { step: number }).step, stored: 1 });
    }
    if (req.method === "POST" && path === "/disconnect-env")
      return send(200, { status: "success" });
    send(404, { detail: "not found" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    state,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
