/**
 * The error body every route answers with: its code, message and pydantic-style 422 details.
 */
import { z } from "zod";

export const errorCodeSchema = z.enum([
  "BAD_REQUEST",
  "INVALID_GZIP",
  "VALIDATION_FAILED",
  "UNAUTHORIZED",
  "FORBIDDEN",
  "NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "CONFLICT",
  "PAYLOAD_TOO_LARGE",
  "REQUEST_TIMEOUT",
  "CLIENT_CLOSED",
  "UNSUPPORTED_MEDIA_TYPE",
  "TOO_MANY_REQUESTS",
  "UNAVAILABLE",
  "INTERNAL",
]);
export type ErrorCode = z.infer<typeof errorCodeSchema>;

/** One FastAPI/pydantic-style 422 `detail` entry. */
export const validationDetailSchema = z.object({
  type: z.string(),
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
  input: z.unknown().optional(),
});
export type ValidationDetail = z.infer<typeof validationDetailSchema>;

export const errorBodySchema = z
  .object({
    detail: z
      .union([z.string(), z.array(validationDetailSchema)])
      .describe("FastAPI's `detail`: the message, or for a 422 the list of invalid fields."),
    error: z.object({
      code: errorCodeSchema,
      message: z.string().describe("What went wrong and what to change."),
      request_id: z.string(),
    }),
  })
  .meta({ id: "Error" });
export type ErrorBody = z.infer<typeof errorBodySchema>;
