/**
 * What a client of the inference proxy is told when the run's inference servers fail: a status
 * and a sanitized message, never the server's own error body (an upstream that echoes request
 * headers would hand the run's API key to the caller) nor its base_url. The Worker's log keeps
 * the details, with the servers named and every key redacted.
 */
import { errorMessage } from "../core/errors";
import type { APIServerConfig } from "../core/wire/server-config";

/** The failure in words a contributor may see. */
export function sanitizedFailure(error: unknown): string {
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status === "number") return `an inference server answered HTTP ${status}`;
  const name = error instanceof Error ? error.name : "";
  if (name === "TimeoutError" || name === "AbortError") return "an inference server timed out";
  if (name === "TypeError") return "an inference server could not be reached";
  return "an inference server gave an answer the proxy cannot use";
}

/** `text` with each key, and anything sent as a Bearer credential, replaced by [redacted]. */
export function redactSecrets(text: string, keys: readonly (string | null | undefined)[]): string {
  let out = text;
  for (const key of keys) {
    if (key) out = out.split(key).join("[redacted]");
  }
  return out.replace(/(bearer\s+)(?!\[redacted\])[^\s"',;}\]]+/gi, "$1[redacted]");
}

/** One log line for the operator: which run and servers, and the error without keys. */
export function logUpstreamFailure(
  run: string,
  servers: readonly APIServerConfig[],
  error: unknown,
): void {
  const message = errorMessage(error);
  console.log(
    JSON.stringify({
      level: "warn",
      msg: "inference proxy: the run's servers failed",
      run,
      servers: servers.map((s) => s.base_url),
      error: redactSecrets(
        message,
        servers.map((s) => s.api_key),
      ),
    }),
  );
}
