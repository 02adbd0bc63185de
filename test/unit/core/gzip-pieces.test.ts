import { crc32, gunzipSync, inflateRawSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { concatBytes } from "../../../src/core/codecs/bytes";
import {
  crc32Combine,
  deflatePiece,
  GzipAssembler,
  inflatePiece,
  joinPieces,
} from "../../../src/core/codecs/gzip-pieces";

const encoder = new TextEncoder();

describe("gzip pieces", () => {
  it("combines CRC-32s as if computed over the concatenation", () => {
    const a = encoder.encode('{"batch":[');
    const b = encoder.encode("[1,2,3],".repeat(10_000));
    expect(crc32Combine(crc32(a), crc32(b), b.byteLength)).toBe(crc32(concatBytes([a, b])));
    expect(crc32Combine(crc32(a), crc32(new Uint8Array(0)), 0)).toBe(crc32(a));
    const one = encoder.encode("x");
    expect(crc32Combine(crc32(b), crc32(one), 1)).toBe(crc32(concatBytes([b, one])));
  });

  it("assembles stored pieces and separators into one gzip member any decoder reads", () => {
    const groups = [1, 2, 3].map((g) =>
      encoder.encode(JSON.stringify({ tokens: Array.from({ length: 3000 }, (_, i) => i * g) })),
    );
    const stored = groups.map((raw) => deflatePiece(raw));
    const gz = new GzipAssembler();
    const parts = [...gz.raw(encoder.encode('{"batch":['))];
    stored.forEach((piece, i) => {
      if (i > 0) parts.push(...gz.raw(encoder.encode(",")));
      parts.push(...gz.piece(piece));
    });
    parts.push(...gz.raw(encoder.encode("]}")), ...gz.end());
    const body = concatBytes(parts);
    expect(new TextDecoder().decode(inflatePiece(stored[1]!.data))).toBe(
      new TextDecoder().decode(groups[1]),
    );
    const expected = `{"batch":[${groups.map((g) => new TextDecoder().decode(g)).join(",")}]}`;
    expect(new TextDecoder().decode(gunzipSync(body))).toBe(expected);
    // One member: the deflate stream ends right before the 8-byte trailer.
    const inner = inflateRawSync(body.subarray(10, body.byteLength - 8));
    expect(new TextDecoder().decode(inner)).toBe(expected);
  });

  it("joins pieces compressed with different strategies into one piece", () => {
    const texts = [
      '{"tokens":',
      "[1,2,3],".repeat(2000),
      "",
      "[-0.1234567,0.5],".repeat(3000),
      "}",
    ];
    const pieces = texts.map((t, i) => deflatePiece(encoder.encode(t), i % 2 === 1));
    const joined = joinPieces(pieces);
    const whole = encoder.encode(texts.join(""));
    expect(new TextDecoder().decode(inflatePiece(joined.data))).toBe(texts.join(""));
    expect(joined.length).toBe(whole.byteLength);
    expect(joined.crc32).toBe(crc32(whole));
    // Huffman coding alone still compresses digits (about 4 bits a character).
    expect(pieces[3]!.data.byteLength).toBeLessThan(texts[3]!.length * 0.6);
    expect(joinPieces([pieces[1]!])).toBe(pieces[1]);
  });

  it("writes a valid empty stream", () => {
    const gz = new GzipAssembler();
    expect(gunzipSync(concatBytes(gz.end())).byteLength).toBe(0);
  });
});
