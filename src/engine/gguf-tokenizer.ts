/**
 * The model's own tokenizer, as vLLM serves with the checkpoint's: llama.cpp's tokenization of
 * the GGUF vocabulary, and the GGUF's chat template (`tokenizer.chat_template`) rendered with the
 * project's Jinja ChatTemplate (tools in the template, or a Hermes prompt where it has none).
 */
import type { ChatMessage } from "../core/wire/group-types";
import { ChatTemplate } from "../inference/tokenizers/index";
import { toolFormatFor } from "../inference/tool-calls";
import type { ApplyChatTemplateOptions, Tokenizer } from "../inference/types";
import type { LlamaModel } from "./llama-api";

/** GGUF token type of the padding rows llama.cpp's converter (and ours) add. */
const UNUSED = 5;

export class GgufTokenizer implements Tokenizer {
  readonly eosTokenId: number;
  readonly bosTokenId: number | null;
  readonly stopTokenIds: readonly number[];
  readonly specialTokenIds: ReadonlySet<number>;
  /** Tokens in the GGUF, padding included (the embedding's rows). */
  readonly vocabSize: number;
  /** The tokenizer's own tokens: the GGUF's without the unused padding at its end. */
  readonly tokenizerVocabSize: number;
  private readonly template: ChatTemplate | null;

  constructor(
    readonly name: string,
    private readonly model: LlamaModel,
  ) {
    const tokens = model.fileInfo.metadata.tokenizer?.ggml?.tokens;
    if (!tokens) throw new Error(`${name}: the GGUF has no tokenizer.ggml.tokens`);
    this.vocabSize = tokens.length;
    const types = model.fileInfo.metadata.tokenizer?.ggml?.token_type ?? [];
    let real = tokens.length;
    while (real > 0 && types[real - 1] === UNUSED) real--;
    this.tokenizerVocabSize = real;
    const eos = model.tokens.eot ?? model.tokens.eos;
    if (eos === null) throw new Error(`${name}: the GGUF names no end-of-sequence token`);
    this.eosTokenId = eos;
    this.bosTokenId = model.tokens.bos;
    const stops = new Set<number>([eos]);
    const special = new Set<number>();
    for (let id = 0; id < this.vocabSize; id++) {
      if (model.isEogToken(id)) stops.add(id);
      if (model.getTokenAttributes(id).control) special.add(id);
    }
    this.stopTokenIds = [...stops];
    this.specialTokenIds = special;
    const source = model.fileInfo.metadata.tokenizer?.chat_template;
    this.template = source
      ? new ChatTemplate(source, {
          bosToken: model.tokens.bosString,
          eosToken: model.tokens.eotString ?? model.tokens.eosString,
        })
      : null;
  }

  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    const ids = this.model.tokenize(text, true);
    const bos = this.bosTokenId;
    if ((options.addSpecialTokens ?? true) && this.model.tokens.shouldPrependBosToken) {
      // A rendered chat template already starts with the BOS text: never add a second one.
      if (bos !== null && ids[0] !== bos) ids.unshift(bos);
    }
    return ids;
  }

  decode(ids: number[], options: { skipSpecialTokens?: boolean } = {}): string {
    if (ids.length === 0) return "";
    if (options.skipSpecialTokens) ids = ids.filter((id) => !this.specialTokenIds.has(id));
    return this.model.detokenize(ids, true);
  }

  applyChatTemplate(messages: ChatMessage[], options: ApplyChatTemplateOptions = {}): string {
    if (!this.template) {
      throw new Error(
        `${this.name} has no chat template (tokenizer.chat_template): use /v1/completions with ` +
          "token ids, or convert the checkpoint with its tokenizer_config.json beside it",
      );
    }
    return this.template.render(messages, {
      ...options,
      toolFormat: toolFormatFor(this.name, options.toolFormat),
    });
  }
}
