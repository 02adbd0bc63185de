/**
 * Reading a request's body, path and query the way every route does, with the schemas the routes
 * declare in /openapi.json, so what is documented is what is checked.
 */
import { z } from "zod";
import { summarizeDetails, toValidationDetails } from "../core/wire/validation";
import { type BodyLimits, parseJson, readBody } from "./body";
import type { AppContext } from "./context";
import { ApiError } from "./errors";
import { settingsOf } from "./settings";

/**
 * Whether the client takes gzip. Cloudflare's edge (and Miniflare's imitation of it) replaces the
 * request's Accept-Encoding with "br, gzip" and keeps the client's own value in
 * `request.cf.clientAcceptEncoding`: that value is what the client can decode.
 */
export function acceptsGzip(request: Request): boolean {
  const cf = request.cf as { clientAcceptEncoding?: unknown } | undefined;
  const value =
    typeof cf?.clientAcceptEncoding === "string"
      ? cf.clientAcceptEncoding
      : (request.headers.get("accept-encoding") ?? "");
  return /\bgzip\b/i.test(value);
}

export function bodyLimits(c: AppContext): BodyLimits {
  const settings = settingsOf(c.env);
  return {
    maxBodyBytes: settings.MAX_BODY_BYTES,
    maxInflatedBytes: settings.MAX_INFLATED_BYTES,
    idleTimeoutMs: settings.BODY_IDLE_TIMEOUT_MS,
  };
}

/** The limits of a JSON body that is not a submission (MAX_JSON_BODY_BYTES). */
export function jsonBodyLimits(c: AppContext): BodyLimits {
  const limits = bodyLimits(c);
  const max = settingsOf(c.env).MAX_JSON_BODY_BYTES;
  return {
    ...limits,
    maxBodyBytes: Math.min(limits.maxBodyBytes, max),
    maxInflatedBytes: Math.min(limits.maxInflatedBytes, max),
    bodySetting: max < limits.maxBodyBytes ? "MAX_JSON_BODY_BYTES" : "MAX_BODY_BYTES",
    inflatedSetting: max < limits.maxInflatedBytes ? "MAX_JSON_BODY_BYTES" : "MAX_INFLATED_BYTES",
  };
}

/** Reads (gzip too) and validates a JSON body; with `optional`, an empty body counts as `{}`. */
export async function jsonBody<T extends z.ZodType>(
  c: AppContext,
  schema: T,
  options: { optional?: boolean } = {},
): Promise<z.infer<T>> {
  const { bytes } = await readBody(c.req.raw, jsonBodyLimits(c));
  const json = options.optional && bytes.byteLength === 0 ? {} : parseJson(bytes);
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const details = toValidationDetails(parsed.error, json);
    throw new ApiError("VALIDATION_FAILED", summarizeDetails(details), details);
  }
  return parsed.data;
}

/** A JSON response from text that is already JSON (stored or streamed payloads). */
export function rawJson(body: string, status = 200): Response {
  return new Response(body, { status, headers: { "content-type": "application/json" } });
}

/** An integer path parameter (group id, env id, step). */
export const intPathParam = z
  .string()
  .regex(/^\d{1,15}$/)
  .describe("A non-negative integer.");

export function intParam(c: AppContext, name: string): number {
  const value = c.req.param(name) ?? "";
  if (!intPathParam.safeParse(value).success) {
    throw new ApiError("BAD_REQUEST", `path parameter '${name}' must be a non-negative integer`);
  }
  return Number(value);
}

/** A numeric query parameter; absent or empty means "not given". */
export const numberQuery = z
  .string()
  .optional()
  .describe("A number; absent or empty means not given.");

export function queryNumber(c: AppContext, name: string): number | undefined {
  const value = c.req.query(name);
  if (value === undefined || value === "") return undefined;
  const n = Number(value);
  if (!Number.isFinite(n))
    throw new ApiError("BAD_REQUEST", `query parameter '${name}' must be a number`);
  return n;
}
