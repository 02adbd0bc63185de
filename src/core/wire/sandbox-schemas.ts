/**
 * The sandbox's wire shapes: one code run asked of a sandbox and what comes back. Env workers on
 * Workers send them to a sandbox service over a service binding; Node runs them in a local
 * process pool. Both sides validate with these schemas.
 */
import { z } from "zod";

export const sandboxLanguageSchema = z.enum(["python", "javascript"]);
export type SandboxLanguage = z.infer<typeof sandboxLanguageSchema>;

/** Hard ceilings a caller cannot raise: every run is bounded whatever it asks. */
export const SANDBOX_MAX_TIMEOUT_MS = 60_000;
export const SANDBOX_MAX_MEMORY_MB = 1024;
export const SANDBOX_MAX_FILE_BYTES = 1_048_576;

/**
 * What a run may send back, whatever the code does: the engines cut output and collected files
 * here before anything leaves the sandbox, so a run's answer (and the host's memory for it) stays
 * small. Sizes count characters (UTF-16 code units), as `files` does.
 */
export const SANDBOX_OUTPUT_CAP_CHARS = 65_536;
/** `value` (JavaScript): a returned value longer than this as JSON fails the run. */
export const SANDBOX_VALUE_CAP_CHARS = 1_048_576;
/** `collect_files`: at most this many files and characters in all; the rest is cut, noted on stderr. */
export const SANDBOX_COLLECT_MAX_FILES = 256;
export const SANDBOX_COLLECT_MAX_CHARS = 1_048_576;
/** Limits handed to the engines with each run (their scripts are plain JavaScript). */
export const SANDBOX_ANSWER_LIMITS = {
  output_chars: SANDBOX_OUTPUT_CAP_CHARS,
  value_chars: SANDBOX_VALUE_CAP_CHARS,
  collect_files: SANDBOX_COLLECT_MAX_FILES,
  collect_chars: SANDBOX_COLLECT_MAX_CHARS,
} as const;
export type SandboxAnswerLimits = typeof SANDBOX_ANSWER_LIMITS;

export const sandboxRunRequestSchema = z.object({
  language: sandboxLanguageSchema,
  code: z.string().max(256 * 1024, "code must be at most 256 KiB"),
  /** Wall-clock limit for the run; the run is killed when it passes. */
  timeout_ms: z.number().int().positive().max(SANDBOX_MAX_TIMEOUT_MS).default(5000),
  /** Memory the code may use (Python: wasm heap; JavaScript: engine heap). */
  memory_mb: z.number().int().positive().max(SANDBOX_MAX_MEMORY_MB).default(256),
  /** Files written into the run's scratch directory (`/scratch`) before the code starts. */
  files: z
    .record(
      z.string().regex(/^[\w.\-/]+$/, "file names may use letters, digits, . - _ /"),
      z.string(),
    )
    .default({})
    .refine(
      (files) =>
        Object.values(files).reduce((n, text) => n + text.length, 0) <= SANDBOX_MAX_FILE_BYTES,
      "files must total at most 1 MiB",
    ),
  /** Return the scratch directory's files after the run (Python only). */
  collect_files: z.boolean().default(false),
});
export type SandboxRunRequest = z.output<typeof sandboxRunRequestSchema>;
export type SandboxRunInput = z.input<typeof sandboxRunRequestSchema>;

export const sandboxErrorKindSchema = z.enum([
  /** Past the wall-clock limit; the run was stopped. */
  "timeout",
  /** Past the memory limit. */
  "memory",
  /** The code raised or threw. */
  "runtime",
  /** The sandbox could not run it (engine missing, service down, bad request). */
  "unavailable",
]);
export type SandboxErrorKind = z.infer<typeof sandboxErrorKindSchema>;

export const sandboxRunResultSchema = z.object({
  ok: z.boolean(),
  stdout: z.string(),
  stderr: z.string(),
  /** What the last expression evaluated to (JavaScript), as JSON text; null otherwise. */
  value: z.string().nullable(),
  error: z.object({ kind: sandboxErrorKindSchema, message: z.string() }).nullable(),
  /** Wall time from handing the code over to the answer, in milliseconds. */
  wall_ms: z.number(),
  files: z.record(z.string(), z.string()).optional(),
});
export type SandboxRunResult = z.infer<typeof sandboxRunResultSchema>;
