/**
 * Small in-process test doubles for the inference layer: a character-level tokenizer with a
 * ChatML-like template, and an InferenceClient/ManagedServer that answer through the real
 * simulator responders (src/sim/responders) and track sequences with ManagedServer semantics
 * (prompt masked -100 / logprob 1.0, extension of a node whose text prefixes the new prompt).
 */

import { hashString, SeededRng } from "../../../src/core/codecs/rng";
import type { ChatMessage, ToolCall } from "../../../src/core/wire/group-types";
import type {
  ChatCompletionParams,
  ChatCompletionResult,
  CompletionParams,
  CompletionResult,
  InferenceClient,
  ManagedServer,
  SequenceNode,
  Tokenizer,
  TokensAndLogprobs,
} from "../../../src/inference/types";
import { respond } from "../../../src/sim/responders";

export class CharTokenizer implements Tokenizer {
  readonly name = "char-test";
  readonly eosTokenId = 0;
  readonly bosTokenId = null;
  encode(text: string): number[] {
    return [...text].map((c) => c.codePointAt(0)!);
  }
  decode(ids: number[]): string {
    return ids
      .filter((i) => i !== this.eosTokenId)
      .map((i) => String.fromCodePoint(i))
      .join("");
  }
  applyChatTemplate(
    messages: ChatMessage[],
    options: { addGenerationPrompt?: boolean } = {},
  ): string {
    let out = "";
    for (const m of messages) {
      const content = typeof m.content === "string" ? m.content : "";
      if (m.role === "tool")
        out += `<|im_start|>user\n<tool_response>\n${content}\n</tool_response><|im_end|>\n`;
      else out += `<|im_start|>${m.role}\n${content}<|im_end|>\n`;
    }
    if (options.addGenerationPrompt) out += "<|im_start|>assistant\n";
    return out;
  }
}

export interface FakeOptions {
  correctProbability?: number;
  seed?: number;
  /** Throw for chat (non-managed) calls whose prompt matches. */
  failWhen?: (prompt: string, params: ChatCompletionParams) => boolean;
}

function choiceText(
  prompt: string,
  index: number,
  options: FakeOptions,
  requestSeed?: number,
): string {
  const rng = new SeededRng(
    hashString(`${options.seed ?? 0}|${requestSeed ?? "-"}|${index}|${prompt}`),
  );
  return respond({
    promptText: prompt,
    rng: () => rng.next(),
    correctProbability: options.correctProbability ?? 0.5,
  }).text;
}

function logprobsFor(tokens: number[]): number[] {
  return tokens.map((t, i) => -((t * 31 + i * 7) % 100) / 100 - 0.01);
}

function parseToolCalls(text: string): ToolCall[] {
  const calls: ToolCall[] = [];
  for (const m of text.matchAll(/<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g)) {
    try {
      const parsed = JSON.parse(m[1]!) as { name: string; arguments: unknown };
      calls.push({
        id: `call_${calls.length}_${hashString(text)}`,
        type: "function",
        function: { name: parsed.name, arguments: JSON.stringify(parsed.arguments ?? {}) },
      });
    } catch {
      // leave unparsable calls in the text
    }
  }
  return calls;
}

