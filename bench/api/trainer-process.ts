/**
 * bench:api's trainer, in a process of its own as a real trainer is: it pulls GET /batch as an
 * Atropos trainer does (gzip when asked, the answer parsed, 20 ms back-off on an empty answer)
 * and checks that every sequence arrives exactly once (each starts with its unique id).
 *
 * It once ran in the producers' event loop, where parsing a batch (about 300 KB of JSON at 512
 * tokens) held up the POST answers that arrived meanwhile: the load generator, not the server,
 * then set part of the producers' pace, the more so the faster the server.
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Client, ServerStalled } from "./http";

export interface TrainerOptions {
  url: string;
  headers: Record<string, string>;
  /** Sequences the producers send: the trainer stops once it has all of them. */
  total: number;
  /** The Accept-Encoding the trainer sends. */
  encoding: string;
  /** Wall-clock ms (Date.now) after which it stops. */
  deadline: number;
  /** It stops when nothing arrived for this long after the producers finished. */
  noProgressMs: number;
}

export interface TrainerResult {
  delivered: number;
  duplicates: number;
  missing: number;
  /** Sequences whose id is not one of the measured run's (a warm-up group left queued). */
  foreign: number;
  /** Latency of each GET /batch that carried a batch, ms. */
  batchLatencies: number[];
  /** When the last batch arrived (`wallMs`), or null when none did. */
  lastDelivery: number | null;
}

type ToTrainer =
  | { kind: "start"; options: TrainerOptions }
  | { kind: "go" }
  | { kind: "ingest-done"; at: number };
type FromTrainer =
  | { kind: "ready" }
  | { kind: "done"; result: TrainerResult }
  | { kind: "failed"; message: string; stalled: boolean };

/** Wall-clock ms with a fraction, comparable across processes. */
export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

const BACK_OFF_MS = 20;

/** The trainer's process, connected and waiting for `go` (call it when the clock starts). */
export interface TrainerProcess {
  go(): void;
  /** The producers finished at `at` (`wallMs`): the no-progress limit counts from then. */
  ingestDone(at: number): void;
  result: Promise<TrainerResult>;
  /** Ends the process (when the run failed before its result). */
  kill(): void;
}

export async function startTrainer(options: TrainerOptions): Promise<TrainerProcess> {
  const child = fork(fileURLToPath(import.meta.url), [], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  // After the result the channel is closed: a late message is dropped, not an uncaught error.
  const send = (message: ToTrainer) => {
    if (child.connected) child.send(message);
  };
  child.on("error", () => {});
  send({ kind: "start", options });
  let ready: () => void = () => {};
  const isReady = new Promise<void>((resolve) => {
    ready = resolve;
  });
  const result = new Promise<TrainerResult>((resolve, reject) => {
    child.on("message", (message: FromTrainer) => {
      if (message.kind === "ready") ready();
      else if (message.kind === "done") resolve(message.result);
      // A server that stopped answering voids the run (bench:api runs it again): say so as such.
      else if (message.stalled) reject(new ServerStalled(message.message));
      else reject(new Error(`the trainer failed: ${message.message}`));
    });
    child.on("exit", (code) => reject(new Error(`the trainer's process exited (${code})`)));
  });
  // Failing before it is ready ends the wait too.
  await Promise.race([isReady, result]);
  return {
    go: () => send({ kind: "go" }),
    ingestDone: (at) => send({ kind: "ingest-done", at }),
    result: result.finally(() => {
      if (child.connected) child.disconnect();
    }),
    kill: () => child.kill(),
  };
}

/** The pull loop, in the trainer's process. */
async function train(options: TrainerOptions, started: Promise<void>, ingestDone: () => number) {
  const client = new Client(options.url, options.headers, 1);
  const seen = new Uint8Array(options.total);
  const batchLatencies: number[] = [];
  let delivered = 0;
  let duplicates = 0;
  let foreign = 0;
  let lastDelivery: number | null = null;
  await started;
  const stalled = () => {
    const done = ingestDone();
    return done > 0 && wallMs() - Math.max(lastDelivery ?? 0, done) > options.noProgressMs;
  };
  try {
    while (delivered < options.total && Date.now() < options.deadline && !stalled()) {
      const t0 = performance.now();
      const res = await client.get("/batch", { "accept-encoding": options.encoding });
      const body = JSON.parse(res.text) as { batch: { tokens: number[][] }[] | null };
      if (!body.batch) {
        await new Promise((resolve) => setTimeout(resolve, BACK_OFF_MS));
        continue;
      }
      batchLatencies.push(performance.now() - t0);
      for (const group of body.batch) {
        for (const sequence of group.tokens) {
          const id = sequence[0]!;
          if (!(id >= 0 && id < options.total)) {
            foreign++;
            continue;
          }
          if (seen[id]) duplicates++;
          seen[id] = 1;
          delivered++;
        }
      }
      lastDelivery = wallMs();
    }
  } finally {
    await client.close();
  }
  const missing = seen.reduce((count, v) => count + (v ? 0 : 1), 0);
  return { delivered, duplicates, missing, foreign, batchLatencies, lastDelivery };
}

function runAsTrainer(): void {
  const reply = (message: FromTrainer) => process.send?.(message);
  let go: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    go = resolve;
  });
  let ingestDoneAt = 0;
  process.on("message", (message: ToTrainer) => {
    if (message.kind === "go") go();
    else if (message.kind === "ingest-done") ingestDoneAt = message.at;
    else {
      train(message.options, started, () => ingestDoneAt).then(
        (result) => reply({ kind: "done", result }),
        (error: unknown) =>
          reply({
            kind: "failed",
            message: error instanceof Error ? error.message : String(error),
            stalled: error instanceof ServerStalled,
          }),
      );
      reply({ kind: "ready" });
    }
  });
  // The parent gone (its run over or failed): nothing more to do.
  process.on("disconnect", () => process.exit(0));
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.send) runAsTrainer();
