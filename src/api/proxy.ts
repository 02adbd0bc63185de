/**
 * The inference proxy's request handling, shared by its OpenAI-style routes
 * (/v1/runs/{run}/proxy/{session}/…) and its Atropos-style routes (/v1/runs/{run}/atropos-proxy/…):
 * session lifecycle and expiry, forwarding through the run's servers, and finishing a session
 * into a scored group with its trajectories.
 */
import { errorMessage } from "../core/errors";
import { openAiRequestSchema } from "../core/wire/api-schemas";
import {
  emptyTracking,
  type FinishSessionRequest,
  finishProblem,
  ProxyInputError,
  type ProxyTracking,
  proxySessionIdSchema,
  sessionGroup,
  sessionTrajectories,
} from "../core/wire/proxy-session";
import { scopesAllow } from "../core/wire/tokens";
import type { AppContext } from "./context";
import { ApiError } from "./errors";
import { submitGroupInProcess } from "./ingest-submit";
import { submitterOf } from "./middleware/auth";
import { reserveProxyTokens } from "./middleware/quotas";
import { includeUsageOf, type ProxyCallKind, streamProxyCall } from "./proxy-stream";
import { logUpstreamFailure, sanitizedFailure } from "./proxy-upstream";
import { jsonBody } from "./request";
import { settingsOf } from "./settings";
import { getRunInference } from "./storage/inference";
import {
  createSession,
  finishSession,
  loadSession,
  type ProxySessionRow,
  saveTracking,
} from "./storage/proxy-sessions";

/** A session is one D1 row (at most 2 MB): refuse to grow it past this, with a way out. */
export const MAX_SESSION_BYTES = 1_800_000;

export function sessionTtlMs(c: AppContext): number {
  return settingsOf(c.env).PROXY_SESSION_TTL_S * 1000;
}

export function sessionIdOf(c: AppContext): string {
  const id = c.req.param("session") ?? "";
  const parsed = proxySessionIdSchema.safeParse(id);
  if (!parsed.success) {
    throw new ApiError(
      "BAD_REQUEST",
      `invalid session id '${id}': ${parsed.error.issues[0]?.message}`,
    );
  }
  return id;
}

/**
 * Whether the caller may use the session: the token that created it, and admin (API_TOKEN, an
 * admin-scoped token, open local development). Others are told it does not exist.
 */
function mayUse(c: AppContext, session: ProxySessionRow): boolean {
  const principal = c.get("principal");
  if (principal.kind !== "token" || scopesAllow(principal.token.scopes, "admin")) return true;
  return session.owner === principal.token.id;
}

function noSession(c: AppContext, run: string, id: string): ApiError {
  const forToken = c.get("principal").kind === "token";
  return new ApiError(
    "NOT_FOUND",
    `no inference-proxy session '${id}' in run '${run}'${forToken ? " for this token (a session belongs to the token that created it)" : ""}`,
  );
}

/** The session if it exists and the caller may use it (expired or not); 404 otherwise. */
export async function ownedSession(
  c: AppContext,
  run: string,
  id: string,
): Promise<ProxySessionRow> {
  const session = await loadSession(c.env.DB, run, id);
  if (!session || !mayUse(c, session)) throw noSession(c, run, id);
  return session;
}

/** Creates a session owned by the caller (an Atropos-wire create, or a first OpenAI call). */
export function createOwnedSession(
  c: AppContext,
  run: string,
  id: string,
  now: number,
  task: string | null = null,
): Promise<ProxySessionRow> {
  return createSession(
    c.env.DB,
    run,
    id,
    emptyTracking(),
    now,
    sessionTtlMs(c),
    submitterOf(c),
    task,
  );
}

/**
 * The session, checked usable: unknown sessions are created when `create` (an OpenAI base URL
 * names its session) and 404 otherwise; another token's sessions are 404; expired ones are 404
 * with when and why.
 */
