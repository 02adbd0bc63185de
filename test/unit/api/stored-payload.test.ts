import { describe, expect, it } from "vitest";
import { canonicalPayloadOf } from "../../../src/api/ingest-item";
import { deflatePiece, inflatePiece } from "../../../src/core/codecs/gzip-pieces";
import { canonicalGroupJson } from "../../../src/core/wire/canonical-group";
import type { ScoredDataInput } from "../../../src/core/wire/schemas";

function group(tokens: number, logprobs: boolean): ScoredDataInput {
  const rows = Array.from({ length: 4 }, (_, s) =>
    Array.from({ length: tokens }, (_, i) => (i < tokens / 4 ? i : s * 1000 + i)),
  );
  return {
    tokens: rows,
    masks: rows.map((r) => r.map((t, i) => (i < tokens / 4 ? -100 : t))),
    scores: [1, 0, 0.5, 1],
    inference_logprobs: logprobs
      ? rows.map((r, s) => r.map((_, i) => (i < tokens / 4 ? 1 : -((i * 7919 + s) % 997) / 991)))
      : null,
    env_id: 3,
  } as ScoredDataInput;
}

describe("a group's stored form", () => {
  it("keeps a small group as its canonical JSON", () => {
    const stored = canonicalPayloadOf(group(8, true));
    expect(stored.encoding).toBe("canonical");
    expect(stored.inline).toBe(canonicalGroupJson(group(8, true), 3));
  });

  it("compresses a large group, float rows apart, into one piece of exactly its canonical JSON", () => {
    for (const logprobs of [true, false]) {
      const g = group(2048, logprobs);
      const json = canonicalGroupJson(g, 3);
      const stored = canonicalPayloadOf(g);
      expect(stored.encoding).toBe("deflate");
      expect(new TextDecoder().decode(inflatePiece(stored.payload))).toBe(json);
      expect(stored.raw?.length).toBe(new TextEncoder().encode(json).byteLength);
      if (stored.inline !== null) {
        expect(new Uint8Array(Buffer.from(stored.inline, "base64"))).toEqual(stored.payload);
      }
    }
  });

  it("keeps LZ77 for float rows that are mostly a prompt's 1.0s", () => {
    const g = group(2100, false);
    g.inference_logprobs = g.tokens.map((row, s) =>
      row.map((_, i) => (i < 2000 ? 1 : -((i * 7919 + s) % 997) / 991)),
    );
    const lz77 = deflatePiece(new TextEncoder().encode(canonicalGroupJson(g, 3)));
    expect(canonicalPayloadOf(g).payload.byteLength).toBeLessThanOrEqual(lz77.data.byteLength);
  });
});
