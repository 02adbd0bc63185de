import type { ChatMessage } from "../core/wire/group-types";
import { tokenRequestFrom } from "./backends/sampling";
import type { ChatWithTokens, TokenGenerationRequest, TokenSupport } from "./backends/types";
import { loadTokenizer } from "./tokenizers/lazy";
import {
  parseToolCalls,
  requestedToolFormat,
  ToolCallTextLookup,
  toolFormatFor,
} from "./tool-calls";
import type {
  ChatChoice,
  ChatCompletionParams,
  ChatCompletionResult,
  CompletionParams,
  CompletionResult,
  ManagedServer,
  ManagedServerState,
  SequenceNode,
  Tokenizer,
  TokensAndLogprobs,
} from "./types";

const THINK_OPEN = "<think>";
const THINK_CLOSE = "</think>";
const THINK_OPEN_PLACEHOLDER = "__MNGD_THINK__";
const THINK_CLOSE_PLACEHOLDER = "__MNGD_ENDTHINK__";

export interface ManagedServerDeps {
  /**
   * null only for text-only backends whose model has no packaged tokenizer. A LazyTokenizer is
   * loaded only when a call renders or tokenizes on the client.
   */
  tokenizer: Tokenizer | null;
  modelName: string;
  tokenSupport: TokenSupport;
  /** Token-in/token-out generation on the bound server. */
  generate(request: TokenGenerationRequest, split: "train" | "eval"): Promise<TokensAndLogprobs>;
  /** Text calls, used only when the backend has no token API (tokenSupport "none"). */
  chatCompletion(params: ChatCompletionParams): Promise<ChatCompletionResult>;
  completion(params: CompletionParams): Promise<CompletionResult>;
  /**
   * Present when the bound backend renders the chat template itself and returns the prompt ids
   * it used with the sampled ids and logprobs (stock vLLM ≥ 0.10.2): chats then need no local
   * tokenizer. Resolves null when the server turns out unable (an older vLLM); the client path
   * is used from then on.
   */
  chatWithTokens?(params: ChatCompletionParams): Promise<ChatWithTokens | null>;
  preserveThinkBlocks?: boolean;
  /** Where an earlier instance left off (the inference proxy keeps it between requests). */
  state?: ManagedServerState;
}

interface TrackedChoice {
  index: number;
  /** Completion text without the trailing stop token. */
  text: string;
  /** The same, special tokens kept (what a template must replay). */
  rawText: string;
  finishReason: string;
}

/**
 * Tracks prompt + completion tokens, masks and logprobs for every completion (docs/INFERENCE.md, ManagedServer).
 * One instance per trajectory/group; not safe for concurrent calls (prefix matching would race).
 */
export class TrackingManagedServer implements ManagedServer {
  private nodes: SequenceNode[];
  private readonly toolText: ToolCallTextLookup;
  private serverTemplates: boolean;

  constructor(private readonly deps: ManagedServerDeps) {
    this.serverTemplates = deps.chatWithTokens !== undefined && deps.tokenSupport !== "none";
    this.nodes = deps.state?.nodes.map(cloneNode) ?? [];
    this.toolText = ToolCallTextLookup.fromRecord(deps.state?.tool_texts ?? {});
  }

  getState(): ManagedServerState {
    return { nodes: this.nodes.map(cloneNode), tool_texts: this.toolText.toRecord() };
  }

  reset(): void {
    this.nodes = [];
    this.toolText.clear();
  }

