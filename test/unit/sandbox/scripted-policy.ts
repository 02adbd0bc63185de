/**
 * A scripted policy for env tests: every chat call answers with the texts a script gives for the
 * prompt (choice i = the script's i-th text), tracked as sequences with a character tokenizer.
 */
import type {
  ChatCompletionParams,
  ChatCompletionResult,
  CompletionResult,
  InferenceClient,
  ManagedServer,
  SequenceNode,
  TokensAndLogprobs,
} from "../../../src/inference/types";
import type { CharTokenizer } from "../envs/fakes";

export type Script = (promptText: string) => string[];

class ScriptedManagedServer implements ManagedServer {
  private nodes: SequenceNode[] = [];
  constructor(
    private readonly tokenizer: CharTokenizer,
    private readonly script: Script,
  ) {}

  async chatCompletion(params: ChatCompletionParams): Promise<ChatCompletionResult> {
    const prompt = this.tokenizer.applyChatTemplate(params.messages, { addGenerationPrompt: true });
    const texts = this.script(prompt);
    const promptTokens = this.tokenizer.encode(prompt);
    const choices = Array.from({ length: params.n ?? 1 }, (_, i) => {
      const text = texts[i % texts.length]!;
      const output = [...this.tokenizer.encode(text), this.tokenizer.eosTokenId];
      this.nodes.push({
        full_text: prompt + text,
        tokens: [...promptTokens, ...output],
        masked_tokens: [...promptTokens.map(() => -100), ...output],
        logprobs: [...promptTokens.map(() => 1.0), ...output.map(() => -0.5)],
        metadata: { finish_reason: "stop" },
      });
      return {
        index: i,
        message: { role: "assistant" as const, content: text },
        finish_reason: "stop",
      };
    });
    return { id: "scripted", model: "scripted", choices };
  }

  async completion(): Promise<CompletionResult> {
    throw new Error("the scripted policy only chats");
  }

  getState() {
    return { nodes: [...this.nodes] };
  }

  reset() {
    this.nodes = [];
  }
}

export class ScriptedInference implements InferenceClient {
  constructor(
    readonly tokenizer: CharTokenizer,
    private readonly script: Script,
  ) {}

  async chatCompletion(params: ChatCompletionParams): Promise<ChatCompletionResult> {
    return new ScriptedManagedServer(this.tokenizer, this.script).chatCompletion(params);
  }

  async completion(): Promise<CompletionResult> {
    throw new Error("the scripted policy only chats");
  }

  async tokensAndLogprobsCompletion(): Promise<TokensAndLogprobs> {
    throw new Error("the scripted policy only chats");
  }

  async managedServer(): Promise<ManagedServer> {
    return new ScriptedManagedServer(this.tokenizer, this.script);
  }

  updateWeight(): void {}
}
