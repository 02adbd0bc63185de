/** QuickJS in throwaway threads: results, output, files, and the time and memory limits. */
import { afterAll, describe, expect, it } from "vitest";
import { QuickJsThreadPool } from "../../../src/sandbox/node/quickjs-pool";

const pool = new QuickJsThreadPool({ size: 1 });
const js = (code: string, extra: { timeout_ms?: number; memory_mb?: number } = {}) =>
  pool.run({ language: "javascript", code, ...extra });

afterAll(() => pool.close());

describe("QuickJsThreadPool", () => {
  it("returns the function body's value and console output", async () => {
    const result = await js("console.log('hi', { a: 1 }); return [1, 2].map((x) => x * 2);");
    expect(result).toMatchObject({ ok: true, stdout: 'hi {"a":1}\n', value: "[2,4]", error: null });
  });

  it("gives every run a fresh runtime, also on a reused thread", async () => {
    expect((await js("globalThis.leak = 1; return 1")).ok).toBe(true);
    expect((await js("return typeof leak")).value).toBe('"undefined"');
  });

  it("has no host capabilities", async () => {
    const result = await js(
      "return [typeof fetch, typeof process, typeof require, typeof setTimeout].join(',')",
    );
    expect(result.value).toBe('"undefined,undefined,undefined,undefined"');
  });

  it("reads and writes scratch files through `files`", async () => {
    const result = await pool.run({
      language: "javascript",
      code: "files['out.txt'] = files['in.txt'].toUpperCase(); return Object.keys(files).length",
      files: { "in.txt": "abc" },
      collect_files: true,
    });
    expect(result.files).toEqual({ "in.txt": "abc", "out.txt": "ABC" });
    expect(result.value).toBe("2");
  });

  it("stops an endless loop at the timeout", async () => {
    const started = performance.now();
    const result = await js("while (true) {}", { timeout_ms: 500 });
    expect(result.error?.kind).toBe("timeout");
    expect(performance.now() - started).toBeLessThan(1500);
  });

  it("stops unbounded allocation at the memory limit", async () => {
    const result = await js(
      "const a = []; const s = 'x'.repeat(1 << 20); while (true) a.push(s + a.length);",
      { memory_mb: 16, timeout_ms: 20_000 },
    );
    expect(result.error).toEqual({ kind: "memory", message: "InternalError: out of memory" });
  });

  it("stops allocation that thrashes the collector at the deadline all the same", async () => {
    const started = performance.now();
    const result = await js("const a = []; while (true) a.push(new Array(1e5).fill(1));", {
      memory_mb: 32,
      timeout_ms: 800,
    });
    expect(["timeout", "memory"]).toContain(result.error?.kind);
    expect(performance.now() - started).toBeLessThan(1800);
  });

  it("reports syntax errors and throws as runtime errors", async () => {
    expect((await js("return (")).error?.kind).toBe("runtime");
    const thrown = await js("throw new TypeError('bad')");
    expect(thrown.error).toEqual({ kind: "runtime", message: "TypeError: bad" });
  });
});