  async chatCompletion(params: ChatCompletionParams): Promise<ChatCompletionResult> {
    const tools = params.tools && params.tools.length > 0 ? params.tools : undefined;
    const toolChoice = params.tool_choice ?? (tools ? "auto" : "none");
    const last = params.messages.at(-1);
    const addGenerationPrompt = last?.role !== "assistant";
    if (this.deps.tokenSupport === "none") return this.textOnlyChat(params, addGenerationPrompt);
    // Tools stay on the client: stock vLLM answers 400 to tools without
    // --enable-auto-tool-choice, and its parser's tool_calls cannot be replayed verbatim.
    if (
      this.serverTemplates &&
      addGenerationPrompt &&
      !tools &&
      !this.isContinuation(params.messages)
    ) {
      const answer = await this.serverTemplatedChat(params);
      if (answer) return answer;
    }
    const tokenizer = await this.requireTokenizer();
    const format = toolFormatFor(tokenizer.name, requestedToolFormat(params.tool_format));

    const messages = this.toolText
      .toTemplateMessages(params.messages, format)
      .map((message) => (this.deps.preserveThinkBlocks ? message : hideThinkTags(message)));
    const rendered = tokenizer.applyChatTemplate(messages, {
      addGenerationPrompt,
      tools,
      enableThinking: enableThinkingOf(params),
      toolFormat: format.name,
    });
    const prompt = this.deps.preserveThinkBlocks ? rendered : restoreThinkTags(rendered);

    const tracked = await this.generateAndTrack(prompt, params);
    const choices: ChatChoice[] = tracked.map((choice) => {
      const parsed = tools && toolChoice !== "none" ? parseToolCalls(choice.rawText, format) : null;
      if (parsed) {
        this.toolText.remember(parsed.toolCalls, choice.rawText);
        return {
          index: choice.index,
          message: { role: "assistant", content: parsed.content, tool_calls: parsed.toolCalls },
          finish_reason: "tool_calls",
        };
      }
      return {
        index: choice.index,
        message: { role: "assistant", content: tools ? choice.rawText : choice.text },
        finish_reason: choice.finishReason,
      };
    });
    return { id: crypto.randomUUID(), model: this.deps.modelName, choices };
  }

  async completion(params: CompletionParams): Promise<CompletionResult> {
    if (this.deps.tokenSupport === "none") return this.textOnlyCompletion(params);
    const tracked = await this.generateAndTrack(params.prompt, params);
    return {
      id: crypto.randomUUID(),
      model: this.deps.modelName,
      choices: tracked.map((choice) => ({
        index: choice.index,
        text: choice.text,
        finish_reason: choice.finishReason,
      })),
    };
  }

  /**
   * The server renders the chat and returns its prompt ids, sampled ids and logprobs: each choice
   * becomes a node exactly as returned, and no tokenizer is loaded. The prompt text is not known
   * here, so full_text stays empty until a client-path call needs it (fillServerNodeTexts).
   */
  private async serverTemplatedChat(
    params: ChatCompletionParams,
  ): Promise<ChatCompletionResult | null> {
    const answer = await this.deps.chatWithTokens?.(withThinkingKwargs(params));
    if (!answer) {
      this.serverTemplates = false;
      return null;
    }
    const { chat, tokens } = answer;
    const prompt = tokens.promptTokens;
    chat.choices.forEach((choice, index) => {
      const output = tokens.outputTokens[index] ?? [];
      this.nodes.push({
        full_text: "",
        tokens: [...prompt, ...output],
        masked_tokens: [...prompt.map(() => -100), ...output],
        logprobs: [...prompt.map(() => 1.0), ...(tokens.outputLogprobs[index] ?? [])],
        metadata: {
          finish_reason: tokens.finishReasons[index] ?? choice.finish_reason,
          prompt_templated_by_server: true,
        },
      });
    });
    return { ...chat, model: chat.model || this.deps.modelName };
  }

  /**
   * A later turn of a conversation this server already tracks. Its exactness rests on reusing the
   * earlier node's tokens as the prefix, which only the client path can guarantee (a server's
   * template may rewrite history, e.g. drop earlier think blocks, or re-tokenize the reply
   * differently), so continuations take the client path.
   */
  private isContinuation(messages: ChatMessage[]): boolean {
    return (
      this.nodes.length > 0 &&
      messages.some((message) => message.role === "assistant" || message.role === "tool")
    );
  }

