/**
 * Hidden tests: run an answer's Python code against test code in a sandbox and count the tests
 * that passed. Each top-level `assert` of the tests is one test (other statements are setup run
 * in order); tests without any `assert` count as one test that passes when they run through.
 * The answer runs in its own namespace and the tests in it, so they see what it defines.
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
    `print(${JSON.stringify(marker)}, _passed, _total)`,
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
  const line = run.ok ? run.stdout.split("\n").find((l) => l.startsWith(`${marker} `)) : undefined;
  if (!line) return { score: 0, passed: 0, total: null, run };
  const [passed = 0, total = 0] = line
    .slice(marker.length + 1)
    .split(" ")
    .map(Number);
  return { score: total > 0 ? passed / total : 0, passed, total, run };
}
