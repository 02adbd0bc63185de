/** Fetch plumbing shared by the backends: JSON POST/GET, timeouts, error classification. */

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

/**
 * An HTTP answer other than 2xx. `retryable` follows the retry policy (5xx, 408, 429). The
 * message carries the server's own error message (errorMessageOf) and, for a 404 that means
 * "no such route", which server type to use instead (the caller's hint).
 */
export class InferenceHttpError extends Error {
  /** The error message the server sent (or its body's first 300 characters). */
  readonly serverMessage: string;

  constructor(
    readonly status: number,
    readonly url: string,
    readonly bodyText: string,
    notFoundHint?: string,
  ) {
    const serverMessage = errorMessageOf(bodyText);
    const hint =
      status === 404
        ? isMissingRoute(bodyText)
          ? notFoundHint
          : /\bmodel\b/i.test(serverMessage)
            ? "check --model / model_name: GET /v1/models lists the names this server serves"
            : undefined
        : status === 422 && refusesTokenFields(bodyText)
          ? REFUSED_TOKEN_FIELDS_HINT
          : undefined;
    const said = serverMessage || "(empty body)";
    const withHint = hint
      ? `${/[.!?]$/.test(said) ? said : `${said}.`} ${hint[0]?.toUpperCase()}${hint.slice(1)}`
      : said;
    super(`inference server ${url} answered ${status}: ${withHint}`);
    this.name = "InferenceHttpError";
    this.serverMessage = serverMessage;
  }

  get retryable(): boolean {
    return this.status >= 500 || this.status === 408 || this.status === 429;
  }
}

/**
 * A 422 naming vLLM's token fields (or refusing unknown fields, as `transformers serve` does):
 * the server is an OpenAI-compatible one that cannot return token ids.
 */
function refusesTokenFields(bodyText: string): boolean {
  return /return_tokens?(_as_token)?_ids|unexpected fields/i.test(bodyText);
}

const REFUSED_TOKEN_FIELDS_HINT =
  "this server refuses vLLM's token fields (return_token_ids), so it is not vLLM: use " +
  "--server-type openai for a text-only OpenAI-compatible server such as `transformers serve` " +
  "(not token-exact: its text is re-tokenized), or a server that returns token ids (vllm, " +
  "sglang, trl, atropos, or `atropos-edge engine`)";

/**
 * The message in an error body: OpenAI and newer vLLM/SGLang `{"error": {"message"}}`, older
 * vLLM `{"object": "error", "message"}`, FastAPI `{"detail": "..."}` or
 * `{"detail": [{"loc", "msg"}]}` (TRL, Atropos' server, unknown routes), SGLang's
 * `{"success": false, "message"}`; otherwise the body's first 300 characters.
 */
export function errorMessageOf(bodyText: string): string {
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    return bodyText.trim().slice(0, 300);
  }
  if (body && typeof body === "object" && !Array.isArray(body)) {
    const record = body as Record<string, unknown>;
    const error = record.error;
    if (
      error &&
      typeof error === "object" &&
      typeof (error as { message?: unknown }).message === "string"
    ) {
      return (error as { message: string }).message;
    }
    if (typeof error === "string") return error;
    if (typeof record.message === "string") return record.message;
    const detail = record.detail;
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail)) {
      return detail
        .map((d) => {
          const item = (d ?? {}) as { loc?: unknown; msg?: unknown };
          const loc = Array.isArray(item.loc) ? item.loc.join(".") : "";
          return `${loc ? `${loc}: ` : ""}${String(item.msg ?? JSON.stringify(d))}`;
        })
        .join("; ");
    }
  }
  return bodyText.trim().slice(0, 300);
}

/**
 * A 404 that means "this server has no such route" (FastAPI's `{"detail": "Not Found"}`, an
 * empty or non-JSON body), as opposed to a route's own 404 such as vLLM's "model does not exist".
 */
export function isMissingRoute(bodyText: string): boolean {
  const text = bodyText.trim();
  if (!text) return true;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return true;
  }
  if (!body || typeof body !== "object") return true;
  return /^not found\.?$/i.test(errorMessageOf(text).trim());
}