  /** Server-rendered nodes get their text (the decoded ids) so the client path can extend them. */
  private fillServerNodeTexts(tokenizer: Tokenizer): void {
    for (const node of this.nodes) {
      if (node.full_text === "" && node.metadata.prompt_templated_by_server === true) {
        node.full_text = tokenizer.decode(node.tokens);
      }
    }
  }

  /**
   * Extension: the first node whose full_text prefixes the prompt is continued with its exact
   * tokens, masks and logprobs (earlier completions stay trainable); only the new suffix is
   * tokenized. Chat and completion modes behave the same (Atropos masks earlier completions in
   * completion mode; see docs/INFERENCE.md).
   */
  private async generateAndTrack(
    prompt: string,
    params: ChatCompletionParams | CompletionParams,
  ): Promise<TrackedChoice[]> {
    const tokenizer = await this.requireTokenizer();
    this.fillServerNodeTexts(tokenizer);
    const extendingIndex = this.nodes.findIndex(
      (node) =>
        node.full_text.length > 0 && node.tokens.length > 0 && prompt.startsWith(node.full_text),
    );
    const extending = extendingIndex >= 0 ? this.nodes[extendingIndex] : undefined;
    let inputIds: number[];
    let prefixMasks: number[];
    let prefixLogprobs: number[];
    if (extending) {
      const suffixIds = tokenizer.encode(prompt.slice(extending.full_text.length), {
        addSpecialTokens: false,
      });
      inputIds = [...extending.tokens, ...suffixIds];
      prefixMasks = [...extending.masked_tokens, ...suffixIds.map(() => -100)];
      prefixLogprobs = [...extending.logprobs, ...suffixIds.map(() => 1.0)];
    } else {
      inputIds = tokenizer.encode(prompt, { addSpecialTokens: true });
      prefixMasks = inputIds.map(() => -100);
      prefixLogprobs = inputIds.map(() => 1.0);
    }

    const result = await this.deps.generate(
      tokenRequestFrom(inputIds, params),
      params.split ?? "train",
    );
    const stopIds = tokenizer.stopTokenIds ?? [tokenizer.eosTokenId];
    const tracked: TrackedChoice[] = [];
    result.outputTokens.forEach((output, index) => {
      const finishReason = result.finishReasons[index] ?? "stop";
      const logprobs = result.logprobsUnavailable
        ? []
        : [...prefixLogprobs, ...fitLogprobs(result.outputLogprobs[index] ?? [], output.length)];
      const body =
        output.length > 0 && stopIds.includes(output.at(-1) ?? -1) ? output.slice(0, -1) : output;
      // One decode of ~1k tokens per choice instead of three: the stop token is a single special
      // token (decodes on its own), and skipping special tokens only matters if the body has any.
      const rawText = tokenizer.decode(body);
      const outputText =
        body.length < output.length
          ? rawText + tokenizer.decode(output.slice(body.length))
          : rawText;
      const special = tokenizer.specialTokenIds;
      const text =
        special && !body.some((id) => special.has(id))
          ? rawText
          : tokenizer.decode(body, { skipSpecialTokens: true });
      const node: SequenceNode = {
        full_text: prompt + outputText,
        tokens: [...inputIds, ...output],
        masked_tokens: [...prefixMasks, ...output],
        logprobs,
        metadata: {
          finish_reason: finishReason,
          ...(result.logprobsUnavailable ? { logprobs_unavailable: true } : {}),
        },
      };
      if (extending && index === 0) this.nodes[extendingIndex] = node;
      else this.nodes.push(node);

      tracked.push({ index, text, rawText, finishReason });
    });
    return tracked;
  }

