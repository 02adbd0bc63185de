/**
 * The host's reading of the Python child's answer: lines split anywhere across chunks, a line
 * past the cap stops the reading, and an answer that is not well-formed JSON of the right shape
 * (or carries more files than the caps) is a `runtime` failure, never an exception.
 */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { SANDBOX_COLLECT_MAX_CHARS } from "../../../src/core/wire/sandbox-schemas";
import { BoundedLineReader, resultFromAnswer } from "../../../src/sandbox/node/child-protocol";

describe("BoundedLineReader", () => {
  it("joins a line written in pieces and splits lines written together", async () => {
    const stream = new PassThrough();
    const reader = new BoundedLineReader(stream, 1024);
    stream.write('{"ready":');
    stream.write("true}\nsecond\nthi");
    stream.end("rd\n");
    expect(await reader.next()).toEqual({ kind: "line", line: '{"ready":true}' });
    expect(await reader.next()).toEqual({ kind: "line", line: "second" });
    expect(await reader.next()).toEqual({ kind: "line", line: "third" });
    expect(await reader.next()).toEqual({ kind: "end" });
  });

  it("stops at a line longer than the cap instead of buffering it", async () => {
    const stream = new PassThrough();
    const reader = new BoundedLineReader(stream, 100);
    const pending = reader.next();
    for (let i = 0; i < 10; i++) stream.write("x".repeat(30));
    expect(await pending).toMatchObject({ kind: "too-long" });
    expect(await reader.next()).toEqual({ kind: "end" });
  });
});

describe("resultFromAnswer", () => {
  it("passes a well-formed answer through", () => {
    const line = JSON.stringify({
      stdout: "42\n",
      stderr: "",
      error: null,
      files: { "a.txt": "x" },
    });
    expect(resultFromAnswer(line, 12.4)).toEqual({
      ok: true,
      stdout: "42\n",
      stderr: "",
      value: null,
      error: null,
      wall_ms: 12,
      files: { "a.txt": "x" },
    });
  });

  it("turns a cut-off, foreign or oversized answer into a runtime failure", () => {
    const cutOff = JSON.stringify({
      stdout: "",
      stderr: "",
      error: null,
      files: { a: "x".repeat(5000) },
    });
    const wrongShape = JSON.stringify({ stdout: 5, files: "no" });
    const tooMuch = JSON.stringify({
      stdout: "",
      stderr: "",
      error: null,
      files: { a: "y".repeat(SANDBOX_COLLECT_MAX_CHARS + 1) },
    });
    for (const line of [cutOff.slice(0, 3000), wrongShape, tooMuch, "", "null"]) {
      const result = resultFromAnswer(line, 1);
      expect(result.ok).toBe(false);
      expect(result.error?.kind).toBe("runtime");
      expect(result.error?.message).toMatch(/the sandbox process sent .*; the run was stopped/);
    }
  });
});
