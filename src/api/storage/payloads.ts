/**
 * Group payload bytes in R2. A payload is the group's JSON exactly as the env sent it (gzip
 * bodies are kept compressed): ingest never re-serialises, and delivery canonicalises.
 */
export function payloadKey(run: string): string {
  return `runs/${run}/groups/${crypto.randomUUID()}`;
}

export async function putPayload(
  bucket: R2Bucket,
  key: string,
  bytes: Uint8Array<ArrayBuffer>,
  encoding: "identity" | "gzip",
): Promise<void> {
  await bucket.put(key, bytes, {
    httpMetadata: { contentType: "application/json", contentEncoding: encoding },
  });
}

/** Returns the payload's JSON text bytes (inflated if stored compressed). */
export async function getPayloadBytes(
  bucket: R2Bucket,
  key: string,
  encoding: "identity" | "gzip",
): Promise<Uint8Array> {
  const object = await bucket.get(key);
  if (!object) throw new Error(`payload ${key} is missing from R2`);
  if (encoding === "identity") return new Uint8Array(await object.arrayBuffer());
  const inflated = object.body.pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(inflated).arrayBuffer());
}

export async function deletePayloadPrefix(bucket: R2Bucket, prefix: string): Promise<void> {
  let cursor: string | undefined;
  do {
    const listing = await bucket.list({ prefix, cursor, limit: 1000 });
    const keys = listing.objects.map((o) => o.key);
    if (keys.length > 0) await bucket.delete(keys);
    cursor = listing.truncated ? listing.cursor : undefined;
  } while (cursor);
}
