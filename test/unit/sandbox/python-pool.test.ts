/**
 * The Python process pool: warm children answer fast, each run gets a fresh process (nothing
 * carries over), the host's environment, files, network and Pyodide's JavaScript bridges are out
 * of reach, and the clock and the memory cap stop runaway code.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pythonExecTool } from "../../../src/envs/tools/sandbox-tools";
import { Toolbox } from "../../../src/envs/tools/toolbox";
import {
  networkIsolationAvailable,
  PythonProcessPool,
} from "../../../src/sandbox/node/python-pool";
import { ScratchFs } from "../../../src/sandbox/scratch-fs";

const warnings: string[] = [];
const pool = new PythonProcessPool({ size: 2, onWarning: (m) => warnings.push(m) });
const py = (code: string, extra: { timeout_ms?: number; memory_mb?: number } = {}) =>
  pool.run({ language: "python", code, ...extra });

beforeAll(async () => {
  process.env.SANDBOX_TEST_SECRET = "do-not-leak";
  await pool.start();
  await py("pass");
}, 120_000);

afterAll(async () => {
  delete process.env.SANDBOX_TEST_SECRET;
  await pool.close();
  expect(pool.processCount).toBe(0);
});

describe("PythonProcessPool", () => {
  it("runs stdlib Python and answers a warm call in well under a second", async () => {
    await pool.whenFull(); // the run in beforeAll took a warm child: wait for its replacement
    const started = performance.now();
    const result = await py("import json, math\nprint(json.dumps({'r': math.isqrt(99)}))");
    const elapsed = performance.now() - started;
    expect(result).toMatchObject({ ok: true, stdout: '{"r": 9}\n', error: null });
    expect(elapsed).toBeLessThan(1000);
  });

  it("gives every run a fresh process: nothing a run leaves behind is seen by the next", async () => {
    const first = await py("import builtins\nbuiltins.leak = 1\nopen('left.txt','w').write('x')");
    expect(first.ok).toBe(true);
    const second = await py(
      "import builtins, os\nprint(hasattr(builtins, 'leak'), os.path.exists('left.txt'))",
    );
    expect(second.stdout).toBe("False False\n");
  });

  it("reports exceptions with the user's traceback only", async () => {
    const result = await py("def f():\n    raise ValueError('nope')\nf()");
    expect(result.ok).toBe(false);
    expect(result.error?.kind).toBe("runtime");
    expect(result.error?.message).toMatch(/File "main.py", line 3[\s\S]*ValueError: nope/);
    expect(result.error?.message).not.toMatch(/_pyodide/);
  });

  it("keeps the host out: environment, files, JavaScript bridges, network", async () => {
    const result = await py(
      [
        "import os",
        "print('secret' , 'SANDBOX_TEST_SECRET' in os.environ)",
        "for name in ['js', 'pyodide', 'pyodide_js', 'pyodide.code', 'pyodide.http', '_pyodide_core']:",
        "    try:",
        "        __import__(name)",
        "        print('imported', name)",
        "    except ImportError:",
        "        pass",
        "for path in ['/etc/passwd', '/proc/self/environ', '/home']:",
        "    print(path, os.path.exists(path))",
        "import socket",
        "try:",
        "    socket.create_connection(('127.0.0.1', 22), timeout=1)",
        "    print('connected')",
        "except OSError as e:",
        "    print('no network')",
      ].join("\n"),
    );
    expect(result.stdout).toBe(
      "secret False\n/etc/passwd False\n/proc/self/environ False\n/home True\nno network\n",
    );
  });

  it("holds even when code re-opens Pyodide's JavaScript bridge: no files, processes or secrets", async () => {
    const attempts = [
      "return process.getBuiltinModule('fs').readFileSync('/etc/passwd', 'utf8')",
      "return process.getBuiltinModule('child_process').execSync('id').toString()",
      "return Object.keys(process.env).filter((k) => k !== 'SANDBOX_SNAPSHOT').join(',') || 'empty'",
    ];
    const result = await py(
      [
        "import sys",
        "sys.meta_path.pop(0)  # undo the import block",
        "import pyodide_js",
        "host_function = pyodide_js.FS.mkdir.constructor  # JavaScript's Function, in the child's realm",
        `for source in ${JSON.stringify(attempts)}:`,
        "    try:",
        "        print(host_function(source)())",
        "    except Exception as e:",
        "        print('refused:', str(e).splitlines()[0])",
      ].join("\n"),
    );
    expect(result.stdout).toBe(
      [
        "refused: Error: Access to this API has been restricted",
        "refused: Error: Access to this API has been restricted",
        "empty",
        "",
      ].join("\n"),
    );
  });

  it("starts children in a network namespace of their own", async () => {
    expect(pool.networkIsolated).toBe(networkIsolationAvailable());
    if (!pool.networkIsolated) return expect(warnings.join("\n")).toMatch(/unshare -n/);
    const children = readdirSync("/proc").filter((pid) => {
      try {
        const status = readFileSync(`/proc/${pid}/status`, "utf8");
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
        return status.includes(`PPid:\t${process.pid}\n`) && cmdline.includes("pyodide-child.mjs");
      } catch {
        return false;
      }
    });
    expect(children.length).toBeGreaterThan(0);
    const ours = readlinkSync("/proc/self/ns/net");
    for (const pid of children) expect(readlinkSync(`/proc/${pid}/ns/net`)).not.toBe(ours);
  });

  it("stops an endless loop at the timeout", async () => {
    const result = await py("while True:\n    pass", { timeout_ms: 800 });
    expect(result.error?.kind).toBe("timeout");
    expect(result.wall_ms).toBeGreaterThanOrEqual(800);
    expect(result.wall_ms).toBeLessThan(1800);
  });

  it("caps memory: unbounded allocation raises MemoryError at the limit", async () => {
    const result = await py(
      "hoard = []\nwhile True:\n    hoard.append(bytearray(4 * 1024 * 1024))",
      { memory_mb: 96, timeout_ms: 10_000 },
    );
    expect(result.error?.kind).toBe("memory");
    expect(result.error?.message).toMatch(/MemoryError/);
  });

  it("kills a child whose resident memory passes the watchdog's limit", async () => {
    // No headroom over memory_mb: a loaded interpreter alone is over it.
    const strict = new PythonProcessPool({ size: 1, rssOverheadMb: 0, snapshot: false });
    try {
      const result = await strict.run({ language: "python", code: "x = 1", memory_mb: 32 });
      expect(result.error?.kind).toBe("memory");
      expect(result.error?.message).toMatch(/process RSS \d+ MiB/);
    } finally {
      await strict.close();
    }
  }, 60_000);

  it("python_exec sees the episode's scratch files and brings new ones back", async () => {
    const scratch = new ScratchFs();
    scratch.write("data/in.txt", "3 4 5");
    const toolbox = new Toolbox({
      python_exec: pythonExecTool({ scratch, timeoutMs: 3000, sandbox: async () => pool }),
    });
    const out = await toolbox.call("python_exec", {
      code: "nums = open('data/in.txt').read().split()\nopen('sum.txt','w').write(str(sum(map(int, nums))))\nprint('done')",
    });
    expect(out).toMatchObject({ result: "done", error: null });
    expect(scratch.read("sum.txt")).toBe("12");
    const runaway = await toolbox.call("python_exec", { code: "while True: pass" });
    expect(runaway.error).toMatch(/^timeout: timed out after 3000 ms/);
    expect(runaway.latency_ms).toBeLessThan(4000);
  });
});
