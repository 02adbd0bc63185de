/**
 * Leases over HTTP: round trips (lease + ack) as the queue grows to 20,000 mixed-size groups, and
 * the empty lease, which must be answered (204) by the one request that asked, no client-side
 * polling: the client counts its requests and fails the run otherwise. Each measurement is taken
 * `rounds` times on the same server; the median of the rounds' percentiles is reported.
 */
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { Client, median, percentile } from "./http";
import { startTarget, type TargetOptions } from "./targets";
import { WalTrace } from "./wal-trace";
import { registerTrainer } from "./workloads";

const LEASE = "/v1/runs/default/batches/lease";

/** The server's Server-Timing phases of each lease (ms by phase name), for the stage breakdown. */
class Stages {
  private readonly byName = new Map<string, number[]>();

  add(header: string): void {
    for (const entry of header.split(",")) {
      const match = /^\s*([\w-]+);dur=([\d.]+)/.exec(entry);
      if (match)
        this.byName.set(match[1]!, [...(this.byName.get(match[1]!) ?? []), Number(match[2])]);
    }
  }

  /** "name p50/p99" per phase, in the order the server reported them. */
  summary(): string {
    return [...this.byName]
      .map(
        ([name, ms]) => `${name} ${percentile(ms, 50).toFixed(1)}/${percentile(ms, 99).toFixed(1)}`,
      )
      .join(", ");
  }
}

async function fillQueue(client: Client, from: number, to: number, serial: { n: number }) {
  const sizes = [1, 2, 4, 8, 16, 3, 5, 6];
  for (let queued = from; queued < to; ) {
    const list = Array.from({ length: Math.min(100, to - queued) }, () => {
      const n = sizes[serial.n % sizes.length]!;
      serial.n++;
      const seq = (s: number) =>
        Array.from({ length: 32 }, (_, i) => (i < 2 ? [serial.n, s][i]! : i * 7));
      return {
        tokens: Array.from({ length: n }, (_, s) => seq(s)),
        masks: Array.from({ length: n }, (_, s) => seq(s).map((t, i) => (i < 8 ? -100 : t))),
        scores: Array.from({ length: n }, (_, s) => s % 2),
      };
    });
    await client.post("/scored_data_list", JSON.stringify(list));
    queued += list.length;
  }
}

export interface LeaseRow {
  queued_groups: number;
  leases: number;
  /** Leases slower than SLOW_MS, of all rounds: steadier than a p99 of 100 samples. */
  over_10ms: number;
  lease_p50_ms: number;
  lease_p99_ms: number;
  lease_max_ms: number;
  rounds_p99_ms: string;
  /** The ack after each lease (POST …/ack), p50 and p99 over all rounds. */
  ack_p50_ms: number;
  ack_p99_ms: number;
  /** Server-Timing phases, p50/p99 ms each (src/api/delivery.ts `timedLease`). */
  server_ms: string;
  /** With `--wal` (wal-trace.ts): D1 WAL pages and checkpoints, and the slow leases beside them. */
  wal?: WalRow;
}

export interface WalRow {
  pages_per_cycle: number;
  checkpoints: number;
  /** Leases during which a checkpoint ran. */
  leases_with_checkpoint: number;
  /** Of as many of the slowest leases, those that ran a checkpoint. */
  slowest_with_checkpoint: number;
  /** Median lease with and without a checkpoint (ms, under strace). */
  with_checkpoint_p50_ms: number;
  without_checkpoint_p50_ms: number;
}

const SLOW_MS = 10;

function walRow(
  wal: { pages: number; checkpoints: number; leases: { ms: number; during: boolean }[] },
  cycles: number,
): WalRow {
  const during = wal.leases.filter((l) => l.during);
  const slowest = [...wal.leases].sort((a, b) => b.ms - a.ms).slice(0, during.length);
  const p50 = (leases: { ms: number }[]) =>
    leases.length
      ? percentile(
          leases.map((l) => l.ms),
          50,
        )
      : Number.NaN;
  return {
    pages_per_cycle: wal.pages / cycles,
    checkpoints: wal.checkpoints,
    leases_with_checkpoint: during.length,
    slowest_with_checkpoint: slowest.filter((l) => l.during).length,
    with_checkpoint_p50_ms: p50(during),
    without_checkpoint_p50_ms: p50(wal.leases.filter((l) => !l.during)),
  };
}

