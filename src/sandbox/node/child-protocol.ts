/**
 * The host's side of the Python child's protocol: one JSON object per line on the child's stdout.
 * The child runs untrusted code that can reach its JavaScript realm and write anything to that
 * stream, so nothing it sends is trusted: lines are read with a size cap, and a line that is not
 * a well-formed answer becomes a failed run, never an exception in the host.
 */
import type { Readable } from "node:stream";
import { z } from "zod";
import {
  SANDBOX_COLLECT_MAX_CHARS,
  SANDBOX_COLLECT_MAX_FILES,
  SANDBOX_OUTPUT_CAP_CHARS,
  sandboxErrorKindSchema,
} from "../../core/wire/sandbox-schemas";
import { failedRun, type SandboxRunResult } from "../types";

/**
 * Longest line the host reads: the child's answer is at most two capped streams, the collected
 * files and a traceback, each character JSON-escaped to at most 6 bytes.
 */
export const MAX_ANSWER_LINE_BYTES =
  6 * (2 * SANDBOX_OUTPUT_CAP_CHARS + SANDBOX_COLLECT_MAX_CHARS) + 65_536;

export type LineEvent =
  | { kind: "line"; line: string }
  | { kind: "end" }
  | { kind: "too-long"; bytes: number };

/** Lines of a stream, one `next()` at a time, never buffering more than `maxBytes` of one line. */
export class BoundedLineReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private readonly events: LineEvent[] = [];
  private readonly waiters: Array<(event: LineEvent) => void> = [];
  private done = false;

  constructor(
    private readonly stream: Readable,
    private readonly maxBytes: number,
  ) {
    stream.on("data", (chunk: Buffer) => this.onData(chunk));
    stream.on("end", () => this.finish({ kind: "end" }));
    stream.on("close", () => this.finish({ kind: "end" }));
    stream.on("error", () => this.finish({ kind: "end" }));
  }

  next(): Promise<LineEvent> {
    const event = this.events.shift();
    if (event) return Promise.resolve(event);
    if (this.done) return Promise.resolve({ kind: "end" });
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private onData(chunk: Buffer): void {
    if (this.done) return;
    let rest = chunk;
    for (let newline = rest.indexOf(10); newline >= 0; newline = rest.indexOf(10)) {
      this.chunks.push(rest.subarray(0, newline));
      const line = Buffer.concat(this.chunks).toString("utf8");
      this.chunks = [];
      this.buffered = 0;
      this.emit({ kind: "line", line });
      rest = rest.subarray(newline + 1);
    }
    this.buffered += rest.length;
    if (this.buffered > this.maxBytes) {
      this.finish({ kind: "too-long", bytes: this.buffered });
      return;
    }
    if (rest.length > 0) this.chunks.push(rest);
  }

  private emit(event: LineEvent): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(event);
    else this.events.push(event);
  }

  private finish(event: LineEvent): void {
    if (this.done) return;
    this.done = true;
    this.chunks = [];
    this.stream.removeAllListeners("data");
    this.stream.resume(); // drain whatever else comes, without keeping it
    this.emit(event);
    for (const waiter of this.waiters.splice(0)) waiter({ kind: "end" });
  }
}

const childAnswerSchema = z.union([
  z.object({ fatal: z.string() }).strict(),
  z
    .object({
      stdout: z.string(),
      stderr: z.string(),
      error: z.object({ kind: sandboxErrorKindSchema, message: z.string() }).strict().nullable(),
      files: z.record(z.string(), z.string()).optional(),
    })
    .strict(),
]);

/** The run's result from the child's answer line, or a `runtime` failure naming what was wrong. */
export function resultFromAnswer(line: string, wallMs: number): SandboxRunResult {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return protocolFailure(`an answer that is not JSON (${line.length} characters)`, wallMs);
  }
  const parsed = childAnswerSchema.safeParse(json);
  if (!parsed.success) return protocolFailure("an answer of the wrong shape", wallMs);
  const answer = parsed.data;
  if ("fatal" in answer) return failedRun("unavailable", answer.fatal.slice(0, 4000), wallMs);
  // The child cuts collected files to the caps; code that patched its collector did not.
  const files = Object.values(answer.files ?? {});
  const chars = files.reduce((n, text) => n + text.length, 0);
  if (files.length > SANDBOX_COLLECT_MAX_FILES || chars > SANDBOX_COLLECT_MAX_CHARS) {
    return protocolFailure(`${files.length} files of ${chars} characters, over the caps`, wallMs);
  }
  return {
    ok: answer.error === null,
    stdout: answer.stdout.slice(0, SANDBOX_OUTPUT_CAP_CHARS),
    stderr: answer.stderr.slice(0, SANDBOX_OUTPUT_CAP_CHARS + 1024),
    value: null,
    error: answer.error,
    wall_ms: Math.round(wallMs),
    ...(answer.files ? { files: answer.files } : {}),
  };
}

export function protocolFailure(what: string, wallMs: number): SandboxRunResult {
  return failedRun("runtime", `the sandbox process sent ${what}; the run was stopped`, wallMs);
}
