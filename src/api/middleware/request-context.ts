import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../context";
import { Timings } from "../timings";

/** Request id (echoed if the client sent one) and one structured log line per request. */
export const requestContext: MiddlewareHandler<AppEnv> = async (c, next) => {
  const incoming = c.req.header("x-request-id");
  const requestId = incoming && /^[\w.-]{1,100}$/.test(incoming) ? incoming : crypto.randomUUID();
  c.set("requestId", requestId);
  const timings = new Timings();
  c.set("timings", timings);
  const started = Date.now();
  await next();
  c.header("x-request-id", requestId);
  const serverTiming = timings.header();
  if (serverTiming) c.header("Server-Timing", serverTiming);
  if (c.res.status >= 400 || c.req.path.includes("batch")) {
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