/**
 * Lease + ack round trips at each depth (mixed group sizes 1..16, 32-token sequences); `gapMs`
 * idles between an ack and the next lease (a trainer's step takes time; back to back keeps the
 * runtime's thread busy).
 */
export async function leaseDepthScan(
  depths: number[],
  options: TargetOptions & { rounds: number; leases: number; gapMs: number; wal: boolean },
): Promise<LeaseRow[]> {
  const target = await startTarget("edge", options);
  const client = new Client(target.url, target.headers, 2);
  const rows: LeaseRow[] = [];
  try {
    await registerTrainer(client, 64);
    const serial = { n: 0 };
    let queued = 0;
    for (const depth of depths) {
      const p99s: number[] = [];
      const all: number[] = [];
      const acks: number[] = [];
      const stages = new Stages();
      const wal = { pages: 0, checkpoints: 0, leases: [] as { ms: number; during: boolean }[] };
      for (let round = 0; round < options.rounds; round++) {
        // Topped up before each round, so every round leases from `depth` queued groups.
        await fillQueue(client, queued, depth, serial);
        const latencies: number[] = [];
        const startedAt: number[] = [];
        const trace = options.wal
          ? await WalTrace.start(
              target.persistDir!,
              join(mkdtempSync(join(options.stateRoot, "bench-wal-")), "strace.txt"),
            )
          : null;
        for (let i = 0; i < options.leases; i++) {
          if (options.gapMs > 0) await new Promise((r) => setTimeout(r, options.gapMs));
          const t0 = performance.now();
          startedAt.push(performance.timeOrigin + t0);
          const res = await client.request("POST", LEASE, "{}");
          latencies.push(performance.now() - t0);
          if (res.status !== 200) throw new Error(`lease → ${res.status}: ${res.text}`);
          stages.add(res.serverTiming);
          const body = JSON.parse(res.text) as { batch_id: string };
          const ackStarted = performance.now();
          // post() throws on a 4xx or 5xx answer.
          await client.post(`/v1/runs/default/batches/${body.batch_id}/ack`, "{}");
          acks.push(performance.now() - ackStarted);
        }
        if (trace) {
          const counts = await trace.stop();
          wal.pages += counts.walPages;
          wal.checkpoints += counts.checkpoints.length;
          latencies.forEach((ms, i) => {
            const from = startedAt[i]!;
            const during = counts.checkpoints.some((at) => at >= from && at <= from + ms);
            wal.leases.push({ ms, during });
          });
        }
        const stats = JSON.parse((await client.get("/v1/runs/default/stats")).text) as {
          queue: { groups: number };
        };
        queued = stats.queue.groups;
        p99s.push(percentile(latencies, 99));
        all.push(...latencies);
      }
      rows.push({
        queued_groups: depth,
        leases: all.length,
        over_10ms: all.filter((ms) => ms > SLOW_MS).length,
        lease_p50_ms: percentile(all, 50),
        lease_p99_ms: median(p99s),
        lease_max_ms: Math.max(...all),
        rounds_p99_ms: p99s.map((p) => p.toFixed(1)).join(" / "),
        ack_p50_ms: percentile(acks, 50),
        ack_p99_ms: percentile(acks, 99),
        server_ms: stages.summary(),
        ...(options.wal ? { wal: walRow(wal, options.rounds * options.leases) } : {}),
      });
    }
    return rows;
  } finally {
    await client.close();
    await target.stop();
  }
}

/** The floors' paths (floor-worker.ts), from a no-op GET to a Durable Object reading and writing D1. */
const FLOORS = {
  noop: "/",
  do_call: "/do",
  do_d1_read: "/do-read",
  do_d1_read_write: "/do-read-write",
  do_d1_lease: "/do-lease",
  do_d1_lease_shaped: "/do-lease-shaped",
  /** Each lease followed by its ack (untimed), as the lease scan runs them. */
  do_d1_lease_payload_ack: "/do-lease-payload",
} as const;

