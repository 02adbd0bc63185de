import type { ChatMessage } from "../../core/group-types";
import type { Tokenizer, ToolDefinition } from "../inference/types";
import { ByteLevelDecodeTable, type ByteLevelSource } from "./byte-level-decode";
import { ChatTemplate } from "./chat-template";

/** The part of @lenml/tokenizers' PreTrainedTokenizer this wrapper relies on. */
export interface LenmlTokenizer extends ByteLevelSource {
  encode(text: string, options?: { add_special_tokens?: boolean }): number[];
  decode(
    ids: number[],
    options?: { skip_special_tokens?: boolean; clean_up_tokenization_spaces?: boolean },
  ): string;
  model: ByteLevelSource["model"] & { tokens_to_ids: Map<string, number> };
  all_special_ids: number[];
}

export interface PackagedTokenizerSpec {
  name: string;
  /** The end-of-turn token a chat model emits (what the simulator appends, what marks "stop"). */
  eosToken: string;
  bosToken: string | null;
  /** Prepend BOS on encode(addSpecialTokens) like the current HF tokenizer of this family. */
  addBos: boolean;
  /** Every token that ends generation. */
  stopTokens: string[];
  chatTemplate: string;
}

/** A packaged HF tokenizer behind the project's Tokenizer interface. */
export class PackagedTokenizer implements Tokenizer {
  readonly name: string;
  readonly eosTokenId: number;
  readonly bosTokenId: number | null;
  readonly stopTokenIds: readonly number[];
  readonly specialTokenIds: ReadonlySet<number>;
  private readonly template: ChatTemplate;
  /** Built on first decode (not at load: a Worker that never decodes pays nothing). */
  private byteLevel: ByteLevelDecodeTable | null | undefined;

  constructor(
    private readonly inner: LenmlTokenizer,
    private readonly spec: PackagedTokenizerSpec,
  ) {
    this.name = spec.name;
    this.eosTokenId = this.requireId(spec.eosToken);
    this.bosTokenId = spec.bosToken === null ? null : this.requireId(spec.bosToken);
    this.stopTokenIds = spec.stopTokens.map((token) => this.requireId(token));
    this.specialTokenIds = new Set(inner.all_special_ids);
    this.template = new ChatTemplate(spec.chatTemplate, {
      bosToken: spec.bosToken,
      eosToken: spec.eosToken,
    });
  }

  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    const addSpecialTokens = options.addSpecialTokens ?? true;
    const ids = this.inner.encode(text, { add_special_tokens: addSpecialTokens });
    // A rendered chat template already starts with the BOS text: never add a second one.
    if (addSpecialTokens && this.spec.addBos && this.bosTokenId !== null) {
      if (ids[0] !== this.bosTokenId) ids.unshift(this.bosTokenId);
    }
    return ids;
  }

  decode(ids: number[], options: { skipSpecialTokens?: boolean } = {}): string {
    if (ids.length === 0) return "";
    const skipSpecialTokens = options.skipSpecialTokens ?? false;
    if (this.byteLevel === undefined) this.byteLevel = ByteLevelDecodeTable.from(this.inner);
    const fast = this.byteLevel?.decode(ids, skipSpecialTokens);
    if (fast !== undefined && fast !== null) return fast;
    // No whitespace clean-up: decode must be the exact inverse of what the server sampled.
    return this.inner.decode(ids, {
      skip_special_tokens: skipSpecialTokens,
      clean_up_tokenization_spaces: false,
    });
  }

  applyChatTemplate(
    messages: ChatMessage[],
    options: {
      addGenerationPrompt?: boolean;
      tools?: ToolDefinition[];
      enableThinking?: boolean;
    } = {},
  ): string {
    return this.template.render(messages, options);
  }

  tokenId(token: string): number | undefined {
    return this.inner.model.tokens_to_ids.get(token);
  }

  private requireId(token: string): number {
    const id = this.inner.model.tokens_to_ids.get(token);
    if (id === undefined) throw new Error(`tokenizer ${this.spec.name}: unknown token ${token}`);
    return id;
  }
}
