/**
 * The bundled code_exec problem set: small Python functions to write, each with hidden tests
 * whose expected values are computed here (not by running Python), a reference solution and a
 * plausible buggy one (for the simulator). Deterministic: the same seed gives the same set.
 */
import { SeededRng } from "../../sdk/env";

type Json = number | string | boolean | Json[];

export type CodeTest = { args: Json[]; expected: Json };

export type CodeProblem = {
  id: string;
  entry: string;
  prompt: string;
  tests: CodeTest[];
  solution: string;
  buggy: string;
};

type Template = (rng: SeededRng) => Omit<CodeProblem, "id">;

const WORDS = [
  "alpha",
  "beta",
  "gamma",
  "delta",
  "kiwi",
  "mango",
  "river",
  "stone",
  "cloud",
  "ember",
];

const randomInts = (rng: SeededRng, n: number, lo: number, hi: number) =>
  Array.from({ length: n }, () => rng.int(lo, hi));

const TEMPLATES: Template[] = [
  (rng) => {
    const [a, b] = [rng.int(2, 5), rng.int(6, 9)];
    const f = (n: number) => {
      let s = 0;
      for (let i = 1; i < n; i++) if (i % a === 0 || i % b === 0) s += i;
      return s;
    };
    const ns = [10, rng.int(20, 60), rng.int(100, 400), 1, a];
    return {
      entry: "sum_multiples",
      prompt: `Write a Python function \`sum_multiples(n: int) -> int\` that returns the sum of all positive integers below n that are divisible by ${a} or by ${b}.`,
      tests: ns.map((n) => ({ args: [n], expected: f(n) })),
      solution: `def sum_multiples(n):\n    return sum(i for i in range(1, n) if i % ${a} == 0 or i % ${b} == 0)`,
      buggy: `def sum_multiples(n):\n    return sum(i for i in range(1, n + 1) if i % ${a} == 0 or i % ${b} == 0)`,
    };
  },
  (rng) => {
    const m = rng.pick([97, 1000, 10007, 65536]);
    const f = (n: number) => {
      let [x, y] = [0, 1];
      for (let i = 0; i < n; i++) [x, y] = [y, (x + y) % m];
      return x;
    };
    const ns = [0, 1, 2, rng.int(10, 30), rng.int(50, 200)];
    return {
      entry: "fib_mod",
      prompt: `Write a Python function \`fib_mod(n: int) -> int\` that returns the n-th Fibonacci number modulo ${m}, with fib(0) = 0 and fib(1) = 1.`,
      tests: ns.map((n) => ({ args: [n], expected: f(n) })),
      solution: `def fib_mod(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, (a + b) % ${m}\n    return a`,
      buggy: `def fib_mod(n):\n    a, b = 1, 1\n    for _ in range(n):\n        a, b = b, (a + b) % ${m}\n    return a`,
    };
  },
  (rng) => {
    const sentences = Array.from({ length: 4 }, () =>
      Array.from({ length: rng.int(1, 5) }, () => rng.pick(WORDS)).join(" "),
    );
    return {
      entry: "reverse_words",
      prompt:
        "Write a Python function `reverse_words(s: str) -> str` that returns the words of s (separated by single spaces) in reverse order, joined by single spaces.",
      tests: [...sentences, ""].map((s) => ({
        args: [s],
        expected: s.split(" ").reverse().join(" "),
      })),
      solution: `def reverse_words(s):\n    return " ".join(reversed(s.split(" ")))`,
      buggy: `def reverse_words(s):\n    return s[::-1]`,
    };
  },
  (rng) => {
    const lists = Array.from({ length: 4 }, () => randomInts(rng, rng.int(1, 8), -20, 40));
    const f = (xs: number[]) => xs.map((_, i) => Math.max(...xs.slice(0, i + 1)));
    return {
      entry: "running_max",
      prompt:
        "Write a Python function `running_max(xs: list[int]) -> list[int]` that returns a list whose i-th element is the largest of xs[0..i].",
      tests: [...lists, []].map((xs) => ({ args: [xs], expected: f(xs) })),
      solution: `def running_max(xs):\n    out = []\n    for x in xs:\n        out.append(x if not out else max(out[-1], x))\n    return out`,
      buggy: `def running_max(xs):\n    return sorted(xs)`,
    };
  },
  (rng) => {
    const p = rng.int(2, 4);
    const f = (n: number) => [...String(n)].reduce((s, d) => s + Number(d) ** p, 0);
    const ns = [0, 7, rng.int(10, 99), rng.int(100, 9999), rng.int(10000, 999999)];
    return {
      entry: "digit_power_sum",
      prompt: `Write a Python function \`digit_power_sum(n: int) -> int\` that returns the sum of the decimal digits of the non-negative integer n, each raised to the power ${p}.`,
      tests: ns.map((n) => ({ args: [n], expected: f(n) })),
      solution: `def digit_power_sum(n):\n    return sum(int(d) ** ${p} for d in str(n))`,
      buggy: `def digit_power_sum(n):\n    return sum(int(d) * ${p} for d in str(n))`,
    };
  },
  (rng) => {
    const cases = [
      "A man, a plan, a canal: Panama",
      "race a car",
      rng.pick(WORDS),
      "No 'x' in Nixon",
      `${rng.pick(WORDS)}${[...rng.pick(WORDS)].reverse().join("")}`,
    ];
    const f = (s: string) => {
      const t = s.toLowerCase().replace(/[^a-z0-9]/g, "");
      return t === [...t].reverse().join("");
    };
    return {
      entry: "is_palindrome",
      prompt:
        "Write a Python function `is_palindrome(s: str) -> bool` that says whether s reads the same forwards and backwards when only letters and digits are kept and case is ignored.",
      tests: cases.map((s) => ({ args: [s], expected: f(s) })),
      solution: `def is_palindrome(s):\n    t = [c.lower() for c in s if c.isalnum()]\n    return t == t[::-1]`,
      buggy: `def is_palindrome(s):\n    return s == s[::-1]`,
    };
  },
  (rng) => {
    const f = (n: number) => {
      let steps = 0;
      while (n !== 1) {
        n = n % 2 === 0 ? n / 2 : 3 * n + 1;
        steps++;
      }
      return steps;
    };
    const ns = [1, 2, rng.int(3, 30), rng.int(31, 300), 27];
    return {
      entry: "collatz_steps",
      prompt:
        "Write a Python function `collatz_steps(n: int) -> int` that returns how many steps the Collatz process (n -> n/2 if even, else 3n+1) takes to reach 1 from the positive integer n.",
      tests: ns.map((n) => ({ args: [n], expected: f(n) })),
      solution: `def collatz_steps(n):\n    steps = 0\n    while n != 1:\n        n = n // 2 if n % 2 == 0 else 3 * n + 1\n        steps += 1\n    return steps`,
      buggy: `def collatz_steps(n):\n    steps = 1\n    while n != 1:\n        n = n // 2 if n % 2 == 0 else 3 * n + 1\n        steps += 1\n    return steps`,
    };
  },
  (rng) => {
    const lists = Array.from({ length: 4 }, () => randomInts(rng, rng.int(2, 8), 0, 9));
    const k = rng.int(1, 3);
    const f = (xs: number[]) => {
      const seen = new Map<number, number>();
      for (const x of xs) seen.set(x, (seen.get(x) ?? 0) + 1);
      return [...seen.entries()]
        .filter(([, c]) => c >= k)
        .map(([x]) => x)
        .sort((a, b) => a - b);
    };
    return {
      entry: "frequent",
      prompt: `Write a Python function \`frequent(xs: list[int]) -> list[int]\` that returns, in ascending order and without repeats, the values that occur at least ${k} times in xs.`,
      tests: [...lists, []].map((xs) => ({ args: [xs], expected: f(xs) })),
      solution: `def frequent(xs):\n    return sorted({x for x in xs if xs.count(x) >= ${k}})`,
      buggy: `def frequent(xs):\n    return sorted(x for x in xs if xs.count(x) >= ${k})`,
    };
  },
];

/** `count` problems cycling through the templates, each with fresh parameters. */
export function generateCodeProblems(count = 48, seed = 2026): CodeProblem[] {
  const rng = new SeededRng(seed);
  return Array.from({ length: count }, (_, i) => ({
    id: `code-${i}`,
    ...TEMPLATES[i % TEMPLATES.length]!(rng),
  }));
}
