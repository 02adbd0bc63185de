/**
 * The deployed sandbox path inside workerd: JavaScript in a Dynamic Worker with no outbound
 * network, served by the sandbox service Worker, reached through the service client. Only code
 * that ends runs here: workerd enforces no CPU limit locally (docs/SANDBOX.md).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getSandbox, setSandboxProvider } from "../../src/env-workers/sandbox/registry";
import { handleSandboxRequest, SandboxServiceClient } from "../../src/env-workers/sandbox/service";
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