export async function usableSession(
  c: AppContext,
  run: string,
  id: string,
  options: { create: boolean; now: number; task?: string | null },
): Promise<ProxySessionRow> {
  let session = await loadSession(c.env.DB, run, id);
  if (!session) {
    if (!options.create) throw noSession(c, run, id);
    session = await createOwnedSession(c, run, id, options.now, options.task ?? null);
  }
  if (!mayUse(c, session)) throw noSession(c, run, id);
  if (options.now >= session.expiresAt) {
    const idle = Math.round(sessionTtlMs(c) / 1000);
    throw new ApiError(
      "NOT_FOUND",
      `inference-proxy session '${id}' expired at ${new Date(session.expiresAt).toISOString()} (sessions expire ${idle} s after their last call); start a new session`,
    );
  }
  return session;
}

function requireOpen(session: ProxySessionRow): void {
  if (session.status === "finished") {
    throw new ApiError(
      "CONFLICT",
      `inference-proxy session '${session.id}' is finished (group ${session.groupId}); start a new session for a new conversation`,
    );
  }
}

/**
 * Forwards one OpenAI call of a session and records what was sampled; `stream: true` answers in
 * Server-Sent Events (proxy-stream.ts) with the same tracking.
 */
export async function forwardProxyCall(
  c: AppContext,
  run: string,
  id: string,
  kind: ProxyCallKind,
  create: boolean,
): Promise<Response> {
  const body = await jsonBody(c, openAiRequestSchema);
  if (body.stream !== undefined && typeof body.stream !== "boolean") {
    throw new ApiError("BAD_REQUEST", "stream must be true or false");
  }
  const includeUsage = includeUsageOf(body);
  if (typeof includeUsage === "string") throw new ApiError("BAD_REQUEST", includeUsage);
  if (c.req.header("x-atropos-retokenize") === "1") body.retokenize = true;
  const proxy = c.get("inferenceProxy");
  if (!proxy) {
    throw new ApiError("UNAVAILABLE", "this Worker was built without the inference proxy");
  }
  const inference = await getRunInference(c.env.DB, run, c.env.INFERENCE_KEYS_SECRET).catch(
    (error: unknown) => {
      // Keys sealed with a secret this Worker no longer has (or another one).
      const message = errorMessage(error);
      throw new ApiError("UNAVAILABLE", `cannot read run '${run}' inference keys: ${message}`);
    },
  );
  if (!inference) {
    throw new ApiError(
      "CONFLICT",
      `run '${run}' has no inference servers; set them with PUT /v1/runs/${run}/inference (or \`atropos-edge inference set\`)`,
    );
  }
  const session = await usableSession(c, run, id, { create, now: Date.now() });
  requireOpen(session);
  const tracking: ProxyTracking = structuredClone(session.tracking);
  const servers = inference.servers;
  // Input the servers cannot serve is refused before anything is sent (a 4xx, also when streaming).
  try {
    await proxy.check(servers, tracking, body, kind, { tokenizerBucket: c.env.PAYLOADS });
  } catch (error) {
    if (error instanceof ProxyInputError) throw new ApiError("BAD_REQUEST", error.message);
    throw error;
  }
  const settle = await reserveProxyTokens(c, body);
  const call = (signal?: AbortSignal) => {
    const context = { tokenizerBucket: c.env.PAYLOADS, ...(signal ? { signal } : {}) };
    return kind === "chat"
      ? proxy.chatCompletion(servers, tracking, body, context)
      : proxy.completion(servers, tracking, body, context);
  };
  const failure = async (error: unknown, signal?: AbortSignal): Promise<ApiError> => {
    await settle(0);
    if (error instanceof ProxyInputError) return new ApiError("BAD_REQUEST", error.message);
    if (!signal?.aborted) logUpstreamFailure(run, servers, error);
    return new ApiError(
      "UNAVAILABLE",
      `the run's inference servers failed: ${sanitizedFailure(error)} (the Worker's log has the details)`,
    );
  };
  const record = async (answer: Record<string, unknown>): Promise<void> => {
    await settle(totalTokens(answer));
    const size = JSON.stringify(tracking).length;
    if (size > MAX_SESSION_BYTES) {
      throw new ApiError(
        "PAYLOAD_TOO_LARGE",
        `inference-proxy session '${id}' would hold ${size} bytes of tracked sequences (limit ${MAX_SESSION_BYTES}); this completion was not recorded: finish the session and continue in a new one`,
      );
    }
    const saved = await saveTracking(c.env.DB, session, tracking, Date.now(), sessionTtlMs(c));
    if (!saved) {
      throw new ApiError(
        "CONFLICT",
        `inference-proxy session '${id}' changed during this call (another call on the same session, or it was finished); a session is one conversation: send its calls one at a time`,
      );
    }
  };
  if (body.stream === true) {
    let signal: AbortSignal | undefined;
    return streamProxyCall({
      kind,
      model: servers[0]?.model_name ?? "",
      includeUsage,
      call: (aborted) => {
        signal = aborted;
        return call(aborted);
      },
      record,
      fail: async (error) => {
        const problem = await failure(error, signal);
        return { status: problem.status, message: problem.message, type: problem.code };
      },
      waitUntil: (promise) => waitUntilOf(c)?.(promise),
    });
  }
  let answer: Record<string, unknown>;
  try {
    answer = await call();
  } catch (error) {
    throw await failure(error);
  }
  await record(answer);
  return c.json(answer);
}