export class FakeManagedServer implements ManagedServer {
  nodes: SequenceNode[] = [];
  private readonly rawById = new Map<string, string>();
  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly options: FakeOptions,
  ) {}

  async chatCompletion(params: ChatCompletionParams): Promise<ChatCompletionResult> {
    const messages = params.messages.map((m) => {
      const id = m.tool_calls?.[0]?.id;
      return id && this.rawById.has(id) ? { role: m.role, content: this.rawById.get(id) } : m;
    });
    const last = messages.at(-1);
    const prompt = this.tokenizer.applyChatTemplate(messages, {
      addGenerationPrompt: last?.role !== "assistant",
    });
    const extending = this.nodes.findIndex((n) => prompt.startsWith(n.full_text));
    const choices: ChatCompletionResult["choices"] = [];
    for (let i = 0; i < (params.n ?? 1); i++) {
      const text = choiceText(prompt, i, this.options, params.seed);
      const output = [...this.tokenizer.encode(text), this.tokenizer.eosTokenId];
      const outLp = logprobsFor(output);
      let node: SequenceNode;
      if (extending >= 0) {
        const base = this.nodes[extending]!;
        const suffix = this.tokenizer.encode(prompt.slice(base.full_text.length));
        node = {
          full_text: prompt + text,
          tokens: [...base.tokens, ...suffix, ...output],
          masked_tokens: [...base.masked_tokens, ...suffix.map(() => -100), ...output],
          logprobs: [...base.logprobs, ...suffix.map(() => 1.0), ...outLp],
          metadata: { finish_reason: "stop" },
        };
        if (i === 0) this.nodes[extending] = node;
        else this.nodes.push(node);
      } else {
        const promptTokens = this.tokenizer.encode(prompt);
        node = {
          full_text: prompt + text,
          tokens: [...promptTokens, ...output],
          masked_tokens: [...promptTokens.map(() => -100), ...output],
          logprobs: [...promptTokens.map(() => 1.0), ...outLp],
          metadata: { finish_reason: "stop" },
        };
        this.nodes.push(node);
      }
      const calls = params.tools && params.tool_choice !== "none" ? parseToolCalls(text) : [];
      if (calls.length > 0) {
        for (const c of calls) this.rawById.set(c.id, text);
        const content = text.slice(0, text.indexOf("<tool_call>")).trim();
        choices.push({
          index: i,
          message: { role: "assistant", content, tool_calls: calls },
          finish_reason: "tool_calls",
        });
      } else {
        choices.push({
          index: i,
          message: { role: "assistant", content: text },
          finish_reason: "stop",
        });
      }
    }
    return { id: "fake", model: "fake", choices };
  }

  async completion(params: CompletionParams): Promise<CompletionResult> {
    const text = choiceText(params.prompt, 0, this.options, params.seed);
    return { id: "fake", model: "fake", choices: [{ index: 0, text, finish_reason: "stop" }] };
  }

  getState(): { nodes: SequenceNode[] } {
    return { nodes: [...this.nodes] };
  }

  reset(): void {
    this.nodes = [];
    this.rawById.clear();
  }
}

export class FakeInference implements InferenceClient {
  weights: number[] = [];
  chatCalls = 0;
  managedCreated = 0;
  constructor(
    readonly tokenizer: Tokenizer = new CharTokenizer(),
    readonly options: FakeOptions = {},
  ) {}

  async chatCompletion(params: ChatCompletionParams): Promise<ChatCompletionResult> {
    this.chatCalls++;
    const prompt = this.tokenizer.applyChatTemplate(params.messages, { addGenerationPrompt: true });
    if (this.options.failWhen?.(prompt, params)) throw new Error("injected inference failure");
    return {
      id: "fake",
      model: "fake",
      choices: Array.from({ length: params.n ?? 1 }, (_, i) => ({
        index: i,
        message: {
          role: "assistant" as const,
          content: choiceText(prompt, i, this.options, params.seed),
        },
        finish_reason: "stop",
      })),
    };
  }

  async completion(params: CompletionParams): Promise<CompletionResult> {
    return new FakeManagedServer(this.tokenizer, this.options).completion(params);
  }

  async tokensAndLogprobsCompletion(
    params: CompletionParams & { input_ids?: number[] },
  ): Promise<TokensAndLogprobs> {
    const text = choiceText(params.prompt, 0, this.options, params.seed);
    const out = [...this.tokenizer.encode(text), this.tokenizer.eosTokenId];
    return {
      promptTokens: params.input_ids ?? this.tokenizer.encode(params.prompt),
      outputTokens: [out],
      outputLogprobs: [logprobsFor(out)],
      finishReasons: ["stop"],
    };
  }

  async managedServer(options?: { tokenizer?: Tokenizer }): Promise<ManagedServer> {
    this.managedCreated++;
    return new FakeManagedServer(options?.tokenizer ?? this.tokenizer, this.options);
  }

  updateWeight(weight: number): void {
    this.weights.push(weight);
  }
}
