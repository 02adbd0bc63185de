/**
 * Hostile programs for each engine (hostile.test.ts runs them through hostile-host.ts, in a
 * child process so a crash shows as that process's exit, not the test runner's): huge outputs,
 * deep recursion, many and large files, binary output, exit codes, signals, memory hogs, and
 * Python code that reaches the child's JavaScript realm to write to the protocol stream itself.
 * Each names the error kinds it may end with; `check` says what else must hold of the result.
 */
import {
  SANDBOX_COLLECT_MAX_CHARS,
  SANDBOX_COLLECT_MAX_FILES,
  SANDBOX_OUTPUT_CAP_CHARS,
  type SandboxErrorKind,
  type SandboxRunInput,
  type SandboxRunResult,
} from "../../../src/core/wire/sandbox-schemas";

export interface HostileCase {
  name: string;
  input: SandboxRunInput;
  /** Error kinds the run may end with; null: it must succeed. */
  kinds: Array<SandboxErrorKind | null>;
  /** Kill the engine's processes with this signal while the run is under way (Python). */
  signal?: NodeJS.Signals;
  /** A message naming what is wrong, or null. */
  check?: (result: SandboxRunResult) => string | null;
}

const KIB600 = 600 * 1024;
const totalChars = (files: Record<string, string> = {}) =>
  Object.values(files).reduce((n, text) => n + text.length, 0);
const expect = (ok: boolean, message: string) => (ok ? null : message);
const capped = (r: SandboxRunResult) =>
  expect(
    r.stdout.length <= SANDBOX_OUTPUT_CAP_CHARS &&
      r.stderr.length <= SANDBOX_OUTPUT_CAP_CHARS + 512,
    `output not capped: ${r.stdout.length}/${r.stderr.length}`,
  );
const filesCapped = (r: SandboxRunResult) =>
  expect(
    Object.keys(r.files ?? {}).length <= SANDBOX_COLLECT_MAX_FILES &&
      totalChars(r.files) <= SANDBOX_COLLECT_MAX_CHARS &&
      /collected files cut/.test(r.stderr),
    `collected files not capped: ${Object.keys(r.files ?? {}).length} files, ${totalChars(r.files)} chars`,
  );

// Python code that undoes the import block and runs JavaScript in the child's realm (see the
// escape test in python-pool.test.ts): from there it can write to the protocol stream.
const inChildRealm = (js: string) =>
  [
    "import sys",
    "sys.meta_path.pop(0)",
    "import pyodide_js",
    `pyodide_js.FS.mkdir.constructor(${JSON.stringify(js)})()`,
  ].join("\n");

const py = (
  name: string,
  code: string,
  rest: Omit<HostileCase, "name" | "input"> & { input?: Partial<SandboxRunInput> },
): HostileCase => ({
  name,
  input: { language: "python", code, timeout_ms: 20_000, memory_mb: 64, ...rest.input },
  kinds: rest.kinds,
  ...(rest.signal ? { signal: rest.signal } : {}),
  ...(rest.check ? { check: rest.check } : {}),
});

export const pythonCases: HostileCase[] = [
  py("collects a 0.6 MiB file", `open('big.txt', 'w').write('x' * ${KIB600})`, {
    input: { collect_files: true },
    kinds: [null],
    check: (r) =>
      expect(r.files?.["big.txt"]?.length === KIB600, "the file did not come back whole"),
  }),
  py(
    "writes 2,000 files",
    "for i in range(2000):\n    open(f'f{i:04}.txt', 'w').write('y' * 1024)",
    {
      input: { collect_files: true },
      kinds: [null],
      check: filesCapped,
    },
  ),
  py("writes a 5 MiB file", "open('huge.txt', 'w').write('z' * (5 << 20))", {
    input: { collect_files: true },
    kinds: [null],
    check: filesCapped,
  }),
  py("prints 50 MB", "for _ in range(50):\n    print('x' * 1_000_000)", {
    kinds: [null],
    check: capped,
  }),
  py(
    "writes binary output and a binary file",
    "import sys\nsys.stdout.buffer.write(bytes(range(256)) * 512)\nsys.stdout.flush()\nopen('b.bin', 'wb').write(bytes(range(256)) * 64)",
    { input: { collect_files: true }, kinds: [null], check: capped },
  ),
  py("recurses without end", "def f(n):\n    return f(n + 1)\nf(0)", {
    kinds: ["runtime"],
  }),
  py("exits with sys.exit(3)", "import sys\nsys.exit(3)", { kinds: ["runtime"] }),
  py("exits with os._exit(7)", "import os\nos._exit(7)", { kinds: ["runtime"] }),
  py("sends itself SIGKILL", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", {
    kinds: ["runtime"],
  }),
  py("is killed by SIGSEGV from outside", "while True:\n    pass", {
    input: { timeout_ms: 8000 },
    kinds: ["runtime"],
    signal: "SIGSEGV",
  }),
  py("allocates without bound", "a = []\nwhile True:\n    a.append(bytearray(1 << 20))", {
    kinds: ["memory"],
  }),
  py("writes garbage to the protocol stream", inChildRealm("process.stdout.write('not json\\n')"), {
    kinds: ["runtime"],
  }),
  py(
    "writes an answer of the wrong shape",
    inChildRealm('process.stdout.write(\'{"stdout": 5, "files": "no"}\\n\')'),
    { kinds: ["runtime"] },
  ),
  py(
    "writes 40 MB without a newline",
    inChildRealm(
      "const s = 'q'.repeat(1 << 20); for (let i = 0; i < 40; i++) process.stdout.write(s)",
    ),
    { kinds: ["runtime"] },
  ),
  py(
    "patches the file collector to send 3 MiB",
    'import json\njson.dumps = lambda o: \'{"files": {"a.txt": "\' + \'a\' * (3 << 20) + \'"}, "cut": 0}\'',
    { input: { collect_files: true }, kinds: ["runtime"] },
  ),
  py("exits the child from its realm", inChildRealm("process.exit(0)"), { kinds: ["runtime"] }),
];

