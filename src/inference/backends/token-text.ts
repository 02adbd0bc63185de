/**
 * Text calls (chat, completion) for servers that only have a token route (Atropos'
 * vllm_api_server.py has no OpenAI routes; TRL's are its own): the chat template is rendered and
 * tokenized locally, the token route generates, the ids are decoded locally.
 */
import { parseToolCalls, requestedToolFormat, toolFormatFor } from "../tool-calls";
import type {
  ChatChoice,
  ChatCompletionParams,
  ChatCompletionResult,
  CompletionParams,
  CompletionResult,
  Tokenizer,
  TokensAndLogprobs,
} from "../types";
import { BackendBase } from "./base";
import { tokenRequestFrom } from "./sampling";
import type { BackendDeps, CallOptions, TokenGenerationRequest } from "./types";

type Generate = (
  request: TokenGenerationRequest,
  options: CallOptions,
) => Promise<TokensAndLogprobs>;

function visible(tokenizer: Tokenizer, ids: number[]): { text: string; raw: string } {
  const stopIds = tokenizer.stopTokenIds ?? [tokenizer.eosTokenId];
  const body = ids.length > 0 && stopIds.includes(ids.at(-1) as number) ? ids.slice(0, -1) : ids;
  return {
    text: tokenizer.decode(body, { skipSpecialTokens: true }),
    raw: tokenizer.decode(body),
  };
}

export async function chatViaTokens(
  deps: BackendDeps,
  generate: Generate,
  params: ChatCompletionParams,
  options: CallOptions,
): Promise<ChatCompletionResult> {
  const tokenizer = await deps.tokenizer();
  const tools = params.tools && params.tools.length > 0 ? params.tools : undefined;
  const kwargs = (params.chat_template_kwargs ?? {}) as { enable_thinking?: unknown };
  const enableThinking =
    typeof params.enable_thinking === "boolean"
      ? params.enable_thinking
      : typeof kwargs.enable_thinking === "boolean"
        ? kwargs.enable_thinking
        : undefined;
  const format = toolFormatFor(tokenizer.name, requestedToolFormat(params.tool_format));
  const prompt = tokenizer.applyChatTemplate(params.messages, {
    addGenerationPrompt: params.messages.at(-1)?.role !== "assistant",
    tools,
    enableThinking,
    toolFormat: format.name,
  });
  const ids = tokenizer.encode(prompt, { addSpecialTokens: true });
  const result = await generate(tokenRequestFrom(ids, params), options);
  const choices = result.outputTokens.map((output, index): ChatChoice => {
    const { text, raw } = visible(tokenizer, output);
    const finishReason = result.finishReasons[index] ?? "stop";
    const calls = tools && params.tool_choice !== "none" ? parseToolCalls(raw, format) : null;
    if (calls) {
      return {
        index,
        message: { role: "assistant", content: calls.content, tool_calls: calls.toolCalls },
        finish_reason: "tool_calls",
      };
    }
    return { index, message: { role: "assistant", content: text }, finish_reason: finishReason };
  });
  return { id: crypto.randomUUID(), model: deps.config.model_name, choices };
}

export async function completionViaTokens(
  deps: BackendDeps,
  generate: Generate,
  params: CompletionParams,
  options: CallOptions,
): Promise<CompletionResult> {
  const tokenizer = await deps.tokenizer();
  const ids = tokenizer.encode(params.prompt, { addSpecialTokens: true });
  const result = await generate(tokenRequestFrom(ids, params), options);
  return {
    id: crypto.randomUUID(),
    model: deps.config.model_name,
    choices: result.outputTokens.map((output, index) => ({
      index,
      text: visible(tokenizer, output).text,
      finish_reason: result.finishReasons[index] ?? "stop",
    })),
  };
}

/** A backend whose text calls are templated and tokenized here, then sent to its token route. */
export abstract class TokenRouteBackend extends BackendBase {
  abstract generateTokens(
    request: TokenGenerationRequest,
    options?: CallOptions,
  ): Promise<TokensAndLogprobs>;

  chatCompletion(
    params: ChatCompletionParams,
    options: CallOptions = {},
  ): Promise<ChatCompletionResult> {
    return chatViaTokens(this.deps, (r, o) => this.generateTokens(r, o), params, options);
  }

  completion(params: CompletionParams, options: CallOptions = {}): Promise<CompletionResult> {
    return completionViaTokens(this.deps, (r, o) => this.generateTokens(r, o), params, options);
  }
}
