/**
 * Atropos answers /register with `uuid.uuid4().int`: a bare 128-bit JSON integer. JS numbers
 * cannot hold it, so it is produced as decimal digits and spliced into the JSON text.
 */
export function randomUuid128Digits(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  // RFC 4122 version 4 bits, as Python's uuid4 sets them.
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  let value = 0n;
  for (const b of bytes) value = (value << 8n) | BigInt(b);
  return value.toString(10);
}

export function registerResponseJson(uuidDigits: string): string {
  if (!/^\d+$/.test(uuidDigits)) throw new Error("uuid must be decimal digits");
  return `{"uuid":${uuidDigits}}`;
}
