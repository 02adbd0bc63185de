/**
 * `npm run bench:api [-- --atropos DIR [--python BIN]] [--floor] [--quick] [--runs N]`
 *   `[--workloads 1,2] [--depths 20000 | --no-depths] [--leases N] [--lease-gap-ms MS] [--wal]`
 *   `[--no-empty] [--no-list] [--no-warmup] [--heap]`
 *   `[--trainer-encoding gzip|identity] [--state-root DIR] [--json out.json] [--cpu-profile DIR]`
 *
 * The rollout API under a real `npm run dev` (fresh state per run, loopback only, the API token
 * on every request), driven by a lean load generator (api/http.ts: undici keep-alive, bodies built
 * before the clock starts). With `--atropos DIR` (a checkout holding the original `atroposlib/`)
 * every workload also runs against the original server as it declares itself (fastapi +
 * uvicorn[standard] from bench/requirements-atropos.txt, or `--python`'s environment), its own
 * process checked to run on uvloop and httptools; with `--floor`, against a bare Worker doing only
 * parse, validate and one durable write, and (bodies sent without gzip) delivery by one statement
 * per batch (api/floor-worker.ts). Kinds alternate run after run, so
 * ratios come from the same minutes. Then: lease round trips with 20,000 mixed-size groups
 * queued, the empty lease (one request, 204), and /scored_data_list against /scored_data with
 * the same groups and 8 producers. Medians of `--runs` (3). Every loop has a count and the whole
 * run a deadline.
 */
import { writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { median, ServerStalled } from "./api/http";
import { emptyLease, leaseDepthScan, noopFloor } from "./api/leases";
import { atroposPython, type Kind, type TargetOptions } from "./api/targets";
import {
  BATCH_SIZE,
  GROUP_SIZE,
  runWorkload,
  type Workload,
  type WorkloadResult,
} from "./api/workloads";

const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const quick = args.includes("--quick");
/** A whole-number option at least `min`, or `fallback` when absent; anything else stops the bench. */
const count = (name: string, fallback: number, min: number) => {
  const raw = option(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new Error(`${name} must be a whole number ≥ ${min}, got '${raw}'`);
  }
  return value;
};
const runs = Number(option("--runs") ?? (quick ? 1 : 3));
const atroposDir = option("--atropos");
const onlyWorkloads = option("--workloads")?.split(",").map(Number);
const depths = (option("--depths") ?? (quick ? "2000" : "20000")).split(",").map(Number);
const DEADLINE = Date.now() + 45 * 60_000;

const base: TargetOptions = {
  stateRoot: option("--state-root") ?? tmpdir(),
  token: "bench-token",
  // The heap sampler forces GCs on the API's own thread: measure memory in a run of its own.
  sampleHeap: args.includes("--heap"),
  cpuProfileDir: option("--cpu-profile"),
  atropos: atroposDir ? { dir: atroposDir, python: atroposPython(option("--python")) } : undefined,
};
const workloadOptions = {
  ...base,
  trainerEncoding: option("--trainer-encoding") ?? "gzip",
  deadline: DEADLINE,
  warmUp: !args.includes("--no-warmup"),
};

const WORKLOADS: Workload[] = [
  {
    name: "512 tok, 1 producer",
    tokens: 512,
    logprobs: false,
    gzip: false,
    producers: 1,
    groups: quick ? 100 : 400,
    perRequest: 1,
  },
  {
    name: "2,048 tok, logprobs, gzip, 8 producers",
    tokens: 2048,
    logprobs: true,
    gzip: true,
    producers: 8,
    groups: quick ? 48 : 240,
    perRequest: 1,
  },
  {
    name: "8,192 tok, logprobs, gzip, 8 producers",
    tokens: 8192,
    logprobs: true,
    gzip: true,
    producers: 8,
    groups: quick ? 16 : 64,
    perRequest: 1,
  },
];
// The same groups (512 tokens) by 8 producers, one per request and 8 per list request.
const LIST_GROUPS = quick ? 160 : 640;
const LIST_PAIR: Workload[] = [
  {
    name: "/scored_data, 512 tok, 8 producers",
    tokens: 512,
    logprobs: false,
    gzip: false,
    producers: 8,
    groups: LIST_GROUPS,
    perRequest: 1,
  },
  {
    name: "/scored_data_list (8 per list), 512 tok, 8 producers",
    tokens: 512,
    logprobs: false,
    gzip: false,
    producers: 8,
    groups: LIST_GROUPS,
    perRequest: 8,
  },
];

function summarise(results: WorkloadResult[]) {
  const of = (f: (r: WorkloadResult) => number) => median(results.map(f));
  return {
    ingest_groups_per_s: of((r) => r.ingest_groups_per_s),
    e2e_sequences_per_s: of((r) => r.e2e_sequences_per_s),
    post_p50_ms: of((r) => r.post_p50_ms),
    cpu_ingest_ms: of((r) => r.server_cpu_ms_per_group_ingest),
    batch_p50_ms: of((r) => r.batch_p50_ms),
    heap_max_mib: Math.max(...results.map((r) => r.isolate_heap?.max_used_with_buffers_mib ?? 0)),
  };
}
type Summary = ReturnType<typeof summarise>;

/** Runs that were void because the server stopped answering, each replaced by one more. */
const stalledRuns: string[] = [];

/** Runs `w` against each kind in turn, `runs` times; medians per kind. */
async function sideBySide(w: Workload, kinds: Kind[], all: WorkloadResult[]) {
  console.log(`\n▶ ${w.name}: ${w.groups} groups of ${GROUP_SIZE}, batch ${BATCH_SIZE}`);
  const byKind = new Map<Kind, WorkloadResult[]>();
  for (let run = 0; run < runs; run++) {
    for (const kind of kinds) {
      const r = await runWorkload(w, kind, workloadOptions).catch((error: unknown) => {
        if (!(error instanceof ServerStalled)) throw error;
        // workerd has been seen to spin in its garbage collector's sweeping, answering nothing
        // (docs/BENCHMARKS.md): that run is void; one more, on a fresh server, replaces it.
        stalledRuns.push(`${w.name} / ${kind} / run ${run + 1}: ${error.message}`);
        console.log(`  run ${run + 1} ${kind.padEnd(7)} STALLED (${error.message}); run again`);
        return runWorkload(w, kind, workloadOptions);
      });
      all.push(r);
      byKind.set(kind, [...(byKind.get(kind) ?? []), r]);
      const e2e = Number.isNaN(r.e2e_sequences_per_s) ? "-" : r.e2e_sequences_per_s.toFixed(0);
      console.log(
        `  run ${run + 1} ${kind.padEnd(7)} ingest ${r.ingest_groups_per_s.toFixed(1)} groups/s, e2e ${e2e} seq/s, server CPU ${r.server_cpu_ms_per_group_ingest.toFixed(1)} ms/group while ingesting, POST p50 ${r.post_p50_ms.toFixed(1)} ms (${r.post_retries} retried), /batch p50 ${r.batch_p50_ms.toFixed(1)} ms, ${r.delivered} delivered exactly once${r.runtime ? ` [${r.runtime}]` : ""}`,
      );
    }
  }
  return new Map([...byKind].map(([k, rs]) => [k, summarise(rs)] as const));
}

const x = (a: number, b: number | undefined) => (b ? `${(a / b).toFixed(2)}×` : "-");
const n = (v: number | undefined, digits = 1) =>
  v === undefined || Number.isNaN(v) ? "-" : v.toFixed(digits);

async function main() {
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}`;
  console.log(
    `bench:api — ${new Date().toISOString()} — ${machine} — load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(
        " ",
      )} — ${runs} run(s)${quick ? " (quick)" : ""}${atroposDir ? ` — original from ${atroposDir} (${base.atropos!.python})` : " — no original server (--atropos DIR)"}`,
  );
  const kinds: Kind[] = [
    ...(atroposDir ? (["atropos"] as const) : []),
    "edge",
    ...(args.includes("--floor") ? (["floor"] as const) : []),
  ];
  const results: WorkloadResult[] = [];
  const table: string[] = [];
  const summary: Record<string, Record<string, Summary>> = {};
  const selected = WORKLOADS.filter((_, i) => !onlyWorkloads || onlyWorkloads.includes(i + 1));
  for (const w of selected) {
    const s = await sideBySide(w, kinds, results);
    summary[w.name] = Object.fromEntries(s);
    const edge = s.get("edge")!;
    const orig = s.get("atropos");
    const floor = s.get("floor");
    table.push(
      `| ${w.name} | ${n(edge.ingest_groups_per_s)} / ${n(orig?.ingest_groups_per_s)} | **${x(edge.ingest_groups_per_s, orig?.ingest_groups_per_s)}** | ${n(floor?.ingest_groups_per_s)} (${floor ? x(floor.ingest_groups_per_s, orig?.ingest_groups_per_s) : "-"}) | ${n(edge.e2e_sequences_per_s, 0)} / ${n(orig?.e2e_sequences_per_s, 0)} / ${n(floor?.e2e_sequences_per_s, 0)} | **${x(edge.e2e_sequences_per_s, orig?.e2e_sequences_per_s)}** (floor ${floor ? x(floor.e2e_sequences_per_s, orig?.e2e_sequences_per_s) : "-"}) | ${n(edge.batch_p50_ms)} / ${n(orig?.batch_p50_ms)} | ${n(edge.cpu_ingest_ms)} / ${n(orig?.cpu_ingest_ms)} / ${n(floor?.cpu_ingest_ms)} |`,
    );
  }
  const leaseCount = count("--leases", 100, 1);
  const leases = args.includes("--no-depths")
    ? []
    : await leaseDepthScan(depths, {
        ...base,
        rounds: runs,
        leases: leaseCount,
        gapMs: count("--lease-gap-ms", 0, 0),
        wal: args.includes("--wal"),
      });
  const empty = args.includes("--no-empty")
    ? null
    : await emptyLease({ ...base, rounds: runs, leases: 200 });
  // Under --wal the leases are timed through strace: nothing to set floors beside.
  const noop =
    (leases.length || empty) && !args.includes("--wal")
      ? // At most 1,600 per round: the payload floor takes 12 of its 20,000 rows per lease.
        await noopFloor({
          ...base,
          rounds: runs,
          leases: Math.min(1600, Math.max(200, leaseCount)),
        })
      : null;
  let list: { single: Summary; list: Summary } | null = null;
  if (!args.includes("--no-list")) {
    const [single, listed] = [[], []] as WorkloadResult[][];
    for (let run = 0; run < runs; run++) {
      // Alternated, so both see the same minutes of this machine.
      single!.push(await runWorkload(LIST_PAIR[0]!, "edge", workloadOptions));
      listed!.push(await runWorkload(LIST_PAIR[1]!, "edge", workloadOptions));
      console.log(
        `  list run ${run + 1}: /scored_data ${single!.at(-1)!.ingest_groups_per_s.toFixed(1)} groups/s, /scored_data_list ${listed!.at(-1)!.ingest_groups_per_s.toFixed(1)} groups/s`,
      );
    }
    list = { single: summarise(single!), list: summarise(listed!) };
  }

  console.log(
    `\n## bench:api (medians of ${runs}; load average at the end ${loadavg()[0]!.toFixed(1)})\n`,
  );
  if (table.length) {
    console.log(
      "| workload (group 16, batch 64) | ingest groups/s: this / original | ingest × original | floor groups/s (× original) | e2e seq/s: this / original / floor | e2e × original (floor × original) | `/batch` p50 ms: this / original | server CPU ms per group while ingesting: this / original / floor |",
    );
    console.log("|---|---|---|---|---|---|---|---|");
    for (const row of table) console.log(row);
  }
  if (leases.length) {
    console.log(
      "\n| queued groups (mixed 1–16 × 32 tok) | lease p50 ms | lease p99 ms (median of rounds) | p99 per round | leases over 10 ms | max ms | ack p50 / p99 ms | server phases p50/p99 ms |",
    );
    console.log("|---|---|---|---|---|---|---|---|");
    for (const r of leases)
      console.log(
        `| ${r.queued_groups} | ${n(r.lease_p50_ms)} | **${n(r.lease_p99_ms)}** | ${r.rounds_p99_ms} | ${r.over_10ms} of ${r.leases} | ${n(r.lease_max_ms)} | ${n(r.ack_p50_ms)} / ${n(r.ack_p99_ms)} | ${r.server_ms} |`,
      );
    for (const { queued_groups, leases: count, wal } of leases) {
      if (!wal) continue;
      console.log(
        `\nD1 writes at ${queued_groups} queued (--wal; strace slows the runtime, so times here compare only with each other): ${n(wal.pages_per_cycle)} WAL pages per lease + ack; ${wal.checkpoints} checkpoints in ${count} cycles, ${wal.leases_with_checkpoint} of them inside a lease; of the ${wal.leases_with_checkpoint} slowest leases, ${wal.slowest_with_checkpoint} ran one; lease p50 ${n(wal.with_checkpoint_p50_ms)} ms with a checkpoint, ${n(wal.without_checkpoint_p50_ms)} without.`,
      );
    }
  }
  if (empty) {
    console.log(
      `\nEmpty lease: ${empty.requests_per_lease} HTTP request each, answered ${empty.status}; p50 ${n(empty.lease_p50_ms)} ms, p99 **${n(empty.lease_p99_ms)} ms** (rounds ${empty.rounds_p99_ms}); server phases p50/p99 ms: ${empty.server_ms}.`,
    );
  }
  if (noop) {
    console.log(
      `Floors (bare Worker on the same Miniflare), p50/p99 ms: ${Object.entries(noop)
        .map(
          ([name, f]) =>
            `${name} ${n(f.p50_ms)}/**${n(f.p99_ms)}** (rounds ${f.rounds_p99_ms}; ${f.over_10ms} of ${f.requests} over 10 ms)`,
        )
        .join("; ")}.`,
    );
  }
  if (list) {
    console.log(
      `\n/scored_data_list vs /scored_data (${LIST_GROUPS} groups of 512 tok, 8 producers): ${n(list.list.ingest_groups_per_s)} vs ${n(list.single.ingest_groups_per_s)} groups/s → **${x(list.list.ingest_groups_per_s, list.single.ingest_groups_per_s)}**`,
    );
  }
  if (stalledRuns.length > 0) {
    console.log(
      `\nVoid runs, each run once more on a fresh server:\n- ${stalledRuns.join("\n- ")}`,
    );
  }
  const json = option("--json");
  if (json) {
    writeFileSync(
      json,
      JSON.stringify(
        {
          date: new Date().toISOString(),
          machine,
          runs,
          summary,
          results,
          leases,
          empty,
          noop,
          list,
          stalled_runs: stalledRuns,
        },
        null,
        2,
      ),
    );
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
