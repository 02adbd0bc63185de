/**
 * The sandbox under attack, in one code_exec run: answers that loop forever, allocate without
 * bound, read host files or connect to a loopback canary would each pass every hidden test if
 * the sandbox let them (the correct function follows the attack), so a score of 0 proves the
 * attack was stopped. They must finish within the timeout plus one second, the canary must see
 * no connection, and correct answers around them must score 1 while items keep coming.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScoredDataGroup } from "../../../src/core/wire/group-types";
import { processEnv } from "../../../src/env-sdk/runtime/process";
import { CODE_PROBLEMS } from "../../../src/envs/code-exec";
import { getEnvDefinition } from "../../../src/envs/index";
import { createLocalSandbox } from "../../../src/sandbox/node/local-sandbox";
import { setSandboxProvider } from "../../../src/sandbox/registry";
import type { Sandbox, SandboxRunInput, SandboxRunResult } from "../../../src/sandbox/types";
import { CharTokenizer } from "../envs/fakes";
import { ScriptedInference } from "./scripted-policy";

// Generous for a loaded 2-core machine, where a trivial run can take 2 s of wall time.
const TIMEOUT_MS = 5000;
const tokenizer = new CharTokenizer();

let canary: Server;
let canaryPort = 0;
let canaryConnections = 0;
let tempDir = "";
let canaryFile = "";
const runs: Array<{ code: string; result: SandboxRunResult }> = [];
const local = createLocalSandbox({ python: { size: 2, maxConcurrent: 2 } });

/** The local sandbox, recording every run. */
const recording: Sandbox = {
  async run(input: SandboxRunInput) {
    const result = await local.run(input);
    runs.push({ code: input.code, result });
    return result;
  },
};

beforeAll(async () => {
  tempDir = mkdtempSync(join(tmpdir(), "sandbox-canary-"));
  canaryFile = join(tempDir, "canary.txt");
  writeFileSync(canaryFile, "host secret");
  canary = createServer((socket) => {
    canaryConnections++;
    socket.end("hello from the host");
  });
  await new Promise<void>((resolve) => canary.listen(0, "127.0.0.1", resolve));
  canaryPort = (canary.address() as { port: number }).port;
  setSandboxProvider(() => recording);
  await local.run({ language: "python", code: "pass" });
}, 120_000);

afterAll(async () => {
  setSandboxProvider(null);
  await local.close();
  await new Promise((resolve) => canary.close(resolve));
  rmSync(tempDir, { recursive: true, force: true });
});

/** Each attack runs first; the correct function follows, so surviving it would score 1. */
function attacks(solution: string): Record<string, string> {
  const fenced = (code: string) => `\`\`\`python\n${code}\n${solution}\n\`\`\``;
  return {
    loop: fenced("while True:\n    pass"),
    allocate: fenced("hoard = []\nwhile True:\n    hoard.append(bytearray(8 * 1024 * 1024))"),
    host_files: fenced(
      `for path in ["/etc/passwd", ${JSON.stringify(canaryFile)}]:\n    open(path).read()`,
    ),
    socket: fenced(
      `import socket\nconn = socket.create_connection(("127.0.0.1", ${canaryPort}), timeout=1)\nassert conn.recv(5)`,
    ),
    correct: fenced(""),
  };
}

const GROUPS: Array<Array<keyof ReturnType<typeof attacks>>> = [
  ["correct", "loop", "allocate", "correct"],
  ["host_files", "correct", "socket", "correct"],
  ["correct", "correct", "correct", "correct"],
];

describe("code_exec under hostile answers", () => {
  it("scores every attack 0 within the timeout + 1 s, the canary sees nothing, correct answers score 1", async () => {
    let call = 0;
    const labels: string[][] = [];
    const inference = new ScriptedInference(tokenizer, (prompt) => {
      const problem = CODE_PROBLEMS.find((p) => prompt.includes(`(problem ${p.id})`))!;
      const kinds = GROUPS[call++ % GROUPS.length]!;
      labels.push(kinds);
      const answers = attacks(problem.solution);
      return kinds.map((k) => answers[k]!);
    });
    const env = getEnvDefinition("code_exec").create(
      { group_size: 4, timeout_ms: TIMEOUT_MS, memory_mb: 64 },
      inference,
      tokenizer,
    );
    const groups: ScoredDataGroup[] = [];
    const started = Date.now();
    const progress = await processEnv(env, { groups: 3, onGroup: (g) => void groups.push(g) });

    expect(progress.failures).toBe(0);
    expect(groups).toHaveLength(3);
    groups.forEach((group, i) => {
      const expected = labels[i]!.map((kind) => (kind === "correct" ? 1 : 0));
      const detail = runs.map((r) => `${r.result.error?.kind ?? "ok"} ${r.result.wall_ms} ms`);
      expect(group.scores, `group ${i}: ${labels[i]!.join(", ")}; runs: ${detail}`).toEqual(
        expected,
      );
    });
    expect(canaryConnections).toBe(0);

    const byMarker = (marker: string) => runs.filter((r) => r.code.includes(marker));
    for (const run of byMarker("while True:\\n    pass")) {
      expect(run.result.error?.kind).toBe("timeout");
      expect(run.result.wall_ms).toBeLessThanOrEqual(TIMEOUT_MS + 1000);
    }
    for (const run of byMarker("bytearray(8 * 1024 * 1024)")) {
      // The cap raises MemoryError inside the answer (the harness reports it as a failed
      // solution) or, when it escapes, the run ends as "memory"; a slow machine may hit the clock.
      const stopped =
        run.result.error?.kind === "memory" ||
        run.result.error?.kind === "timeout" ||
        run.result.stdout.includes("solution failed: MemoryError");
      expect(stopped, JSON.stringify(run.result)).toBe(true);
      expect(run.result.wall_ms).toBeLessThanOrEqual(TIMEOUT_MS + 1000);
    }
    for (const run of [...byMarker("/etc/passwd"), ...byMarker("socket.create_connection")]) {
      expect(run.result.ok).toBe(true);
      expect(run.result.stdout).toMatch(
        /solution failed: (FileNotFoundError|OSError|ConnectionError|\w+Error)/,
      );
      expect(run.result.wall_ms).toBeLessThanOrEqual(TIMEOUT_MS + 1000);
    }
    expect(byMarker("while True:\\n    pass")).toHaveLength(1);
    expect(byMarker("bytearray(8 * 1024 * 1024)")).toHaveLength(1);
    expect(runs).toHaveLength(12);
    // 12 runs, two at a time, each in a fresh process: bounded well below a minute.
    expect(Date.now() - started).toBeLessThan(60_000);
  }, 120_000);
});
