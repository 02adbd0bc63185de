/**
 * Hidden tests: run an answer's Python code against test code in a sandbox and count the tests
 * that passed. Each top-level `assert` of the tests is one test (other statements are setup run
 * in order); tests without any `assert` count as one test that passes when they run through.
 * The answer runs in its own namespace and the tests in it, so they see what it defines.
 *
 * The answer runs in the interpreter that counts: code that goes looking (through its caller's
 * frame) can change the counts or the printing itself. The harness makes the simple forgeries
 * score 0 (printing a count line, a second count line, counts past the total); a judge that must
 * hold against code written to fool it compares outputs outside the sandbox instead.
 */
import type { Sandbox, SandboxRunResult } from "./types";

export interface HiddenTestsResult {
  /** Fraction of tests passed (0 when the count is unknown). */
  score: number;
  passed: number;
  /** Tests counted by the harness; null when the run ended before it reported. */
  total: number | null;
  run: SandboxRunResult;
}

/**
 * A program that runs `code`, then `tests` statement by statement, and prints the counts after a
 * per-run marker, so output of the answer itself cannot pass for it. A solution that fails to
 * run passes nothing.
 */
export function hiddenTestHarness(code: string, tests: string, marker: string): string {
  // JSON string literals are valid Python string literals.
  return [
    "import ast as _ast",
    "_passed = 0",
    "_total = 1",
    "_ns = {'__name__': 'solution'}",
    "try:",
    `    _tree = _ast.parse(${JSON.stringify(tests)}, 'tests.py')`,
    "    _asserts = [_s for _s in _tree.body if isinstance(_s, _ast.Assert)]",
    "    _total = len(_asserts) or 1",
    `    exec(compile(${JSON.stringify(code)}, 'solution.py', 'exec'), _ns)`,
    "    if not _asserts:",
    "        exec(compile(_tree, 'tests.py', 'exec'), _ns)",
    "        _passed = 1",
    "    for _s in _tree.body if _asserts else []:",
    "        try:",
    "            exec(compile(_ast.Module(body=[_s], type_ignores=[]), 'tests.py', 'exec'), _ns)",
    "            if isinstance(_s, _ast.Assert):",
    "                _passed += 1",
    "        except BaseException:",
    "            pass",
    "except BaseException as _e:",
    "    print('solution failed:', type(_e).__name__, _e)",
    // On a line of its own even after output that did not end its last line.
    `print('\\n' + ${JSON.stringify(marker)}, _passed, _total)`,
  ].join("\n");
}

/** Run `code` against `tests` in the sandbox (Python); the run's faults score 0, never throw. */
export async function runHiddenTests(
  sandbox: Sandbox,
  input: { code: string; tests: string; timeout_ms: number; memory_mb: number },
): Promise<HiddenTestsResult> {
  const marker = `@@passed-${crypto.randomUUID()}@@`;
  const run = await sandbox.run({
    language: "python",
    code: hiddenTestHarness(input.code, input.tests, marker),
    timeout_ms: input.timeout_ms,
    memory_mb: input.memory_mb,
  });
  // The harness prints exactly one count line, last. An answer that found the marker (the
  // harness's code objects are reachable from its frame) and printed a count of its own makes it
  // two, so any count line but exactly one well-formed one scores nothing. Only whole lines
  // count: output cut at the sandbox's cap inside the count line ("1 12" cut to "1 1") is none.
  const whole = run.ok ? run.stdout.split("\n").slice(0, -1) : [];
  const lines = whole.filter((l) => l.startsWith(marker));
  const counts =
    lines.length === 1 ? /^ (\d+) (\d+)\r?$/.exec(lines[0]!.slice(marker.length)) : null;
  const passed = Number(counts?.[1]);
  const total = Number(counts?.[2]);
  if (!counts || total < 1 || passed > total) return { score: 0, passed: 0, total: null, run };
  return { score: passed / total, passed, total, run };
}