  /** OpenAI-compatible APIs give no token ids: nodes say so and carry no tokens at all. */
  private async textOnlyChat(
    params: ChatCompletionParams,
    addGenerationPrompt: boolean,
  ): Promise<ChatCompletionResult> {
    const { tool_format: _ownField, ...forwarded } = params;
    const result = await this.deps.chatCompletion(forwarded);
    // e.g. "gpt-4o": no tokenizer to load, nodes carry text only anyway.
    const tokenizer = this.deps.tokenizer
      ? await loadTokenizer(this.deps.tokenizer).catch(() => null)
      : null;
    const prompt = tokenizer
      ? tokenizer.applyChatTemplate(params.messages, {
          addGenerationPrompt,
          tools: params.tools,
          enableThinking: enableThinkingOf(params),
        })
      : params.messages.map((m) => `${m.role}:${String(m.content ?? "")}`).join("\n\n") +
        "\n\nassistant:";
    for (const choice of result.choices) {
      this.nodes.push(textOnlyNode(prompt + (choice.message.content ?? ""), choice.finish_reason));
    }
    return result;
  }

  private async textOnlyCompletion(params: CompletionParams): Promise<CompletionResult> {
    const result = await this.deps.completion(params);
    for (const choice of result.choices) {
      this.nodes.push(textOnlyNode(params.prompt + choice.text, choice.finish_reason));
    }
    return result;
  }

  private requireTokenizer(): Promise<Tokenizer> {
    if (!this.deps.tokenizer)
      throw new Error("ManagedServer: a tokenizer is required for token tracking");
    return loadTokenizer(this.deps.tokenizer);
  }
}

function textOnlyNode(fullText: string, finishReason: string): SequenceNode {
  return {
    full_text: fullText,
    tokens: [],
    masked_tokens: [],
    logprobs: [],
    metadata: { finish_reason: finishReason, tokens_unavailable: true },
  };
}

/** The server's template reads enable_thinking from chat_template_kwargs (vLLM). */
function withThinkingKwargs(params: ChatCompletionParams): ChatCompletionParams {
  const enableThinking = enableThinkingOf(params);
  if (enableThinking === undefined) return params;
  const { enable_thinking: _dropped, ...rest } = params;
  const kwargs =
    params.chat_template_kwargs && typeof params.chat_template_kwargs === "object"
      ? params.chat_template_kwargs
      : {};
  return { ...rest, chat_template_kwargs: { ...kwargs, enable_thinking: enableThinking } };
}

function enableThinkingOf(params: ChatCompletionParams): boolean | undefined {
  if (typeof params.enable_thinking === "boolean") return params.enable_thinking;
  const kwargs = params.chat_template_kwargs;
  if (kwargs && typeof kwargs === "object" && "enable_thinking" in kwargs) {
    const value = (kwargs as { enable_thinking: unknown }).enable_thinking;
    if (typeof value === "boolean") return value;
  }
  return undefined;
}

/** Logprobs padded with 1.0 / truncated to the output length (Atropos does the same). */
function fitLogprobs(logprobs: number[], length: number): number[] {
  if (logprobs.length >= length) return logprobs.slice(0, length);
  return [...logprobs, ...Array.from({ length: length - logprobs.length }, () => 1.0)];
}

/** Templates that strip earlier think blocks would break prefix matching: hide them. */
function hideThinkTags(message: ChatMessage): ChatMessage {
  if (message.role !== "assistant" || typeof message.content !== "string") return message;
  return {
    ...message,
    content: message.content
      .replaceAll(THINK_OPEN, THINK_OPEN_PLACEHOLDER)
      .replaceAll(THINK_CLOSE, THINK_CLOSE_PLACEHOLDER),
  };
}

function restoreThinkTags(text: string): string {
  return text
    .replaceAll(THINK_OPEN_PLACEHOLDER, THINK_OPEN)
    .replaceAll(THINK_CLOSE_PLACEHOLDER, THINK_CLOSE);
}

function cloneNode(node: SequenceNode): SequenceNode {
  return {
    full_text: node.full_text,
    tokens: [...node.tokens],
    masked_tokens: [...node.masked_tokens],
    logprobs: [...node.logprobs],
    metadata: { ...node.metadata },
  };
}
