/**
 * Reads Atropos' vLLM `/generate` answer straight from the response text.
 *
 * Why: `logprobs` holds one `[{"<id>": logprob}]` per token. JSON.parse builds an array and an
 * integer-keyed (dictionary-mode) object for each, which the parser then has to walk again: for
 * 8 completions of ~1k tokens that was the largest env-side cost per rollout. This scanner fills
 * the id and logprob arrays in one pass and skips the other fields (`text`, `token_ids`, ...).
 *
 * It accepts a strict subset of JSON (RFC 8259 grammar, one-key entries, ids of ≤ 15 digits)
 * and returns null for anything else, so the caller's JSON.parse path keeps deciding every
 * unusual or invalid answer: results and errors are the same as JSON.parse + walk.
 */

export interface ScannedGenerate {
  outputTokens: number[][];
  outputLogprobs: number[][];
  /** The `finish_reasons` value as JSON.parse gives it; undefined when absent. */
  finishReasons: unknown;
}

/** null: not in the expected shape (or not JSON); parse it the general way instead. */
export function scanVllmGenerateBody(text: string): ScannedGenerate | null {
  try {
    return new Scanner(text).body();
  } catch {
    return null; // Mismatch (or a stack overflow on absurd nesting): let JSON.parse decide.
  }
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const COLON = 0x3a;
const LBRACKET = 0x5b;
const BACKSLASH = 0x5c;
const RBRACKET = 0x5d;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
/** Characters allowed after a backslash besides `u`: " \ / b f n r t. */
const SIMPLE_ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);

class Mismatch extends Error {}

function fail(): never {
  throw new Mismatch();
}

const isDigit = (c: number) => c >= ZERO && c <= NINE;
const isHex = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

class Scanner {
  private pos = 0;

  constructor(private readonly s: string) {}

  body(): ScannedGenerate {
    let logprobs: { tokens: number[][]; values: number[][] } | null = null;
    let finishReasons: unknown;
    this.ws();
    this.expect(LBRACE);
    this.ws();
    if (!this.eat(RBRACE)) {
      do {
        this.ws();
        const key = this.key();
        this.ws();
        this.expect(COLON);
        this.ws();
        // Repeated keys: the last one wins, as with JSON.parse.
        if (key === "logprobs") logprobs = this.logprobs();
        else if (key === "finish_reasons") {
          const start = this.pos;
          this.skipValue();
          finishReasons = JSON.parse(this.s.slice(start, this.pos)) as unknown;
        } else this.skipValue();
        this.ws();
      } while (this.eat(COMMA));
      this.expect(RBRACE);
    }
    this.ws();
    if (this.pos !== this.s.length || !logprobs) fail();
    return {
      outputTokens: logprobs.tokens,
      outputLogprobs: logprobs.values,
      finishReasons,
    };
  }

  /** `[[position, ...], ...]`, one list per choice. */
  private logprobs(): { tokens: number[][]; values: number[][] } {
    const tokens: number[][] = [];
    const values: number[][] = [];
    this.expect(LBRACKET);
    this.ws();
    if (!this.eat(RBRACKET)) {
      do {
        this.ws();
        const ids: number[] = [];
        const lps: number[] = [];
        this.expect(LBRACKET);
        this.ws();
        if (!this.eat(RBRACKET)) {
          do {
            this.ws();
            this.position(ids, lps);
            this.ws();
          } while (this.eat(COMMA));
          this.expect(RBRACKET);
        }
        tokens.push(ids);
        values.push(lps);
        this.ws();
      } while (this.eat(COMMA));
      this.expect(RBRACKET);
    }
    return { tokens, values };
  }

  /** `[{"<id>": logprob}]` or a bare `{"<id>": logprob}`; exactly one entry. */
  private position(ids: number[], lps: number[]): void {
    if (!this.compactPosition(ids, lps)) this.spacedPosition(ids, lps);
  }

  /**
   * The form servers actually send, `[{"<id>":<number>}]` without whitespace, read with a local
   * index (about twice as fast). false, with nothing consumed, when it does not apply.
   */
  private compactPosition(ids: number[], lps: number[]): boolean {
    const s = this.s;
    let i = this.pos;
    if (s.charCodeAt(i) !== LBRACKET || s.charCodeAt(i + 1) !== LBRACE) return false;
    if (s.charCodeAt(i + 2) !== QUOTE) return false;
    i += 3;
    const idStart = i;
    let id = 0;
    let c = s.charCodeAt(i);
    while (isDigit(c)) {
      id = id * 10 + (c - ZERO); // exact: at most 15 digits (checked below)
      c = s.charCodeAt(++i);
    }
    if (i === idStart || i - idStart > 15 || c !== QUOTE || s.charCodeAt(i + 1) !== COLON) {
      return false;
    }
    i += 2;
    const numberStart = i;
    c = s.charCodeAt(i);
    if (c === MINUS) c = s.charCodeAt(++i);
    if (c === ZERO) c = s.charCodeAt(++i);
    else if (isDigit(c)) while (isDigit(c)) c = s.charCodeAt(++i);
    else return false;
    if (c === DOT) {
      c = s.charCodeAt(++i);
      if (!isDigit(c)) return false;
      while (isDigit(c)) c = s.charCodeAt(++i);
    }
    if (c === 0x65 || c === 0x45) return false; // exponents: left to the general reader
    if (c !== RBRACE || s.charCodeAt(i + 1) !== RBRACKET) return false;
    ids.push(id);
    // A strict JSON number literal: parseFloat rounds it exactly as JSON.parse does.
    lps.push(parseFloat(s.substring(numberStart, i)));
    this.pos = i + 2;
    return true;
  }

