/**
 * One error envelope for every failure: FastAPI's `detail` (what Atropos clients parse) plus a
 * machine-readable code, a human message that says what to fix, and the request id.
 */
import type { ErrorBody, ErrorCode, ValidationDetail } from "../core/wire/api-schemas";

export type { ErrorCode };

const STATUS: Record<ErrorCode, number> = {
  BAD_REQUEST: 400,
  INVALID_GZIP: 400,
  VALIDATION_FAILED: 422,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  REQUEST_TIMEOUT: 408,
  // nginx's "client closed request": the client went away mid-body; nobody reads the answer, and
  // it is the client's failure, never counted as the API's (5xx).
  CLIENT_CLOSED: 499,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  UNAVAILABLE: 503,
  INTERNAL: 500,
};

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ValidationDetail[],
    /** Response headers the error needs (Retry-After of a 429). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.status = STATUS[code];
  }
}

export function errorBody(error: ApiError, requestId: string): ErrorBody {
  return {
    detail: error.details ?? error.message,
    error: { code: error.code, message: error.message, request_id: requestId },
  };
}

/** Durable Object RPC drops custom error fields, so expected failures travel as values. */
export type RpcResult<T> = { ok: true; value: T } | { ok: false; code: ErrorCode; message: string };

export function rpcError(
  code: ErrorCode,
  message: string,
): { ok: false; code: ErrorCode; message: string } {
  return { ok: false, code, message };
}

export function unwrapRpc<T>(result: RpcResult<T>): T {
  if (!result.ok) throw new ApiError(result.code, result.message);
  return result.value;
}