/** The response could not be used (bad JSON, missing fields): retried like a network error. */
export class InferenceProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InferenceProtocolError";
  }
}

/**
 * The server answered, but it is not the kind or version that can give what was asked (no token
 * ids, no logprobs): retrying cannot help, so this is not retryable. The message says what to use.
 */
export class InferenceMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InferenceMismatchError";
  }
}

export function isRetryableError(error: unknown): boolean {
  if (error instanceof InferenceHttpError) return error.retryable;
  if (error instanceof InferenceProtocolError) return true;
  if (error instanceof Error) {
    // fetch network failures are TypeErrors; our per-request timeout aborts with TimeoutError.
    return (
      error.name === "TypeError" || error.name === "TimeoutError" || error.name === "AbortError"
    );
  }
  return false;
}

export interface RequestContext {
  fetch: FetchLike;
  signal?: AbortSignal;
  apiKey?: string | null;
  /** Added to a "no such route" 404: which server type to use instead. */
  notFoundHint?: string;
}

function headers(apiKey: string | null | undefined, json: boolean): Record<string, string> {
  const result: Record<string, string> = { accept: "application/json" };
  if (json) result["content-type"] = "application/json";
  if (apiKey) result.authorization = `Bearer ${apiKey}`;
  return result;
}

async function readText(response: Response, url: string, notFoundHint?: string): Promise<string> {
  const text = await response.text(); // always consumes the body (Workers: 6 connections max)
  if (!response.ok) throw new InferenceHttpError(response.status, url, text, notFoundHint);
  return text;
}

export function parseJsonText(text: string, url: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new InferenceProtocolError(`inference server ${url} returned invalid JSON`);
  }
}

async function readJson(response: Response, url: string, notFoundHint?: string): Promise<unknown> {
  return parseJsonText(await readText(response, url, notFoundHint), url);
}

/** POST JSON; the 2xx answer's body as text (for callers that parse it themselves). */
export async function postText(ctx: RequestContext, url: string, body: unknown): Promise<string> {
  const response = await ctx.fetch(url, {
    method: "POST",
    headers: headers(ctx.apiKey, true),
    body: JSON.stringify(body),
    signal: ctx.signal,
  });
  return readText(response, url, ctx.notFoundHint);
}

export async function postJson(ctx: RequestContext, url: string, body: unknown): Promise<unknown> {
  return parseJsonText(await postText(ctx, url, body), url);
}

export async function getJson(ctx: RequestContext, url: string): Promise<unknown> {
  const response = await ctx.fetch(url, {
    method: "GET",
    headers: headers(ctx.apiKey, false),
    signal: ctx.signal,
  });
  return readJson(response, url, ctx.notFoundHint);
}

/** GET that only cares about the status; the body is cancelled, never left open. */
export async function probe(ctx: RequestContext, url: string): Promise<boolean> {
  const response = await ctx.fetch(url, {
    method: "GET",
    headers: headers(ctx.apiKey, false),
    signal: ctx.signal,
  });
  await response.body?.cancel();
  return response.ok;
}

/** "http://h:9001/v1/" → "http://h:9001" (only a trailing /v1 is removed). */
export function rootUrl(baseUrl: string): string {
  return trimSlash(baseUrl).replace(/\/v1$/, "");
}

/** "http://h:8000/v1/completions" → "/v1/completions" (the URL itself when it cannot be parsed). */
export function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

export function trimSlash(url: string): string {
  return url.replace(/\/+$/, "");
}

export function asRecord(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new InferenceProtocolError(`${what}: expected an object`);
  }
  return value as Record<string, unknown>;
}

export function asArray(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new InferenceProtocolError(`${what}: expected an array`);
  return value;
}

export function asNumber(value: unknown, what: string): number {
  if (typeof value !== "number" || Number.isNaN(value)) {
    throw new InferenceProtocolError(`${what}: expected a number`);
  }
  return value;
}

/** SGLang may report finish_reason as {"type": "stop", ...}. */
export function flattenFinishReason(value: unknown): string {
  if (typeof value === "string") return value;
  if (value && typeof value === "object" && "type" in value) {
    const type = (value as { type: unknown }).type;
    if (typeof type === "string") return type;
  }
  return "stop";
}
