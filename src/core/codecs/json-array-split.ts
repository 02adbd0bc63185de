/**
 * Splits the text of a JSON array, arriving in chunks, into the text of its elements without
 * parsing them, so a long list is parsed (and checked) one element at a time: memory holds one
 * element's text, not the whole document's object graph. Only the array's own syntax is checked
 * here (brackets, strings, commas); each element is checked by JSON.parse.
 */
import { concatBytes } from "./bytes";

/** The body is not a JSON array (its first non-blank byte is not `[`). */
export class NotAnArray extends Error {}

/** The array's own syntax is broken (an element missing between commas, text after the end…). */
export class ArraySyntaxError extends Error {}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

function isBlank(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

type State = "before" | "first" | "next" | "element" | "done";

export class JsonArraySplitter {
  private state: State = "before";
  private depth = 0;
  private inString = false;
  private escaped = false;
  private pieces: Uint8Array[] = [];
  /** Elements emitted so far. */
  count = 0;

  /**
   * Feeds the next chunk; calls `onElement` with each element completed in it (its UTF-8 text).
   * Throws NotAnArray or ArraySyntaxError.
   */
  push(chunk: Uint8Array, onElement: (text: Uint8Array) => void): void {
    let start = -1; // where the current element begins in this chunk
    if (this.state === "element") start = 0;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (this.state === "element") {
        if (this.inString) {
          if (this.escaped) this.escaped = false;
          else if (b === BACKSLASH) this.escaped = true;
          else if (b === QUOTE) this.inString = false;
          continue;
        }
        if (b === QUOTE) this.inString = true;
        else if (b === OPEN_BRACKET || b === OPEN_BRACE) this.depth++;
        else if (b === CLOSE_BRACE || (b === CLOSE_BRACKET && this.depth > 0)) this.depth--;
        else if (this.depth === 0 && (b === COMMA || b === CLOSE_BRACKET)) {
          onElement(this.take(chunk.subarray(start, i)));
          this.count++;
          start = -1;
          this.state = b === COMMA ? "next" : "done";
        }
        if (this.depth < 0) throw new ArraySyntaxError("unbalanced brackets");
        continue;
      }
      if (isBlank(b)) continue;
      switch (this.state) {
        case "before":
          if (b !== OPEN_BRACKET) throw new NotAnArray();
          this.state = "first";
          break;
        case "first":
        case "next":
          if (b === CLOSE_BRACKET && this.state === "first") {
            this.state = "done";
            break;
          }
          if (b === COMMA || b === CLOSE_BRACKET) {
            throw new ArraySyntaxError(
              "a list element is missing (two commas, or a comma before ']')",
            );
          }
          this.state = "element";
          start = i;
          i--; // the element's first byte is read again in the element state
          break;
        case "done":
          throw new ArraySyntaxError("text after the end of the list");
      }
    }
    if (this.state === "element" && start >= 0) this.keep(chunk.subarray(start));
  }

  /** Ends the input: throws ArraySyntaxError when the array was not closed. */
  end(): void {
    if (this.state === "before") throw new NotAnArray();
    if (this.state !== "done") throw new ArraySyntaxError("the list is not closed with ']'");
  }

  private keep(piece: Uint8Array): void {
    // A copy: the chunk it came from is not kept alive for one element's sake.
    this.pieces.push(piece.slice());
  }

  private take(last: Uint8Array): Uint8Array {
    if (this.pieces.length === 0) return last;
    const out = concatBytes([...this.pieces, last]);
    this.pieces = [];
    return out;
  }
}
