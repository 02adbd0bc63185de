/** Fetch plumbing shared by the backends: JSON POST/GET, timeouts, error classification. */

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

/** An HTTP answer other than 2xx. `retryable` follows the retry policy (5xx, 408, 429). */
export class InferenceHttpError extends Error {
  constructor(
    readonly status: number,
    readonly url: string,
    readonly bodyText: string,
  ) {
    super(`inference server ${url} answered ${status}: ${bodyText.slice(0, 300)}`);
    this.name = "InferenceHttpError";
  }

  get retryable(): boolean {
    return this.status >= 500 || this.status === 408 || this.status === 429;
  }
}

/** The response could not be used (bad JSON, missing fields): retried like a network error. */
export class InferenceProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InferenceProtocolError";
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
}

function headers(apiKey: string | null | undefined, json: boolean): Record<string, string> {
  const result: Record<string, string> = { accept: "application/json" };
  if (json) result["content-type"] = "application/json";
  if (apiKey) result.authorization = `Bearer ${apiKey}`;
  return result;
}

async function readText(response: Response, url: string): Promise<string> {
  const text = await response.text(); // always consumes the body (Workers: 6 connections max)
  if (!response.ok) throw new InferenceHttpError(response.status, url, text);
  return text;
}

export function parseJsonText(text: string, url: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new InferenceProtocolError(`inference server ${url} returned invalid JSON`);
  }
}

async function readJson(response: Response, url: string): Promise<unknown> {
  return parseJsonText(await readText(response, url), url);
}

/** POST JSON; the 2xx answer's body as text (for callers that parse it themselves). */
export async function postText(ctx: RequestContext, url: string, body: unknown): Promise<string> {
  const response = await ctx.fetch(url, {
    method: "POST",
    headers: headers(ctx.apiKey, true),
    body: JSON.stringify(body),
    signal: ctx.signal,
  });
  return readText(response, url);
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
  return readJson(response, url);
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