/** The floors whose leases are acked before the next, by the batch id their JSON names. */
const ACKED: ReadonlySet<string> = new Set([FLOORS.do_d1_lease_payload_ack]);

export type FloorRow = Record<
  keyof typeof FLOORS,
  { p50_ms: number; p99_ms: number; rounds_p99_ms: string; over_10ms: number; requests: number }
>;

/**
 * The floors for a round trip, on the bare Worker (floor-worker.ts) on the same Miniflare, each
 * timed like a lease (p99 per round, median of rounds): a no-op GET, a no-op Durable Object call,
 * that object reading D1 once (an empty lease's least) and then writing once, and leasing the
 * oldest 8 of 20,000 queued rows to a new batch in one round trip (a lease's least), and that
 * lease shaped like this API's lease write until 2026-11-28 (nine statements, about 75 rows
 * back), and a lease's and ack's unavoidable work: one D1 batch leasing 12 rows and returning
 * their payloads (about 20 KB of JSON, as the lease scan's batches), then one acking them,
 * untimed.
 */
export async function noopFloor(
  options: TargetOptions & { rounds: number; leases: number },
): Promise<FloorRow> {
  const target = await startTarget("floor", options);
  const client = new Client(target.url, target.headers, 1);
  try {
    const row: Partial<FloorRow> = {};
    for (const [name, path] of Object.entries(FLOORS) as [keyof typeof FLOORS, string][]) {
      const p99s: number[] = [];
      const all: number[] = [];
      for (let round = 0; round < options.rounds; round++) {
        // Every round leases from 20,000 queued rows, as the lease scan's rounds do.
        await client.get("/do-requeue");
        const latencies: number[] = [];
        for (let i = 0; i < options.leases; i++) {
          const t0 = performance.now();
          const res = await client.get(path);
          latencies.push(performance.now() - t0);
          if (ACKED.has(path)) {
            const { batch_id } = JSON.parse(res.text) as { batch_id: string };
            await client.get(`/do-ack/${batch_id}`);
          }
        }
        p99s.push(percentile(latencies, 99));
        all.push(...latencies);
      }
      row[name] = {
        p50_ms: percentile(all, 50),
        p99_ms: median(p99s),
        rounds_p99_ms: p99s.map((p) => p.toFixed(1)).join(" / "),
        over_10ms: all.filter((ms) => ms > SLOW_MS).length,
        requests: all.length,
      };
    }
    return row as FloorRow;
  } finally {
    await client.close();
    await target.stop();
  }
}

/** Empty leases: a registered trainer, nothing queued; each must be one request answered 204. */
export async function emptyLease(options: TargetOptions & { rounds: number; leases: number }) {
  const target = await startTarget("edge", options);
  const client = new Client(target.url, target.headers, 1);
  try {
    await registerTrainer(client, 64);
    const p99s: number[] = [];
    const all: number[] = [];
    const stages = new Stages();
    for (let round = 0; round < options.rounds; round++) {
      const latencies: number[] = [];
      for (let i = 0; i < options.leases; i++) {
        const before = client.requests;
        const t0 = performance.now();
        const res = await client.request("POST", LEASE, "{}");
        latencies.push(performance.now() - t0);
        if (res.status !== 204 || client.requests - before !== 1) {
          throw new Error(
            `an empty lease must be answered 204 by its one request; got ${res.status} after ${client.requests - before} requests`,
          );
        }
        stages.add(res.serverTiming);
      }
      p99s.push(percentile(latencies, 99));
      all.push(...latencies);
    }
    return {
      requests_per_lease: 1,
      status: 204,
      lease_p50_ms: percentile(all, 50),
      lease_p99_ms: median(p99s),
      rounds_p99_ms: p99s.map((p) => p.toFixed(1)).join(" / "),
      server_ms: stages.summary(),
    };
  } finally {
    await client.close();
    await target.stop();
  }
}
