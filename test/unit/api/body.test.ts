/**
 * Bounded body reading (src/api/body.ts): a body complete by its declared length is read without
 * waiting for its stream to end; one that stops short of it ends with 408 after the idle limit.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { collect } from "../../../src/api/body";
import { ApiError } from "../../../src/api/errors";

/** A byte stream that delivers `text` and then neither sends more nor ends. */
function openStream(text: string): ReadableStream<Uint8Array> {
  return new ReadableStream({
    type: "bytes",
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text));
    },
  });
}

afterEach(() => {
  vi.useRealTimers();
});

describe("collect", () => {
  it("returns a body once its declared length has arrived, without waiting for the end", async () => {
    const bytes = await collect(openStream('{"a":1}'), 1024, 60_000, "request body", undefined, 7);
    expect(new TextDecoder().decode(bytes)).toBe('{"a":1}');
  });

  it("answers 408 when the declared length never arrives", async () => {
    vi.useFakeTimers();
    const read = collect(openStream('{"a"'), 1024, 1_000, "request body", undefined, 7);
    const settled = read.then(
      () => null,
      (error: unknown) => error,
    );
    await vi.advanceTimersByTimeAsync(1_000);
    const error = await settled;
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).message).toMatch(/stopped arriving/);
  });

  it("reads on past a declared length the stream overruns, and refuses it past the limit (413)", async () => {
    const read = collect(openStream("x".repeat(100)), 10, 60_000, "request body", undefined, 5);
    await expect(read).rejects.toThrow(/exceeds the limit of 10 bytes/);
  });
});
