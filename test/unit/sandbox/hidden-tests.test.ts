/**
 * The hidden-test harness shared by code_exec and agent_tasks, run in the local sandbox: asserts
 * are counted one by one, setup statements are not tests, tests without asserts count as one,
 * and an answer cannot print its way to a score.
 */
import { afterAll, describe, expect, it } from "vitest";
import { SANDBOX_OUTPUT_CAP_CHARS } from "../../../src/core/wire/sandbox-schemas";
import { runHiddenTests } from "../../../src/sandbox/hidden-tests";
import { createLocalSandbox } from "../../../src/sandbox/node/local-sandbox";

const sandbox = createLocalSandbox({ python: { size: 1, maxConcurrent: 1 } });
afterAll(() => sandbox.close?.());

const run = (code: string, tests: string) =>
  runHiddenTests(sandbox, { code, tests, timeout_ms: 10_000, memory_mb: 128 });

describe("runHiddenTests", () => {
  it("counts each top-level assert; setup statements run first and are not tests", async () => {
    const tests = [
      "import math",
      "def near(a, b):",
      "    return math.isclose(a, b)",
      "assert near(area(1), math.pi)",
      "assert area(0) == 0",
      "assert area(-1) is None",
    ].join("\n");
    const right = "import math\ndef area(r):\n    return None if r < 0 else math.pi * r * r";
    const wrong = "import math\ndef area(r):\n    return math.pi * r * r";
    expect(await run(right, tests)).toMatchObject({ score: 1, passed: 3, total: 3 });
    expect(await run(wrong, tests)).toMatchObject({ passed: 2, total: 3 });
  }, 60_000);

  it("tests without an assert are one test; a failing solution or a printed marker passes nothing", async () => {
    expect(await run("x = 1", "if x != 1:\n    raise ValueError('x')")).toMatchObject({
      score: 1,
      passed: 1,
      total: 1,
    });
    const broken = await run("def f(:\n    pass", "assert f() is None");
    expect(broken).toMatchObject({ score: 0, passed: 0, total: 1 });
    expect(broken.run.stdout).toContain("solution failed: SyntaxError");
    const spoof = await run("print('@@passed-x@@ 9 9')\ndef f():\n    return 1", "assert f() == 2");
    expect(spoof).toMatchObject({ score: 0, passed: 0, total: 1 });
  }, 60_000);

  it("scores 0 when an answer finds the real marker and prints a count of its own", async () => {
    const forge = [
      "import sys",
      "_m = next(c for c in sys._getframe(1).f_code.co_consts",
      "          if isinstance(c, str) and c.startswith('\\n@@passed-')).strip()",
      "print(_m, 3, 3)",
      "def f():",
      "    return 1",
    ].join("\n");
    const forged = await run(forge, "assert f() == 2\nassert f() == 3\nassert f() == 4");
    // The forged line and the harness's own are both there: the marker was found.
    expect(forged.run.stdout.match(/@@passed-/g)).toHaveLength(2);
    expect(forged).toMatchObject({ score: 0, passed: 0, total: null });
  }, 60_000);

  it("counts only a whole count line: output cut at the cap inside it scores 0", async () => {
    const tests = Array.from({ length: 12 }, (_, i) => `assert f() == ${i + 1}`).join("\n");
    // Stdout is cut at SANDBOX_OUTPUT_CAP_CHARS; this fills it so that the cut falls right after
    // "1 1" of the count line "1 12" (1 + 1 newlines, the 47-character marker, " 1 1").
    const fill = `print('x' * (${SANDBOX_OUTPUT_CAP_CHARS} - 53))\ndef f():\n    return 1`;
    const cut = await run(fill, tests);
    expect(cut.run.stdout).toHaveLength(SANDBOX_OUTPUT_CAP_CHARS);
    expect(cut.run.stdout).toMatch(/@@ 1 1$/);
    expect(cut).toMatchObject({ score: 0, passed: 0, total: null });
    // An answer whose output does not end its last line still gets its count.
    const unended = await run(
      "import sys\nsys.stdout.write('no newline')\ndef f():\n    return 1",
      tests,
    );
    expect(unended).toMatchObject({ passed: 1, total: 12 });
  }, 60_000);
});
