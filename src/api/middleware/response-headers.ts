/**
 * Headers set on a response after its handler returned. Hono's `c.header()` then builds a new
 * Response for each call (and `c.res = …` copies every header into yet another), which every
 * request paid several times over in the middleware chain; this sets them in place. Responses
 * fetched from bindings (the dashboard's assets, a proxied upstream) have immutable headers:
 * those still go through `c.header()`, which copies the response first.
 */
import type { Context } from "hono";

export function setResponseHeader(
  c: Context,
  name: string,
  value: string,
  options?: { append: boolean },
): void {
  try {
    if (options?.append) c.res.headers.append(name, value);
    else c.res.headers.set(name, value);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    c.header(name, value, options);
  }
}

/**
 * Replaces the response without Hono copying the old one's headers into a new instance first
 * (`next` already carries the headers it should: it was built from the old response).
 */
export function replaceResponse(c: Context, next: Response): void {
  c.res = undefined;
  c.res = next;
}
