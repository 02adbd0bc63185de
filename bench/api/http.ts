/**
 * The load generator's HTTP client: undici's Pool (keep-alive, one connection per producer, no
 * WHATWG stream wrapping), so the generator takes as little of the two cores it shares with the
 * servers under test as it can. Bodies are built before the clock starts (see workloads.ts).
 */
import { gunzipSync } from "node:zlib";
import { Pool } from "undici";

export type Body = Uint8Array | string;

/** A server that sends nothing for this long has stopped (not merely slowed): the run fails. */
const STALL_MS = 60_000;

/** The server under test stopped answering (see STALL_MS): its run is void, not slow. */
export class ServerStalled extends Error {}

const STALL_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

export class Client {
  private readonly pool: Pool;
  /** Network-level failures retried by `post` (a server may answer early and close). */
  retries = 0;
  /** Every HTTP request this client sent: the empty-lease check counts them. */
  requests = 0;

  constructor(
    readonly url: string,
    readonly headers: Record<string, string>,
    connections = 16,
    private readonly stallMs = STALL_MS,
  ) {
    this.pool = new Pool(url, {
      connections,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      headersTimeout: stallMs,
      bodyTimeout: stallMs,
    });
  }

  async request(
    method: "GET" | "POST",
    path: string,
    body?: Body,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; text: string; serverTiming: string }> {
    this.requests++;
    const res = await this.pool
      .request({
        method,
        path,
        body,
        headers: {
          ...this.headers,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...headers,
        },
      })
      .catch((error: unknown) => this.stalled(error));
    const bytes = Buffer.from(
      await res.body.arrayBuffer().catch((error: unknown) => this.stalled(error)),
    );
    // undici does not inflate: a gzip answer (the trainer asks for one, as Python's requests does)
    // is inflated here, as the trainer's client would.
    const gzip = String(res.headers["content-encoding"] ?? "").includes("gzip");
    return {
      status: res.statusCode,
      text: (gzip ? gunzipSync(bytes) : bytes).toString("utf8"),
      serverTiming: String(res.headers["server-timing"] ?? ""),
    };
  }

  async get(path: string, headers: Record<string, string> = {}) {
    const res = await this.request("GET", path, undefined, headers);
    if (res.status >= 400)
      throw new Error(`GET ${path} → ${res.status}: ${res.text.slice(0, 300)}`);
    return res;
  }

  /**
   * POSTs as an env client does: a failed connection is retried (the body's hash makes a retry of
   * a stored group a duplicate, so exactly-once still holds); an HTTP error fails the run.
   */
  async post(path: string, body: Body, headers: Record<string, string> = {}): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      let res: { status: number; text: string };
      try {
        res = await this.request("POST", path, body, headers);
      } catch (error) {
        if (attempt >= 3 || error instanceof ServerStalled) throw error;
        this.retries++;
        await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
        continue;
      }
      if (res.status >= 400) {
        throw new Error(`POST ${path} → ${res.status}: ${res.text.slice(0, 300)}`);
      }
      return res.text;
    }
  }

  private stalled(error: unknown): never {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === "string" && STALL_CODES.has(code)) {
      throw new ServerStalled(`the server sent nothing for ${this.stallMs / 1000} s (${code})`);
    }
    throw error;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export function median(values: number[]): number {
  return percentile(values, 50);
}
