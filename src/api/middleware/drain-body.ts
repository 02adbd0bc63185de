/**
 * Keeps keep-alive connections usable after a request is answered without its body being read
 * (401 before the body, 413 from Content-Length, 404, …): the body is read and dropped first.
 */
import type { MiddlewareHandler } from "hono";
import { discardUnreadBody } from "../body";
import type { AppEnv } from "../context";
import { bodyLimits } from "../request";

/** Refused bodies up to this size are drained even when MAX_BODY_BYTES is smaller. */
const DRAIN_MIN_BYTES = 16 * 1024 * 1024;

export const drainUnreadBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const bound = Math.max(DRAIN_MIN_BYTES, bodyLimits(c).maxBodyBytes);
  await discardUnreadBody(c.req.raw, bound);
};