const js = (
  name: string,
  code: string,
  rest: Omit<HostileCase, "name" | "input"> & { input?: Partial<SandboxRunInput> },
): HostileCase => ({
  name,
  input: { language: "javascript", code, timeout_ms: 20_000, memory_mb: 64, ...rest.input },
  kinds: rest.kinds,
  ...(rest.check ? { check: rest.check } : {}),
});

export const javascriptCases: HostileCase[] = [
  js("logs 50 MB", "const s = 'x'.repeat(1e6); for (let i = 0; i < 50; i++) console.log(s);", {
    kinds: [null],
    check: capped,
  }),
  js(
    "logs one 40 MB string",
    "console.log('y'.repeat(40 << 20)); console.error({ a: 'z'.repeat(1 << 20) });",
    {
      kinds: [null],
      check: capped,
    },
  ),
  js(
    "logs after replacing the natives the console uses",
    "String.prototype.slice = () => 'x'.repeat(1 << 22); JSON.stringify = () => 'x'.repeat(1 << 22); Reflect.apply = () => ''; for (let i = 0; i < 20; i++) console.log({ i }, 'w'.repeat(1 << 20));",
    { kinds: [null], check: capped },
  ),
  js(
    "writes lone surrogates and control characters",
    "let s = ''; for (let c = 0; c < 65536; c++) s += String.fromCharCode(c); console.log(s); files.bin = s; return s.length;",
    {
      input: { collect_files: true },
      kinds: [null],
      check: capped,
    },
  ),
  js("recurses without end", "function f(n) { return f(n + 1) + 1; } return f(0);", {
    kinds: ["runtime"],
  }),
  js(
    "writes 10,000 files",
    "for (let i = 0; i < 10000; i++) files['f' + i] = 'v'.repeat(512); return 1;",
    {
      input: { collect_files: true },
      kinds: [null],
      check: filesCapped,
    },
  ),
  js("writes a 30 MB file", "files['big.txt'] = 'b'.repeat(30 << 20); return 1;", {
    input: { collect_files: true },
    kinds: [null],
    check: filesCapped,
  }),
  js(
    "hands back files that throw",
    "files = new Proxy({}, { ownKeys() { throw 'k'.repeat(1 << 24); } }); return 1;",
    {
      input: { collect_files: true },
      kinds: [null],
    },
  ),
  js("returns a 30 MB value", "return 'r'.repeat(30 << 20);", {
    kinds: ["runtime"],
    check: (r) => expect(/more than the cap/.test(r.error?.message ?? ""), "no cap message"),
  }),
  js("throws a 30 MB error", "throw new Error('e'.repeat(30 << 20));", {
    kinds: ["runtime"],
    check: (r) => expect((r.error?.message.length ?? 0) <= 4000, "error message not cut"),
  }),
  js("rejects with a 30 MB string", "return Promise.reject('p'.repeat(30 << 20));", {
    kinds: ["runtime"],
    check: (r) => expect((r.error?.message.length ?? 0) <= 4000, "error message not cut"),
  }),
  js("throws a number (an exit code)", "throw 3;", { kinds: ["runtime"] }),
  js("asks for process.exit", "process.exit(1);", { kinds: ["runtime"] }),
  js("loops without end", "while (true) {}", { input: { timeout_ms: 600 }, kinds: ["timeout"] }),
  js(
    "allocates arrays without bound",
    "const a = []; while (true) a.push(new Array(1e5).fill(1));",
    {
      kinds: ["memory", "timeout"],
    },
  ),
  js(
    "allocates strings without bound",
    "const a = []; const s = 'x'.repeat(1 << 20); while (true) a.push(s + a.length);",
    {
      kinds: ["memory"],
    },
  ),
];

/**
 * A run that must come back right after the last hostile one (each hostile run is itself the run
 * after the one before it, and must end as its case says): the engine still serves.
 */
export const probes: Record<"python" | "javascript", { input: SandboxRunInput; stdout: string }> = {
  python: { input: { language: "python", code: "print(6 * 7)" }, stdout: "42\n" },
  javascript: { input: { language: "javascript", code: "console.log(6 * 7)" }, stdout: "42\n" },
};

/** Programs that hold memory near `memory_mb` (bounded: they stop at the cap or the deadline). */
export const memoryHogs: Record<"python" | "javascript", string[]> = {
  python: [
    "a = []\nwhile True:\n    a.append(bytearray(1 << 20))",
    `open('big.txt', 'w').write('x' * ${KIB600})\nprint('y' * 60000)`,
  ],
  javascript: [
    "const a = []; while (true) a.push(new Array(1e5).fill(1));",
    "const a = []; const s = 'x'.repeat(1 << 20); while (true) a.push(s + a.length);",
    "files.big = 'b'.repeat(30 << 20); console.log('y'.repeat(30 << 20)); return 'r'.repeat(1 << 19);",
  ],
};
