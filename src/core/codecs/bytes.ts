/** Byte arrays joined end to end into one new array. */
export function concatBytes(pieces: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(pieces.reduce((sum, p) => sum + p.byteLength, 0));
  let offset = 0;
  for (const p of pieces) {
    out.set(p, offset);
    offset += p.byteLength;
  }
  return out;
}
