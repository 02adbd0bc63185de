import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../context";
import { Timings } from "../timings";
import { setResponseHeader } from "./response-headers";

/**
 * Request id (echoed if the client sent one), Server-Timing, and one structured log line per
 * request that failed or addressed a batch, except a pull that found none and changed nothing
 * (`quietPoll`): a trainer polls many times a second while it waits, and a line per poll costs
 * CPU and log volume (billed per line on Workers Logs) and says nothing /stats does not.
 */
export const requestContext: MiddlewareHandler<AppEnv> = async (c, next) => {
  const incoming = c.req.header("x-request-id");
  const requestId = incoming && /^[\w.-]{1,100}$/.test(incoming) ? incoming : crypto.randomUUID();
  c.set("requestId", requestId);
  const timings = new Timings();
  c.set("timings", timings);
  const started = Date.now();
  await next();
  setResponseHeader(c, "x-request-id", requestId);
  const serverTiming = timings.header();
  if (serverTiming) setResponseHeader(c, "Server-Timing", serverTiming);
  if (c.res.status >= 400 || (c.req.path.includes("batch") && !c.get("quietPoll"))) {
    console.log(
      JSON.stringify({
        level: c.res.status >= 500 ? "error" : "info",
        msg: "request",
        request_id: requestId,
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        ms: Date.now() - started,
      }),
    );
  }
};
