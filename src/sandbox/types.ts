/**
 * What an env sees of a sandbox: one method that runs untrusted code under limits and never
 * throws for the code's faults (they come back as `error`). Implementations: the local process
 * pool and QuickJS (Node), Worker Loader and Cloudflare Sandbox (deployed), and a client of a
 * sandbox service (a service binding or URL).
 */
import {
  type SandboxErrorKind,
  type SandboxRunInput,
  type SandboxRunRequest,
  type SandboxRunResult,
  sandboxRunRequestSchema,
} from "../core/wire/sandbox-schemas";

export type {
  SandboxErrorKind,
  SandboxLanguage,
  SandboxRunInput,
  SandboxRunRequest,
  SandboxRunResult,
} from "../core/wire/sandbox-schemas";

export interface Sandbox {
  /** Run code; resolves within the request's timeout plus a little, whatever the code does. */
  run(request: SandboxRunInput): Promise<SandboxRunResult>;
  /** Stop warm processes (Node); a no-op where there are none. */
  close?(): Promise<void>;
}

/** Defaults filled and limits checked; throws a message that says what to fix. */
export function parseSandboxRequest(input: SandboxRunInput): SandboxRunRequest {
  const parsed = sandboxRunRequestSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`bad sandbox request: ${issue?.path.join(".") || "body"}: ${issue?.message}`);
  }
  return parsed.data;
}

/** A result for a run that failed before or around the code (never thrown at the caller). */
export function failedRun(
  kind: SandboxErrorKind,
  message: string,
  wallMs: number,
  output: { stdout?: string; stderr?: string } = {},
): SandboxRunResult {
  return {
    ok: false,
    stdout: output.stdout ?? "",
    stderr: output.stderr ?? "",
    value: null,
    error: { kind, message },
    wall_ms: Math.round(wallMs),
  };
}
