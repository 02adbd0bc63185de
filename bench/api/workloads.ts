/**
 * One ingest workload run against one server: C producers POST pre-built bodies (gzip when the
 * workload says, as the Python env sends them) while a trainer, in a process of its own
 * (trainer-process.ts), pulls batches with GET /batch; every sequence starts with a unique id and
 * must arrive exactly once (counted, or the run fails).
 * The floor delivers only bodies sent without gzip (floor-worker.ts); on the other workloads its
 * runs measure ingest alone.
 */
import { gzipSync } from "node:zlib";
import { Client, percentile } from "./http";
import { type Kind, startTarget, type Target, type TargetOptions } from "./targets";
import { startTrainer, wallMs } from "./trainer-process";

export interface Workload {
  name: string;
  tokens: number;
  logprobs: boolean;
  gzip: boolean;
  producers: number;
  groups: number;
  /** Groups per request: 1 = POST /scored_data, more = POST /scored_data_list. */
  perRequest: number;
}

export const GROUP_SIZE = 16;
export const BATCH_SIZE = 64;
// The floor's GET /batch takes 4 groups (floor-worker.ts GROUPS_PER_BATCH): a batch of 64 here.
if (BATCH_SIZE / GROUP_SIZE !== 4) throw new Error("the floor delivers batches of 4 groups");

/** A trainer that sees nothing delivered for this long after the producers finished stops. */
const NO_PROGRESS_MS = 60_000;

/**
 * A logprob as an engine reports it: a float32 log of a probability, distinct almost everywhere
 * (a repeating pattern lets V8's number-to-string cache write them for free, which real logprobs
 * never get). Deterministic in (sequence, position).
 */
