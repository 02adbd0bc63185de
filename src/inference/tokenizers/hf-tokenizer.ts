import { Tokenizer as HfCore } from "@huggingface/tokenizers";
import type { ChatMessage } from "../../core/wire/group-types";
import { toolFormatFor } from "../tool-calls";
import type { ApplyChatTemplateOptions, Tokenizer } from "../types";
import { ByteLevelDecodeTable, type ByteLevelSource } from "./byte-level-decode";
import { ChatTemplate } from "./chat-template";

/** The two Hugging Face files a tokenizer is made of, parsed. */
export interface TokenizerFiles {
  tokenizerJson: TokenizerJson;
  tokenizerConfig: TokenizerConfig;
}

export interface TokenizerJson {
  model: { type?: string; vocab?: Record<string, number> | unknown };
  added_tokens?: { id: number; content: string; special?: boolean }[];
  decoder?: { type?: string } | null;
  [key: string]: unknown;
}

type TokenSpec = string | { content?: string } | null | undefined;

export interface TokenizerConfig {
  chat_template?: string | { name: string; template: string }[] | null;
  bos_token?: TokenSpec;
  eos_token?: TokenSpec;
  [key: string]: unknown;
}

/** End-of-turn tokens: when the chat template uses one, generation ends there (not at eos). */
const TURN_END_TOKENS = ["<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|eom_id|>"];
/** End-of-document tokens that also stop generation when the vocabulary has them. */
const DOCUMENT_END_TOKENS = ["<|endoftext|>", "<|end_of_text|>", "<eos>", "</s>"];

function tokenText(spec: TokenSpec): string | null {
  if (typeof spec === "string") return spec;
  if (spec && typeof spec.content === "string") return spec.content;
  return null;
}

/** The default chat template (a config may list named templates, as newer HF files do). */
function chatTemplateOf(config: TokenizerConfig): string {
  const template = config.chat_template;
  if (typeof template === "string") return template;
  if (Array.isArray(template)) return template.find((t) => t.name === "default")?.template ?? "";
  return "";
}

const GPT2_BYTE_DECODER = (() => {
  // GPT-2's reversible byte ↔ printable-character map (byte-level BPE vocabularies use it).
  const bytes: number[] = [];
  for (let b = 33; b <= 126; b++) bytes.push(b);
  for (let b = 161; b <= 172; b++) bytes.push(b);
  for (let b = 174; b <= 255; b++) bytes.push(b);
  const chars = [...bytes];
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    if (!bytes.includes(b)) {
      bytes.push(b);
      chars.push(256 + extra++);
    }
  }
  const map: Record<string, number> = {};
  bytes.forEach((b, i) => {
    map[String.fromCharCode(chars[i]!)] = b;
  });
  return map;
})();

/**
 * Any Hugging Face tokenizer (tokenizer.json + tokenizer_config.json) behind the project's
 * Tokenizer interface: ids from @huggingface/tokenizers, chat templates from @huggingface/jinja.
 */
export class HfTokenizer implements Tokenizer {
  readonly eosTokenId: number;
  readonly bosTokenId: number | null;
  readonly stopTokenIds: readonly number[];
  readonly specialTokenIds: ReadonlySet<number>;
  /** The `chat_template` source ("" when the files have none). */
  readonly chatTemplateSource: string;
  private readonly core: HfCore;
  private readonly bosToken: string | null;
  private readonly template: ChatTemplate | null;
  private byteLevel: ByteLevelDecodeTable | null | undefined;
  /** encode(addSpecialTokens) starts with BOS even where the post-processor does not add it. */
  private readonly addBos: boolean;

