/**
 * What every client of the rollout API shares (the trainer and admin clients, the env-side
 * client, the CLI's): bearer auth, retries of network errors and 5xx with exponential backoff and
 * jitter, one error class, and reading a JSON answer (checked against the route's zod schema when
 * the caller names it) or the server's error message. Web-standard fetch only, so it runs in Node
 * and Workers.
 */
import type { z } from "zod";
import { abortableSleep } from "../concurrency/abortable-sleep";

/** The API answered with an error status (or a body that is not JSON). */
export class ApiResponseError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(message);
    this.name = "ApiResponseError";
  }
}

export interface HttpClientOptions {
  token?: string;
  /** Attempts per request on 5xx / network errors. */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  fetch?: typeof fetch;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface HttpAnswer {
  status: number;
  text: string;
}

/** The message a reader needs from an error body: the project's `error.message`, or FastAPI's `detail`. */
function serverMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: string }; detail?: unknown };
    return parsed.error?.message ?? JSON.stringify(parsed.detail ?? parsed).slice(0, 300);
  } catch {
    return text.slice(0, 300);
  }
}

/** Parses a JSON answer; an error status or a non-JSON body throws ApiResponseError. */
export function parseJsonAnswer<T>(res: HttpAnswer, what: string): T {
  if (res.status >= 400) {
    throw new ApiResponseError(
      `${what}: HTTP ${res.status}: ${serverMessage(res.text)}`,
      res.status,
      res.text,
    );
  }
  try {
    return JSON.parse(res.text) as T;
  } catch {
    throw new ApiResponseError(
      `${what}: response is not JSON: ${res.text.slice(0, 200)}`,
      res.status,
      res.text,
    );
  }
}

/**
 * Parses a JSON answer and checks it against `schema` (the route's response schema): an error
 * status, a non-JSON body or an answer of another shape throws ApiResponseError.
 */
export function parseAnswer<S extends z.ZodType>(
  res: HttpAnswer,
  what: string,
  schema: S,
): z.output<S> {
  const parsed = schema.safeParse(parseJsonAnswer<unknown>(res, what));
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new ApiResponseError(
    `${what}: the answer does not match the API's schema (${issue?.path.join(".") || "answer"}: ${issue?.message ?? "invalid"}); are the client and the server the same version?`,
    res.status,
    res.text,
  );
}

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export class HttpClient {
  readonly attempts: number;
  private readonly options: HttpClientOptions;
  private readonly doFetch: typeof fetch;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(options: HttpClientOptions) {
    this.options = options;
    this.attempts = Math.max(1, options.attempts);
    this.doFetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.sleep = options.sleep ?? abortableSleep;
  }

  /** `extra` plus the bearer token when there is one. */
  headers(extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { ...extra };
    if (this.options.token) h.Authorization = `Bearer ${this.options.token}`;
    return h;
  }

  /**
   * Runs `attempt` until it answers below 500, retrying 5xx and network errors with backoff;
   * the last attempt's answer is returned whatever its status, or its error thrown.
   */
  async withRetry<T extends { status: number }>(
    attempt: () => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    let lastError: unknown;
    for (let i = 0; i < this.attempts; i++) {
      if (i > 0) {
        const cap = Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** (i - 1));
        await this.sleep(cap / 2 + Math.random() * (cap / 2), signal);
      }
      try {
        const res = await attempt();
        if (res.status < 500 || i === this.attempts - 1) return res;
        lastError = new ApiResponseError(`HTTP ${res.status}`, res.status, "");
      } catch (err) {
        if (signal?.aborted) throw err;
        lastError = err;
      }
    }
    throw lastError instanceof Error ? lastError : new Error(String(lastError));
  }

  /** One request with retries; the body (a value to JSON-encode, or bytes) and headers as given. */
  async send(
    method: HttpMethod,
    url: string,
    init: {
      json?: unknown;
      bytes?: Uint8Array<ArrayBuffer>;
      headers?: Record<string, string>;
      signal?: AbortSignal;
    } = {},
  ): Promise<HttpAnswer & { headers: Headers }> {
    const extra: Record<string, string> = { ...init.headers };
    if (init.json !== undefined) extra["Content-Type"] = "application/json";
    const headers = this.headers(extra);
    const body = init.json !== undefined ? JSON.stringify(init.json) : init.bytes;
    return this.withRetry(async () => {
      const res = await this.doFetch(url, { method, headers, body, signal: init.signal });
      return { status: res.status, text: await res.text(), headers: res.headers };
    }, init.signal);
  }
}