  private spacedPosition(ids: number[], lps: number[]): void {
    const wrapped = this.eat(LBRACKET);
    if (wrapped) this.ws();
    this.expect(LBRACE);
    this.ws();
    this.expect(QUOTE);
    const s = this.s;
    const start = this.pos;
    let id = 0;
    let c = s.charCodeAt(this.pos);
    while (isDigit(c)) {
      id = id * 10 + (c - ZERO); // exact: at most 15 digits (checked below)
      c = s.charCodeAt(++this.pos);
    }
    if (this.pos === start || this.pos - start > 15 || c !== QUOTE) fail();
    this.pos++;
    this.ws();
    this.expect(COLON);
    this.ws();
    const numberStart = this.pos;
    this.number();
    ids.push(id);
    // A strict JSON number literal: parseFloat rounds it exactly as JSON.parse does.
    lps.push(parseFloat(s.substring(numberStart, this.pos)));
    this.ws();
    this.expect(RBRACE);
    if (wrapped) {
      this.ws();
      this.expect(RBRACKET);
    }
  }

  private key(): string {
    const start = this.pos;
    this.skipString();
    const raw = this.s.slice(start + 1, this.pos - 1);
    return raw.includes("\\") ? (JSON.parse(this.s.slice(start, this.pos)) as string) : raw;
  }

  private skipValue(): void {
    const c = this.s.charCodeAt(this.pos);
    if (c === QUOTE) this.skipString();
    else if (c === LBRACE) {
      this.pos++;
      this.ws();
      if (this.eat(RBRACE)) return;
      do {
        this.ws();
        this.skipString();
        this.ws();
        this.expect(COLON);
        this.ws();
        this.skipValue();
        this.ws();
      } while (this.eat(COMMA));
      this.expect(RBRACE);
    } else if (c === LBRACKET) {
      this.pos++;
      this.ws();
      if (this.eat(RBRACKET)) return;
      do {
        this.ws();
        this.skipValue();
        this.ws();
      } while (this.eat(COMMA));
      this.expect(RBRACKET);
    } else if (!this.literal("true") && !this.literal("false") && !this.literal("null")) {
      this.number();
    }
  }

  private skipString(): void {
    const s = this.s;
    this.expect(QUOTE);
    for (;;) {
      const c = s.charCodeAt(this.pos++);
      if (c === QUOTE) return;
      if (!(c >= 0x20)) fail(); // control character, or NaN past the end
      if (c !== BACKSLASH) continue;
      const e = s.charCodeAt(this.pos++);
      if (e === 0x75) {
        for (let k = 0; k < 4; k++) if (!isHex(s.charCodeAt(this.pos++))) fail();
      } else if (!SIMPLE_ESCAPES.has(e)) fail();
    }
  }

  /** `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?` */
  private number(): void {
    const s = this.s;
    let c = s.charCodeAt(this.pos);
    if (c === MINUS) c = s.charCodeAt(++this.pos);
    if (c === ZERO) c = s.charCodeAt(++this.pos);
    else if (isDigit(c)) while (isDigit(c)) c = s.charCodeAt(++this.pos);
    else fail();
    if (c === DOT) {
      c = s.charCodeAt(++this.pos);
      if (!isDigit(c)) fail();
      while (isDigit(c)) c = s.charCodeAt(++this.pos);
    }
    if (c === 0x65 || c === 0x45) {
      c = s.charCodeAt(++this.pos);
      if (c === 0x2b || c === MINUS) c = s.charCodeAt(++this.pos);
      if (!isDigit(c)) fail();
      while (isDigit(c)) c = s.charCodeAt(++this.pos);
    }
  }

  private literal(word: string): boolean {
    if (!this.s.startsWith(word, this.pos)) return false;
    this.pos += word.length;
    return true;
  }

  /** JSON whitespace only: space, tab, line feed, carriage return. */
  private ws(): void {
    const s = this.s;
    for (;;) {
      const c = s.charCodeAt(this.pos);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return;
      this.pos++;
    }
  }

  private eat(c: number): boolean {
    if (this.s.charCodeAt(this.pos) !== c) return false;
    this.pos++;
    return true;
  }

  private expect(c: number): void {
    if (!this.eat(c)) fail();
  }
}
