/**
 * The deployed sandbox path inside workerd: JavaScript in a Dynamic Worker with no outbound
 * network, served by the sandbox service Worker, reached through the service client. Only code
 * that ends runs here: workerd enforces no CPU limit locally (docs/SANDBOX.md).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  SANDBOX_COLLECT_MAX_CHARS,
  SANDBOX_OUTPUT_CAP_CHARS,
} from "../../src/core/wire/sandbox-schemas";
import { getSandbox, setSandboxProvider } from "../../src/sandbox/registry";
import { handleSandboxRequest, SandboxServiceClient } from "../../src/sandbox/service";
import { createSandboxService } from "../../src/worker/sandbox/service-worker";
import { WorkerLoaderSandbox } from "../../src/worker/sandbox/worker-loader";
import worker from "./test-worker";

const sandbox = new WorkerLoaderSandbox(env.TEST_LOADER);

describe("WorkerLoaderSandbox", () => {
  it("runs a function body with console output, a value and the scratch files", async () => {
    const result = await sandbox.run({
      language: "javascript",
      code: "console.log('hi', { a: 1 }); files['out.txt'] = files['in.txt'] + '!'; return 6 * 7;",
      files: { "in.txt": "abc" },
      collect_files: true,
    });
    expect(result).toMatchObject({
      ok: true,
      stdout: 'hi {"a":1}\n',
      value: "42",
      error: null,
      files: { "in.txt": "abc", "out.txt": "abc!" },
    });
  });

  it("blocks outbound network and reports thrown errors", async () => {
    const fetched = await sandbox.run({
      language: "javascript",
      code: "await fetch('http://127.0.0.1:9/'); return 'reached';",
    });
    expect(fetched.ok).toBe(false);
    expect(fetched.error?.kind).toBe("runtime");
    expect(fetched.error?.message).toMatch(/not permitted/);
    const thrown = await sandbox.run({ language: "javascript", code: "throw new TypeError('x')" });
    expect(thrown.error).toEqual({ kind: "runtime", message: "TypeError: x" });
    const python = await sandbox.run({ language: "python", code: "print(1)" });
    expect(python.error?.kind).toBe("unavailable");
  });

  it("cuts output, errors and collected files to the caps, and refuses an oversized value", async () => {
    const flood = await sandbox.run({
      language: "javascript",
      code: "String.prototype.slice = () => 'x'.repeat(1 << 22); const s = 'y'.repeat(1 << 20); for (let i = 0; i < 8; i++) { console.log(s); console.error(s); } for (let i = 0; i < 400; i++) files['f' + i] = s; return 1;",
      collect_files: true,
    });
    expect(flood.ok).toBe(true);
    expect([flood.stdout.length, flood.stderr.length < SANDBOX_OUTPUT_CAP_CHARS + 200]).toEqual([
      SANDBOX_OUTPUT_CAP_CHARS,
      true,
    ]);
    expect(flood.stderr.slice(-200)).toMatch(/\[sandbox\] collected files cut at 256 files/);
    const collected = Object.values(flood.files ?? {});
    expect(collected.reduce((n, text) => n + text.length, 0)).toBe(SANDBOX_COLLECT_MAX_CHARS);
    // The code shares the child module's scope: reaching its output buffer changes nothing.
    const reached = await sandbox.run({
      language: "javascript",
      code: "out.stdout = 'z'.repeat(1 << 22); return 1;",
    });
    expect(reached.stdout.length).toBe(SANDBOX_OUTPUT_CAP_CHARS);
    const value = await sandbox.run({
      language: "javascript",
      code: "return 'v'.repeat(4 << 20);",
    });
    expect(value.error?.message).toMatch(/more than the cap of 1048576/);
    const thrown = await sandbox.run({
      language: "javascript",
      code: "throw new Error('e'.repeat(1 << 20));",
    });
    expect(thrown.error?.message.length).toBe(4000);
  });

  it("is reachable as a service with the same interface", async () => {
    const service = createSandboxService(() => ({ javascript: sandbox }));
    const client = new SandboxServiceClient({
      fetch: (input, init) =>
        Promise.resolve(service.fetch!(new Request(input, init) as never, {}, {} as never)),
    });
    expect(
      await client.run({ language: "javascript", code: "return [1, 2].length" }),
    ).toMatchObject({
      ok: true,
      value: "2",
    });
    const python = await client.run({ language: "python", code: "print(1)" });
    expect(python.error?.message).toMatch(/no python engine here/);
  });
});

describe("env workers on Workers", () => {
  it("reach the SANDBOX service binding through getSandbox()", async () => {
    setSandboxProvider(null);
    const seen: string[] = [];
    const binding = {
      fetch: (input: Request | string, init?: RequestInit) => {
        const request = new Request(input, init);
        seen.push(new URL(request.url).pathname);
        return handleSandboxRequest(sandbox, request);
      },
    };
    const emptyBatch = { queue: "rollout-items", messages: [] } as unknown as MessageBatch;
    await worker.queue!(emptyBatch as never, { ...env, SANDBOX: binding } as never, {} as never);
    const result = await (await getSandbox()).run({ language: "javascript", code: "return 1 + 1" });
    expect(result).toMatchObject({ ok: true, value: "2" });
    expect(seen).toEqual(["/run"]);
    setSandboxProvider(null);
  });
});
