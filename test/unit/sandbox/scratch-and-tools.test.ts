/** The per-episode scratch filesystem, the file_ops tool, tool whitelists and the service wire. */
import { describe, expect, it } from "vitest";
import { getEnvDefinition } from "../../../src/envs/index";
import { fileOpsTool } from "../../../src/envs/tools/sandbox-tools";
import { allowedTools, standardTools, Toolbox } from "../../../src/envs/tools/toolbox";
import { getSandbox, setSandboxProvider } from "../../../src/sandbox/registry";
import { SandboxRouter } from "../../../src/sandbox/router";
import { ScratchFs } from "../../../src/sandbox/scratch-fs";
import { handleSandboxRequest, SandboxServiceClient } from "../../../src/sandbox/service";
import type { Sandbox, SandboxRunInput } from "../../../src/sandbox/types";
import { CharTokenizer, FakeInference } from "../envs/fakes";

describe("ScratchFs", () => {
  it("keeps files within the count, per-file and total caps", () => {
    const fs = new ScratchFs({ maxFiles: 2, maxFileChars: 10, maxTotalChars: 15 });
    fs.write("a.txt", "0123456789");
    expect(() => fs.write("b.txt", "01234567890")).toThrow(/limit is 10/);
    expect(() => fs.write("b.txt", "0123456")).toThrow(/would hold 17 chars/);
    fs.write("b.txt", "01234");
    expect(() => fs.write("c.txt", "x")).toThrow(/at most 2 files/);
    fs.write("a.txt", "short"); // replacing a file frees its share
    expect(fs.totalChars()).toBe(10);
    expect(fs.list()).toEqual(["a.txt", "b.txt"]);
  });

  it("refuses paths that could leave the scratch space", () => {
    const fs = new ScratchFs();
    for (const bad of ["../etc/passwd", "/etc/passwd", "a/../../b", "a b", ""]) {
      expect(() => fs.write(bad, "x"), bad).toThrow(/bad path/);
    }
    fs.write("./dir/ok.txt", "x");
    expect(fs.read("dir/ok.txt")).toBe("x");
  });

  it("takes a run's files, dropping the ones over the caps", () => {
    const fs = new ScratchFs({ maxFileChars: 4 });
    fs.write("old.txt", "x");
    expect(fs.replaceWith({ "new.txt": "abc", "big.txt": "abcdef" })).toEqual(["big.txt"]);
    expect(fs.snapshot()).toEqual({ "new.txt": "abc" });
  });
});

describe("file_ops and tool whitelists", () => {
  it("lists, writes, reads and deletes, with errors the model can act on", async () => {
    const scratch = new ScratchFs({ maxFileChars: 8 });
    const toolbox = new Toolbox({ file_ops: fileOpsTool(scratch) });
    expect(
      (await toolbox.call("file_ops", { op: "write", path: "n.txt", content: "42" })).result,
    ).toBe("ok");
    expect((await toolbox.call("file_ops", { op: "read", path: "n.txt" })).result).toBe("42");
    expect((await toolbox.call("file_ops", { op: "list" })).result).toBe('["n.txt"]');
    const tooBig = await toolbox.call("file_ops", {
      op: "write",
      path: "m.txt",
      content: "123456789",
    });
    expect(tooBig.error).toMatch(/limit is 8/);
    expect((await toolbox.call("file_ops", { op: "delete", path: "n.txt" })).result).toBe(
      "deleted",
    );
    expect((await toolbox.call("file_ops", { op: "read", path: "n.txt" })).error).toMatch(
      /no file/,
    );
    expect((await toolbox.call("file_ops", { op: "chmod" })).error).toMatch(/'op' must be/);
  });

  it("offers only the whitelisted tools", async () => {
    const all = { ...standardTools(new Map()), file_ops: fileOpsTool(new ScratchFs()) };
    const toolbox = new Toolbox(allowedTools(all, ["calculator"]));
    expect(toolbox.definitions().map((d) => d.function.name)).toEqual(["calculator"]);
    expect((await toolbox.call("file_ops", { op: "list" })).error).toMatch(/not allowed/);
    expect(() => allowedTools(all, ["shell"])).toThrow(/unknown tool 'shell'/);
  });

  it("tool_use validates its whitelist in config", () => {
    const tokenizer = new CharTokenizer();
    const create = (tools: unknown) =>
      getEnvDefinition("tool_use").create({ tools }, new FakeInference(tokenizer), tokenizer);
    expect(() => create(["calculator", "python_exec", "file_ops"])).not.toThrow();
    expect(() => create(["shell"])).toThrow(/tools/);
  });
});

describe("the sandbox service", () => {
  const echo: Sandbox = {
    async run(input: SandboxRunInput) {
      return { ok: true, stdout: input.code, stderr: "", value: null, error: null, wall_ms: 1 };
    },
  };
  const service = {
    fetch: (input: Request | string, init?: RequestInit) =>
      handleSandboxRequest(echo, new Request(input, init)),
  };

  it("carries a run over a service binding and validates the request", async () => {
    const client = new SandboxServiceClient(service);
    expect(await client.run({ language: "python", code: "print(1)" })).toMatchObject({
      ok: true,
      stdout: "print(1)",
    });
    const bad = await service.fetch("https://sandbox/run", {
      method: "POST",
      body: JSON.stringify({ language: "ruby", code: "" }),
    });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: string }).detail).toMatch(/^language:/);
    const limits = await client.run({ language: "python", code: "", timeout_ms: 10 ** 9 });
    expect(limits.error?.kind).toBe("unavailable");
    expect(limits.error?.message).toMatch(/422.*timeout_ms/);
    expect((await service.fetch("https://sandbox/other")).status).toBe(404);
  });

  it("turns an unreachable service into an 'unavailable' result, not a throw", async () => {
    const client = new SandboxServiceClient("http://127.0.0.1:9");
    const result = await client.run({ language: "python", code: "pass" });
    expect(result.error?.kind).toBe("unavailable");
  });

  it("routes by language and says which engines exist", async () => {
    const router = new SandboxRouter({ python: echo });
    expect((await router.run({ language: "javascript", code: "1" })).error?.message).toMatch(
      /no javascript engine here \(have: python\)/,
    );
  });

  it("getSandbox names the fix when no sandbox is configured", async () => {
    setSandboxProvider(null);
    await expect(getSandbox()).rejects.toThrow(/setSandboxProvider/);
    setSandboxProvider(() => echo);
    expect(await getSandbox()).toBe(echo);
    setSandboxProvider(null);
  });
});
