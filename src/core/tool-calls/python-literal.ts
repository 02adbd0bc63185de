/**
 * A reader for the pythonic call list `[f(a=1, b="x"), g()]`: Python literals only (strings,
 * numbers, True/False/None, lists, dicts), as vLLM's `pythonic` parser accepts through `ast`.
 * Throws `PythonSyntaxError` with what was expected; `truncated` when the text ended first.
 */
export class PythonSyntaxError extends Error {
  constructor(
    message: string,
    readonly truncated: boolean,
  ) {
    super(message);
  }
}

export interface PythonCall {
  name: string;
  args: Record<string, unknown>;
}

export class PythonCallReader {
  private at: number;

  constructor(
    private readonly text: string,
    from: number,
  ) {
    this.at = from;
  }

  get position(): number {
    return this.at;
  }

  /** `[call, call, …]`. */
  callList(): PythonCall[] {
    this.expect("[");
    const calls: PythonCall[] = [];
    while (!this.eat("]")) {
      calls.push(this.call());
      if (!this.eat(",")) {
        this.expect("]");
        break;
      }
    }
    return calls;
  }

  private call(): PythonCall {
    const name = this.identifier();
    this.expect("(");
    const args: Record<string, unknown> = {};
    while (!this.eat(")")) {
      const key = this.identifier();
      this.expect("=");
      args[key] = this.value();
      if (!this.eat(",")) {
        this.expect(")");
        break;
      }
    }
    return { name, args };
  }

  private value(): unknown {
    this.skipSpace();
    const ch = this.peek();
    if (ch === '"' || ch === "'") return this.string();
    if (this.eat("[")) return this.sequence("]");
    if (this.eat("{")) return this.dict();
    const word = /^(?:True|False|None|true|false|null)\b/.exec(this.text.slice(this.at))?.[0];
    if (word) {
      this.at += word.length;
      return word === "True" || word === "true"
        ? true
        : word === "None" || word === "null"
          ? null
          : false;
    }
    const number = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(this.text.slice(this.at))?.[0];
    if (number) {
      this.at += number.length;
      return Number(number);
    }
    throw this.error("a value (string, number, True/False/None, list or dict)");
  }

  private sequence(close: string): unknown[] {
    const items: unknown[] = [];
    while (!this.eat(close)) {
      items.push(this.value());
      if (!this.eat(",")) {
        this.expect(close);
        break;
      }
    }
    return items;
  }

  private dict(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    while (!this.eat("}")) {
      const key = this.value();
      if (typeof key !== "string" && typeof key !== "number") throw this.error("a string key");
      this.expect(":");
      out[String(key)] = this.value();
      if (!this.eat(",")) {
        this.expect("}");
        break;
      }
    }
    return out;
  }

  private string(): string {
    const quote = this.text[this.at]!;
    let out = "";
    for (let i = this.at + 1; i < this.text.length; i++) {
      const ch = this.text[i]!;
      if (ch === quote) {
        this.at = i + 1;
        return out;
      }
      if (ch !== "\\") {
        out += ch;
        continue;
      }
      const next = this.text[++i];
      if (next === undefined) break;
      if (next === "u" && /^[0-9a-fA-F]{4}$/.test(this.text.slice(i + 1, i + 5))) {
        out += String.fromCharCode(Number.parseInt(this.text.slice(i + 1, i + 5), 16));
        i += 4;
      } else out += { n: "\n", t: "\t", r: "\r", "0": "\0" }[next] ?? next;
    }
    this.at = this.text.length;
    throw this.error("the end of a string");
  }

  private identifier(): string {
    this.skipSpace();
    const name = /^[A-Za-z_][\w.-]*/.exec(this.text.slice(this.at))?.[0];
    if (!name) throw this.error("a name");
    this.at += name.length;
    return name;
  }

  private skipSpace(): void {
    while (this.at < this.text.length && /\s/.test(this.text[this.at]!)) this.at++;
  }

  private peek(): string | undefined {
    return this.text[this.at];
  }

  private eat(token: string): boolean {
    this.skipSpace();
    if (this.text.startsWith(token, this.at)) {
      this.at += token.length;
      return true;
    }
    return false;
  }

  private expect(token: string): void {
    if (!this.eat(token)) throw this.error(`'${token}'`);
  }

  private error(expected: string): PythonSyntaxError {
    this.skipSpace();
    const truncated = this.at >= this.text.length;
    const where = truncated
      ? "the text ended"
      : `found '${this.text.slice(this.at, this.at + 12)}'`;
    return new PythonSyntaxError(`expected ${expected}, ${where}`, truncated);
  }
}

/** A JSON value as a Python literal (strings keep JSON escapes, which Python reads the same). */
export function pythonLiteral(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (Array.isArray(value)) return `[${value.map(pythonLiteral).join(", ")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pythonLiteral(v)}`).join(", ")}}`;
  }
  return JSON.stringify(value);
}
