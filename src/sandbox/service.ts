/**
 * The sandbox as a service: `handleSandboxRequest` answers `POST /run` with a sandbox (a Worker
 * that owns the Worker Loader or container binding, or a Node server), and `SandboxServiceClient`
 * is the same `Sandbox` interface over a service binding or URL for env workers.
 */
import { errorMessage } from "../core/errors";
import { sandboxRunRequestSchema, sandboxRunResultSchema } from "../core/wire/sandbox-schemas";
import { failedRun, type Sandbox, type SandboxRunInput, type SandboxRunResult } from "./types";

/** What a service binding offers (structurally; a `Fetcher` fits). */
export interface SandboxFetcher {
  fetch(input: Request | string, init?: RequestInit): Promise<Response>;
}

export const SANDBOX_RUN_PATH = "/run";

export async function handleSandboxRequest(sandbox: Sandbox, request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname !== SANDBOX_RUN_PATH) {
    return Response.json(
      { detail: `not found: POST ${SANDBOX_RUN_PATH} runs code` },
      { status: 404 },
    );
  }
  if (request.method !== "POST") {
    return Response.json({ detail: `use POST ${SANDBOX_RUN_PATH}` }, { status: 405 });
  }
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    return Response.json({ detail: "body must be JSON" }, { status: 400 });
  }
  const parsed = sandboxRunRequestSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return Response.json(
      { detail: `${issue?.path.join(".") || "body"}: ${issue?.message}` },
      { status: 422 },
    );
  }
  return Response.json(await sandbox.run(parsed.data));
}

export class SandboxServiceClient implements Sandbox {
  /** `target`: a service binding, or the base URL of a sandbox service. */
  constructor(private readonly target: SandboxFetcher | string) {}

  async run(input: SandboxRunInput): Promise<SandboxRunResult> {
    const started = Date.now();
    const init: RequestInit = {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(input),
    };
    try {
      const response =
        typeof this.target === "string"
          ? await fetch(new URL(SANDBOX_RUN_PATH, this.target), init)
          : await this.target.fetch(`https://sandbox${SANDBOX_RUN_PATH}`, init);
      const body: unknown = await response.json();
      if (!response.ok) {
        const detail = (body as { detail?: unknown } | null)?.detail;
        return failedRun(
          "unavailable",
          `sandbox service ${response.status}: ${String(detail)}`,
          Date.now() - started,
        );
      }
      return sandboxRunResultSchema.parse(body);
    } catch (err) {
      const message = errorMessage(err);
      return failedRun(
        "unavailable",
        `sandbox service unreachable: ${message}`,
        Date.now() - started,
      );
    }
  }
}