  constructor(
    readonly name: string,
    private readonly files: TokenizerFiles,
    options: { addBos?: boolean } = {},
  ) {
    const { tokenizerJson, tokenizerConfig } = files;
    this.core = new HfCore(tokenizerJson, tokenizerConfig);
    this.chatTemplateSource = chatTemplateOf(tokenizerConfig);
    const configEos = tokenText(tokenizerConfig.eos_token);
    const turnEnd = TURN_END_TOKENS.find(
      (token) => this.chatTemplateSource.includes(token) && this.tokenId(token) !== undefined,
    );
    const eos = turnEnd ?? configEos;
    if (eos === null) throw new Error(`tokenizer ${name}: tokenizer_config.json has no eos_token`);
    this.eosTokenId = this.requireId(eos);
    this.bosToken = tokenText(tokenizerConfig.bos_token);
    this.bosTokenId = this.bosToken === null ? null : this.requireId(this.bosToken);
    // Otherwise the post-processor decides, as in transformers 5 (which ignores add_bos_token).
    this.addBos = options.addBos ?? false;
    const stops = [eos, configEos, ...DOCUMENT_END_TOKENS].filter(
      (token): token is string => token !== null && this.tokenId(token) !== undefined,
    );
    this.stopTokenIds = [...new Set(stops.map((token) => this.requireId(token)))];
    this.specialTokenIds = new Set(
      (tokenizerJson.added_tokens ?? []).filter((t) => t.special).map((t) => t.id),
    );
    this.template = this.chatTemplateSource
      ? new ChatTemplate(this.chatTemplateSource, { bosToken: this.bosToken, eosToken: eos })
      : null;
  }

  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    const addSpecialTokens = options.addSpecialTokens ?? true;
    const ids = this.core.encode(text, { add_special_tokens: addSpecialTokens }).ids;
    if (!addSpecialTokens || this.bosTokenId === null) return ids;
    if (this.addBos && ids[0] !== this.bosTokenId) ids.unshift(this.bosTokenId);
    // A rendered chat template already starts with the BOS text: never add a second one.
    if (ids[0] === this.bosTokenId && ids[1] === this.bosTokenId) {
      if (text.startsWith(this.bosToken as string)) ids.shift();
    }
    return ids;
  }

  decode(ids: number[], options: { skipSpecialTokens?: boolean } = {}): string {
    if (ids.length === 0) return "";
    const skipSpecialTokens = options.skipSpecialTokens ?? false;
    if (this.byteLevel === undefined) {
      this.byteLevel = ByteLevelDecodeTable.from(byteLevelSource(this.files.tokenizerJson));
    }
    const fast = this.byteLevel?.decode(ids, skipSpecialTokens);
    if (fast !== undefined && fast !== null) return fast;
    // No whitespace clean-up: decode must be the exact inverse of what the server sampled.
    return this.core.decode(ids, {
      skip_special_tokens: skipSpecialTokens,
      clean_up_tokenization_spaces: false,
    });
  }

  applyChatTemplate(
    messages: ChatMessage[],
    options: ApplyChatTemplateOptions & {
      /** Extra template variables (HF's chat_template_kwargs), e.g. `date_string`. */
      variables?: Record<string, unknown>;
    } = {},
  ): string {
    if (!this.template) {
      throw new Error(`tokenizer ${this.name}: tokenizer_config.json has no chat_template`);
    }
    return this.template.render(messages, {
      ...options,
      toolFormat: toolFormatFor(this.name, options.toolFormat),
    });
  }

  tokenId(token: string): number | undefined {
    return this.core.token_to_id(token);
  }

  /** One more than the largest id of the vocabulary and the added tokens. */
  get vocabSize(): number {
    const { model, added_tokens: added = [] } = this.files.tokenizerJson;
    const ids = model.vocab && typeof model.vocab === "object" ? Object.values(model.vocab) : [];
    let max = -1;
    for (const id of [...ids, ...added.map((t) => t.id)])
      if (typeof id === "number" && id > max) max = id;
    return max + 1;
  }

  private requireId(token: string): number {
    const id = this.tokenId(token);
    if (id === undefined) throw new Error(`tokenizer ${this.name}: unknown token ${token}`);
    return id;
  }
}

/** The decode-table input for a tokenizer.json (decoder null when the fast path does not apply). */
export function byteLevelSource(tokenizerJson: TokenizerJson): ByteLevelSource {
  const vocab: (string | undefined)[] = [];
  const modelVocab = tokenizerJson.model.vocab;
  if (tokenizerJson.model.type === "BPE" && modelVocab && typeof modelVocab === "object") {
    for (const [token, id] of Object.entries(modelVocab as Record<string, number>))
      vocab[id] = token;
  }
  const added = tokenizerJson.added_tokens ?? [];
  for (const token of added) vocab[token.id] = token.content;
  const plainByteLevel = tokenizerJson.decoder?.type === "ByteLevel";
  return {
    model: { vocab },
    special_tokens: added.filter((t) => t.special).map((t) => t.content),
    decoder: plainByteLevel
      ? { config: { type: "ByteLevel" }, byte_decoder: GPT2_BYTE_DECODER, added_tokens: added }
      : null,
  };
}
