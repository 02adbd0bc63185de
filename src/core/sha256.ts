/**
 * SHA-256 as lowercase hex, computed synchronously (node:crypto, which workerd provides under
 * nodejs_compat): hashing a request body this way costs a fraction of `crypto.subtle.digest`'s
 * round trip through a promise, on the ingest hot path.
 */
import { createHash } from "node:crypto";

export function sha256Hex(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}
