/**
 * SHA-256 as lowercase hex, computed synchronously (node:crypto, which workerd provides under
 * nodejs_compat): hashing a request body this way costs a fraction of `crypto.subtle.digest`'s
 * round trip through a promise, on the ingest hot path.
 */
import { createHash } from "node:crypto";

export function sha256Hex(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}

/** SHA-256 of data fed in pieces (a body read chunk by chunk), as lowercase hex. */
export function sha256Hasher(): { update(data: Uint8Array): void; hex(): string } {
  const hash = createHash("sha256");
  return {
    update: (data) => {
      hash.update(data);
    },
    hex: () => hash.digest("hex"),
  };
}
