/**
 * A table-driven decoder for byte-level BPE tokenizers (Qwen, Llama 3), producing exactly what
 * @huggingface/tokenizers' `decode(ids, { clean_up_tokenization_spaces: false })` produces.
 *
 * Why: the library maps ids to token strings, joins them, spreads the result into code points,
 * looks every one up in an object and only then UTF-8 decodes; for a ~1k-token completion that
 * is most of the env's CPU per rollout. Here each id's bytes are precomputed once, so a decode is
 * a byte copy plus one TextDecoder call per run between added tokens (where the library flushes).
 *
 * Only used when it is provably equivalent: a plain ByteLevel decoder, no end-of-word suffix, and
 * every id of the call is in range with a token made only of byte characters (or an added token).
 * Otherwise `decode` returns null and the caller uses the library.
 */

/** The parts of a byte-level tokenizer.json (see byteLevelSource in hf-tokenizer.ts) the table is built from. */
export interface ByteLevelSource {
  model: { vocab: readonly (string | null | undefined)[] };
  /** Token strings dropped by `skip_special_tokens` (the library filters by string). */
  special_tokens: readonly string[];
  decoder: {
    config: { type?: unknown };
    /** GPT-2 byte alphabet: character → byte. */
    byte_decoder?: Record<string, number | string>;
    /** Tokens the library emits verbatim (between separately decoded byte runs). */
    added_tokens?: readonly { content: string }[];
    end_of_word_suffix?: string | null;
  } | null;
}

const UNSAFE = 0;
const BYTES = 1;
const ADDED = 2;

export class ByteLevelDecodeTable {
  private scratch = new Uint8Array(1 << 14);
  private readonly utf8 = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

  private constructor(
    /** Per id: UNSAFE, BYTES or ADDED. */
    private readonly kind: Uint8Array,
    /** Per id: 1 when `skip_special_tokens` drops it. */
    private readonly special: Uint8Array,
    /** Byte pieces of all BYTES ids, back to back; id i owns pool[offset[i] .. offset[i+1]). */
    private readonly pool: Uint8Array,
    private readonly offset: Uint32Array,
    /** Verbatim text of ADDED ids. */
    private readonly addedText: ReadonlyMap<number, string>,
  ) {}

  /** null when the tokenizer is not a plain byte-level one (then nothing here applies). */
  static from(source: ByteLevelSource): ByteLevelDecodeTable | null {
    const decoder = source.decoder;
    if (decoder?.config.type !== "ByteLevel" || !decoder.byte_decoder) return null;
    if (decoder.end_of_word_suffix) return null;
    const byteOf = new Int16Array(0x10000).fill(-1);
    for (const [char, value] of Object.entries(decoder.byte_decoder)) {
      const byte = Number(value);
      if (char.length === 1 && Number.isInteger(byte) && byte >= 0 && byte < 256) {
        byteOf[char.charCodeAt(0)] = byte;
      }
    }
    const addedContent = new Set((decoder.added_tokens ?? []).map((t) => t.content));
    const specialContent = new Set(source.special_tokens);
    const vocab = source.model.vocab;
    const size = vocab.length;
    const kind = new Uint8Array(size);
    const special = new Uint8Array(size);
    const offset = new Uint32Array(size + 1);
    const addedText = new Map<number, string>();
    let poolSize = 0;
    for (let id = 0; id < size; id++) {
      const token = vocab[id];
      if (typeof token === "string") {
        if (specialContent.has(token)) special[id] = 1;
        if (addedContent.has(token)) {
          kind[id] = ADDED;
          addedText.set(id, token);
        } else if (isByteToken(token, byteOf)) {
          kind[id] = BYTES;
          poolSize += token.length;
        }
      }
    }
    const pool = new Uint8Array(poolSize);
    let at = 0;
    for (let id = 0; id < size; id++) {
      offset[id] = at;
      if (kind[id] !== BYTES) continue;
      const token = vocab[id] as string;
      for (let i = 0; i < token.length; i++) pool[at++] = byteOf[token.charCodeAt(i)]!;
    }
    offset[size] = at;
    return new ByteLevelDecodeTable(kind, special, pool, offset, addedText);
  }

  /** The decoded text, or null when some id is not covered (the caller then uses the library). */
  decode(ids: readonly number[], skipSpecialTokens: boolean): string | null {
    const { kind, special, pool, offset } = this;
    let needed = 0;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (!Number.isInteger(id) || id < 0 || id >= kind.length || kind[id] === UNSAFE) return null;
      if (kind[id] === BYTES) needed += offset[id + 1]! - offset[id]!;
    }
    if (this.scratch.length < needed) this.scratch = new Uint8Array(needed * 2);
    const scratch = this.scratch;
    let text = "";
    let runStart = 0;
    let at = 0;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (skipSpecialTokens && special[id] === 1) continue;
      if (kind[id] === ADDED) {
        // The library decodes the bytes before an added token on their own, then appends it.
        if (at > runStart) text += this.utf8.decode(scratch.subarray(runStart, at));
        text += this.addedText.get(id)!;
        runStart = at;
        continue;
      }
      for (let p = offset[id]!, end = offset[id + 1]!; p < end; p++) scratch[at++] = pool[p]!;
    }
    if (at > runStart) text += this.utf8.decode(scratch.subarray(runStart, at));
    return text;
  }
}

/** Every UTF-16 unit is a byte character (so code points and units coincide, no surrogates). */
function isByteToken(token: string, byteOf: Int16Array): boolean {
  for (let i = 0; i < token.length; i++) if (byteOf[token.charCodeAt(i)]! < 0) return false;
  return true;
}
