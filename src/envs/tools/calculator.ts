/**
 * Safe arithmetic: a recursive-descent parser (no eval, no Function). Supports + - * / % ^ (and
 * **), parentheses, unary minus, decimals and sqrt/abs/round/floor/ceil/min/max/pow.
 * Bounded: input length and nesting depth are capped.
 */
const FUNCTIONS: Record<string, (...args: number[]) => number> = {
  sqrt: Math.sqrt,
  abs: Math.abs,
  round: Math.round,
  floor: Math.floor,
  ceil: Math.ceil,
  min: Math.min,
  max: Math.max,
  pow: Math.pow,
};

const MAX_LENGTH = 500;
const MAX_DEPTH = 64;

export class CalculatorError extends Error {}

export function calculate(expression: string): number {
  if (expression.length > MAX_LENGTH) throw new CalculatorError("expression too long");
  const src = expression.replace(/\*\*/g, "^").replace(/[×]/g, "*").replace(/[÷]/g, "/");
  let pos = 0;
  let depth = 0;

  const skip = () => {
    while (src[pos] === " " || src[pos] === "\t") pos++;
  };
  const peek = () => {
    skip();
    return src[pos];
  };
  const expect = (ch: string) => {
    if (peek() !== ch) throw new CalculatorError(`expected '${ch}' at ${pos}`);
    pos++;
  };
  const enter = () => {
    if (++depth > MAX_DEPTH) throw new CalculatorError("expression nested too deeply");
  };

  const expr = (): number => {
    let v = term();
    for (let c = peek(); c === "+" || c === "-"; c = peek()) {
      pos++;
      v = c === "+" ? v + term() : v - term();
    }
    return v;
  };
  const term = (): number => {
    let v = power();
    for (let c = peek(); c === "*" || c === "/" || c === "%"; c = peek()) {
      pos++;
      const r = power();
      if ((c === "/" || c === "%") && r === 0) throw new CalculatorError("division by zero");
      v = c === "*" ? v * r : c === "/" ? v / r : v % r;
    }
    return v;
  };
  const power = (): number => {
    const base = unary();
    if (peek() === "^") {
      pos++;
      return base ** power(); // right-associative
    }
    return base;
  };
  const unary = (): number => {
    const c = peek();
    if (c === "-" || c === "+") {
      pos++;
      enter();
      const v = unary();
      depth--;
      return c === "-" ? -v : v;
    }
    return primary();
  };
  const primary = (): number => {
    const c = peek();
    if (c === "(") {
      pos++;
      enter();
      const v = expr();
      depth--;
      expect(")");
      return v;
    }
    const num = /^(\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?/i.exec(src.slice(pos));
    if (num) {
      pos += num[0].length;
      return Number(num[0]);
    }
    const ident = /^[a-z]+/i.exec(src.slice(pos));
    if (ident) {
      const fn = FUNCTIONS[ident[0].toLowerCase()];
      if (!fn) throw new CalculatorError(`unknown function '${ident[0]}'`);
      pos += ident[0].length;
      expect("(");
      enter();
      const args = [expr()];
      while (peek() === ",") {
        pos++;
        args.push(expr());
      }
      depth--;
      expect(")");
      return fn(...args);
    }
    throw new CalculatorError(
      c === undefined ? "unexpected end of expression" : `unexpected '${c}' at ${pos}`,
    );
  };

  const value = expr();
  if (peek() !== undefined) throw new CalculatorError(`unexpected '${src[pos]}' at ${pos}`);
  if (!Number.isFinite(value)) throw new CalculatorError("result is not a finite number");
  return value;
}

/** Format results without float noise (0.1+0.2 → "0.3"). */
export function formatNumber(v: number): string {
  return Number.isInteger(v) ? String(v) : String(Number.parseFloat(v.toPrecision(12)));
}