/** The execution context's waitUntil where there is one (absent in some test harnesses). */
function waitUntilOf(c: AppContext): ((promise: Promise<unknown>) => void) | undefined {
  try {
    const ctx = c.executionCtx;
    return (promise) => ctx.waitUntil(promise);
  } catch {
    return undefined;
  }
}

function totalTokens(answer: Record<string, unknown>): number {
  const total = (answer.usage as { total_tokens?: unknown } | undefined)?.total_tokens;
  return typeof total === "number" && Number.isFinite(total) ? total : 0;
}

export interface FinishOutcome {
  session: string;
  group_id: number;
  status: "received" | "buffered" | "duplicate";
  sequences: number;
}

/**
 * Submits the session as one scored group through the normal ingest path and stores its
 * trajectories beside it. Finishing again answers the same group (the idempotency key is the
 * session), so a retried finish never submits twice.
 */
export async function finishProxySession(
  c: AppContext,
  run: string,
  id: string,
  body: FinishSessionRequest,
): Promise<FinishOutcome> {
  const now = Date.now();
  const session = await usableSession(c, run, id, { create: false, now });
  const count = session.tracking.nodes.length;
  if (session.status === "finished" && session.groupId !== null) {
    return { session: id, group_id: session.groupId, status: "duplicate", sequences: count };
  }
  const problem = finishProblem(session.tracking, body);
  if (problem) {
    throw new ApiError("VALIDATION_FAILED", problem, [
      { type: "value_error", loc: ["body", "scores"], msg: problem },
    ]);
  }
  const group = sessionGroup(session.tracking, body);
  // The group is the caller's contribution: attributed to its token (and to the session's task).
  const tokenId = submitterOf(c);
  const submitted = await submitGroupInProcess(
    c.env,
    run,
    group,
    `proxy-session/${id}/${session.createdAt}`,
    tokenId,
  );
  const groupId = submitted.groupId ?? -1;
  const trajectories = sessionTrajectories(session.tracking, body, session.createdAt, now);
  const scoreMean = body.scores.reduce((a, b) => a + b, 0) / body.scores.length;
  await finishSession(c.env.DB, session, groupId, trajectories, now, { tokenId, scoreMean });
  return { session: id, group_id: groupId, status: submitted.status, sequences: count };
}
