/**
 * The sandbox never takes its host down: each engine runs every program of
 * hostile-programs.ts in a host process of its own (hostile-host.ts), which must exit cleanly,
 * end each run as its case says and still answer a probe afterwards; and the host's RSS, while
 * two runs at a time hold `memory_mb` 64, grows by at most `memory_mb` + 64 MiB per run.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";

const HOST = fileURLToPath(new URL("./hostile-host.ts", import.meta.url));

interface HostReport {
  memory: {
    concurrent: number;
    memory_mb: number;
    baseline_mb: number;
    peak_mb: number;
    growth_mb: number;
  };
  cases: Array<{
    name: string;
    kind: string | null;
    message: string | null;
    expected: Array<string | null>;
    problem: string | null;
  }>;
  probe: unknown;
}

interface HostRun {
  code: number | string | null;
  stderr: string;
  report: HostReport | null;
}

/** One engine's host process, started at once so both engines' hosts run side by side. */
function runHost(engine: "python" | "javascript"): Promise<HostRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--expose-gc", "--import", "tsx", HOST, engine],
      { timeout: 280_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const last = stdout.trim().split("\n").at(-1) ?? "";
        let report: HostReport | null = null;
        try {
          report = JSON.parse(last) as HostReport;
        } catch {
          report = null;
        }
        const code = error ? ((error as { code?: number | string }).code ?? 1) : 0;
        resolve({ code, stderr: stderr.slice(-4000), report });
      },
    );
  });
}

const hosts = { python: runHost("python"), javascript: runHost("javascript") };

for (const engine of ["python", "javascript"] as const) {
  describe(`the ${engine} engine against hostile programs`, () => {
    let run: HostRun;
    beforeAll(async () => {
      run = await hosts[engine];
    }, 300_000);

    it("leaves its host running: every run ends as a result, and the next run works", () => {
      expect(run.stderr).not.toMatch(/SyntaxError|Unhandled|Uncaught/);
      expect({ code: run.code, report: run.report !== null }).toEqual({ code: 0, report: true });
      const report = run.report!;
      const wrong = report.cases
        .filter((c) => !c.expected.includes(c.kind) || c.problem !== null)
        .map((c) => `${c.name}: ${c.kind} (${c.message}) ${c.problem ?? ""}`);
      expect(wrong).toEqual([]);
      expect(report.probe).toBe("ok");
    });

    it("keeps the host's RSS growth within memory_mb + 64 MiB per concurrent run", () => {
      const { memory } = run.report!;
      expect(memory.growth_mb).toBeLessThanOrEqual(memory.concurrent * (memory.memory_mb + 64));
    });
  });
}
