import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { gunzipBounded, InflateLimitError } from "../../../src/core/codecs/gzip";

const text = "tokens ".repeat(10_000);
const packed = gzipSync(Buffer.from(text));

describe("gunzipBounded", () => {
  it("inflates one member, or several back to back", () => {
    expect(new TextDecoder().decode(gunzipBounded(packed))).toBe(text);
    const twice = gunzipBounded(Buffer.concat([packed, packed]));
    expect(twice.byteLength).toBe(2 * text.length);
  });

  it("allows exactly maxBytes and refuses one byte more with InflateLimitError", () => {
    expect(gunzipBounded(packed, text.length).byteLength).toBe(text.length);
    expect(() => gunzipBounded(packed, text.length - 1)).toThrow(InflateLimitError);
    const bomb = gzipSync(Buffer.alloc(5_000_000));
    expect(() => gunzipBounded(bomb, 1_000_000)).toThrow("inflated data exceeds 1000000 bytes");
    // Limits above what workerd's zlib accepts (128 MiB) are clamped, not an error for small data.
    expect(gunzipBounded(packed, 2 ** 30).byteLength).toBe(text.length);
  });

  it("rejects data that is not complete gzip, with zlib's error rather than a limit error", () => {
    for (const bad of [
      new TextEncoder().encode("not gzip at all"),
      packed.subarray(0, packed.length - 12),
      Buffer.concat([packed, Buffer.from([1, 2, 3])]),
      new Uint8Array(0),
    ]) {
      expect(() => gunzipBounded(bad, 1_000_000)).toThrow();
      try {
        gunzipBounded(bad, 1_000_000);
      } catch (error) {
        expect(error).not.toBeInstanceOf(InflateLimitError);
      }
    }
  });
});
