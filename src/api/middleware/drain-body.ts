/**
 * Keeps keep-alive connections usable after a request is answered without its body being read
 * (401 before the body, 413 from Content-Length, 404, …): the body is read and dropped first,
 * unless it pauses for DRAIN_IDLE_MS (a stalled client gets its answer and loses the connection
 * rather than holding the answer back for the whole body idle limit).
 */
import type { MiddlewareHandler } from "hono";
import { discardUnreadBody } from "../body";
import type { AppEnv } from "../context";
import { bodyLimits } from "../request";

/** Refused bodies up to this size are drained even when MAX_BODY_BYTES is smaller. */
const DRAIN_MIN_BYTES = 16 * 1024 * 1024;
/** A refused body that pauses this long is left unread (at most the body idle limit). */
const DRAIN_IDLE_MS = 2000;

export const drainUnreadBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const limits = bodyLimits(c);
  const bound = Math.max(DRAIN_MIN_BYTES, limits.maxBodyBytes);
  await discardUnreadBody(c.req.raw, bound, Math.min(DRAIN_IDLE_MS, limits.idleTimeoutMs));
};
