/**
 * Reading a submission's body (scored groups, replay imports) so that no client can hold up
 * another: refused before a byte is read when its declared length is over MAX_BODY_BYTES (413) or
 * over what the token's bytes-per-day quota has left (429); read without reserving anything, so a
 * stalled upload holds only the bytes that arrived, and answered 408 when it stops arriving; then
 * charged to the quota by what arrived. The isolate's memory budget (src/api/memory-budget.ts)
 * is taken afterwards, for parsing, by the body's real size.
 */
import { declaredLength, isGzipEncoded, readRawBody, refuseDeclaredLength } from "./body";
import type { AppContext } from "./context";
import { chargeBytes, refuseDeclaredOverQuota } from "./middleware/quotas";
import { bodyLimits } from "./request";

export interface SubmissionBody {
  /** The body as received (gzip when `gzip`). */
  raw: Uint8Array<ArrayBuffer>;
  gzip: boolean;
}

/** 413 / 429 from the declared length, before a byte of the body is read. */
export async function refuseBeforeReading(c: AppContext): Promise<void> {
  refuseDeclaredLength(c.req.raw, bodyLimits(c));
  const declared = declaredLength(c.req.raw);
  if (declared !== null) await refuseDeclaredOverQuota(c, declared);
}

export async function readSubmissionBody(c: AppContext): Promise<SubmissionBody> {
  await refuseBeforeReading(c);
  const raw = await readRawBody(c.req.raw, bodyLimits(c));
  await chargeBytes(c, raw.byteLength);
  return { raw, gzip: isGzipEncoded(c.req.raw) && raw.byteLength > 0 };
}