function logprobOf(seqId: number, position: number): number {
  let h = Math.imul(seqId + 1, 0x9e3779b1) ^ Math.imul(position + 1, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
  h ^= h >>> 13;
  const u = ((h >>> 0) + 1) / 2 ** 32;
  return Math.fround(Math.log(u) / 4);
}

/** A group whose sequences start with a unique id token (seqId) so delivery can be checked. */
export function makeGroup(
  groupIndex: number,
  w: Pick<Workload, "tokens" | "logprobs">,
  envId: number,
) {
  const tokens: number[][] = [];
  const masks: number[][] = [];
  const logprobs: number[][] = [];
  const prompt = Math.floor(w.tokens / 4);
  for (let s = 0; s < GROUP_SIZE; s++) {
    const seqId = groupIndex * GROUP_SIZE + s;
    const seq = new Array<number>(w.tokens);
    seq[0] = seqId;
    for (let i = 1; i < w.tokens; i++) seq[i] = (seqId * 31 + i * 7) % 151_000;
    tokens.push(seq);
    masks.push(seq.map((t, i) => (i < prompt ? -100 : t)));
    if (w.logprobs) logprobs.push(seq.map((_, i) => (i < prompt ? 1.0 : logprobOf(seqId, i))));
  }
  const group: Record<string, unknown> = {
    tokens,
    masks,
    scores: tokens.map((_, s) => (s % 2 ? 1.0 : -1.0)),
    env_id: envId,
  };
  if (w.logprobs) group.inference_logprobs = logprobs;
  return group;
}

export async function registerTrainer(client: Client, maxTokenLen: number) {
  await client.post(
    "/register",
    JSON.stringify({
      wandb_group: "b",
      wandb_project: "b",
      batch_size: BATCH_SIZE,
      max_token_len: maxTokenLen,
      checkpoint_dir: "c",
      save_checkpoint_interval: 0,
      starting_step: 0,
      num_steps: 1_000_000,
    }),
  );
  // The original server accepts envs only once a trainer has pulled (the trainer "started").
  await client.get("/batch");
}

/**
 * Groups each server ingests and delivers before the clock starts (whole batches, whole list
 * requests): no server is timed while it warms up. This API's runtime compiles its hot paths
 * during its first requests; a training run lasts hours.
 */
export const WARMUP_GROUPS = 48;
if (WARMUP_GROUPS % (BATCH_SIZE / GROUP_SIZE) !== 0) throw new Error("warm up whole batches");

/**
 * Bodies generated (and compressed) before the clock starts, as a real env would hold them:
 * groups `first` to `first + count - 1` (their sequences' ids follow from the group's index).
 */
function buildBodies(w: Workload, envId: number, first = 0, count = w.groups) {
  const bodies: Uint8Array[] = [];
  let wireBytes = 0;
  for (let g = first; g < first + count; g += w.perRequest) {
    const groups = Array.from({ length: Math.min(w.perRequest, first + count - g) }, (_, i) =>
      makeGroup(g + i, w, envId),
    );
    const json = Buffer.from(JSON.stringify(w.perRequest === 1 ? groups[0] : groups));
    const body = w.gzip ? gzipSync(json, { level: 6 }) : json;
    bodies.push(new Uint8Array(body.buffer, body.byteOffset, body.byteLength));
    wireBytes += body.byteLength;
  }
  return { bodies, wireBytes };
}

/**
 * Sends the warm-up bodies one after another and, when the server delivers them, pulls until
 * every one of their sequences arrived: the measured run starts from an empty queue.
 */
async function warmUp(
  client: Client,
  post: { path: string; headers: Record<string, string>; bodies: Uint8Array[] },
  delivers: boolean,
  encoding: string,
  deadline: number,
) {
  for (const body of post.bodies) await client.post(post.path, body, post.headers);
  let received = 0;
  while (delivers && received < WARMUP_GROUPS * GROUP_SIZE) {
    if (Date.now() > deadline) throw new Error("the warm-up groups were not delivered in time");
    const res = await client.get("/batch", { "accept-encoding": encoding });
    const body = JSON.parse(res.text) as { batch: { tokens: unknown[] }[] | null };
    if (!body.batch) await new Promise((resolve) => setTimeout(resolve, 20));
    for (const group of body.batch ?? []) received += group.tokens.length;
  }
}

export type WorkloadResult = Awaited<ReturnType<typeof runWorkload>>;

export async function runWorkload(
  w: Workload,
  kind: Kind,
  options: TargetOptions & { trainerEncoding: string; deadline: number; warmUp: boolean },
) {
  const target: Target = await startTarget(kind, options);
  // Registration has connections of its own, closed before the bodies are built: building them
  // blocks the event loop for seconds, long enough for a server to close an idle keep-alive
  // connection (uvicorn after 5 s) without the pool noticing, and the first POST sent on it
  // would fail at the connection level and be retried.
  const setup = new Client(target.url, target.headers, 1);
  const open = [setup];
  try {
    await registerTrainer(setup, w.tokens);
    const env = JSON.parse(
      await setup.post(
        "/register-env",
        JSON.stringify({
          max_token_length: w.tokens,
          desired_name: "bench",
          weight: 1,
          group_size: GROUP_SIZE,
        }),
      ),
    ) as { env_id: number };
    await open.pop()!.close();
    const { bodies, wireBytes } = buildBodies(w, env.env_id);
    const client = new Client(target.url, target.headers, w.producers);
    open.push(client);
    const path = w.perRequest === 1 ? "/scored_data" : "/scored_data_list";
    const postHeaders: Record<string, string> = w.gzip ? { "content-encoding": "gzip" } : {};
    const postLatencies: number[] = [];
    const total = w.groups * GROUP_SIZE;
    // The floor delivers what it keeps in D1 as JSON text (floor-worker.ts): bodies sent without
    // gzip, each under 1 MiB (the 512-token workload's are 80 KB).
    const delivers = kind !== "floor" || !w.gzip;
    if (options.warmUp) {
      // Their sequence ids lie past the measured ones: one delivered in the measured run fails it.
      const warm = buildBodies(w, env.env_id, w.groups, WARMUP_GROUPS).bodies;
      const post = { path, headers: postHeaders, bodies: warm };
      await warmUp(client, post, delivers, options.trainerEncoding, options.deadline);
    }
    const retriesBefore = client.retries;
    const trainer = delivers
      ? await startTrainer({
          url: target.url,
          headers: target.headers,
          total,
          encoding: options.trainerEncoding,
          deadline: options.deadline,
          noProgressMs: NO_PROGRESS_MS,
        })
      : null;
    let next = 0;
    const cpuBefore = target.cpuMs();
    let cpuAtIngest = 0;
    const started = wallMs();
    trainer?.go();
    let ingestDone = 0;
    const producer = async () => {
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const t0 = performance.now();
        await client.post(path, body, postHeaders);
        postLatencies.push(performance.now() - t0);
      }
    };
    const producers = Promise.all(Array.from({ length: w.producers }, producer)).then(() => {
      ingestDone = wallMs();
      cpuAtIngest = target.cpuMs();
      trainer?.ingestDone(ingestDone);
    });
    const trained = await Promise.all([trainer?.result, producers]).catch((error: unknown) => {
      trainer?.kill();
      throw error;
    });
    const { delivered, duplicates, missing, foreign, batchLatencies, lastDelivery } =
      trained[0] ?? {
        delivered: 0,
        duplicates: 0,
        missing: 0,
        foreign: 0,
        batchLatencies: [],
        lastDelivery: null,
      };
    const cpuAtEnd = target.cpuMs();
    const ingestS = (ingestDone - started) / 1000;
    const e2eS = ((lastDelivery ?? started) - started) / 1000;
    const result = {
      server: kind,
      workload: w.name,
      groups: w.groups,
      ingest_groups_per_s: w.groups / ingestS,
      ingest_mb_per_s: wireBytes / 1e6 / ingestS,
      // The server's CPU (all its processes) per group: to ingest it, and to ingest and deliver it.
      server_cpu_ms_per_group_ingest: (cpuAtIngest - cpuBefore) / w.groups,
      server_cpu_ms_per_group_e2e: delivers ? (cpuAtEnd - cpuBefore) / w.groups : Number.NaN,
      post_p50_ms: percentile(postLatencies, 50),
      post_p99_ms: percentile(postLatencies, 99),
      e2e_sequences_per_s: delivers ? delivered / e2eS : Number.NaN,
      batch_p50_ms: percentile(batchLatencies, 50),
      batch_p99_ms: percentile(batchLatencies, 99),
      delivered,
      duplicates,
      missing,
      foreign,
      post_retries: client.retries - retriesBefore,
      runtime: target.runtime,
      isolate_heap: target.heap?.takePeak() ?? null,
    };
    // The floor does not dedupe: a POST retried after a lost connection may be stored twice there.
    const allowedDuplicates = kind === "floor" ? result.post_retries : 0;
    if (duplicates > allowedDuplicates || missing || foreign) {
      throw new Error(`exactly-once violated: ${JSON.stringify(result)}`);
    }
    return result;
  } finally {
    for (const c of open) await c.close();
    await target.stop();
  }
}
