/**
 * What every backend shares: its server config and fetch, and the request context of each call
 * (abort signal, API key, and on a "no such route" 404 the `--server-type` to use instead).
 */
import type { ServerType } from "../../core/wire/server-config";
import { notFoundHint } from "./hints";
import { pathOf, postJson, type RequestContext } from "./http";
import type { BackendDeps, CallOptions } from "./types";

export abstract class BackendBase {
  abstract readonly serverType: ServerType;

  constructor(protected readonly deps: BackendDeps) {}

  /** The context of a call; with the route's `url`, a 404 names the server type to use. */
  protected context(options: CallOptions, url?: string): RequestContext {
    return {
      fetch: this.deps.fetch,
      signal: options.signal,
      apiKey: this.deps.config.api_key,
      ...(url ? { notFoundHint: notFoundHint(this.serverType, pathOf(url)) } : {}),
    };
  }

  /** POSTs `body` as JSON to `url` in the call's context; the parsed answer. */
  protected postTo(url: string, body: unknown, options: CallOptions): Promise<unknown> {
    return postJson(this.context(options, url), url, body);
  }
}
