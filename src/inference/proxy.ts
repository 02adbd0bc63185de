/**
 * The inference proxy's forwarding: an OpenAI chat or text completion from an agent goes to the
 * run's servers and what they sampled is recorded in the session's tracking. Servers that
 * template the chat themselves (server_type vllm) return the prompt ids they used with the
 * sampled ids and logprobs (no tokenizer is loaded); tool calls are parsed here from the raw text
 * in the format of the servers' tokenizer family (or the session's `tool_format`) and their raw
 * text is replayed verbatim on later turns, so each turn's prompt extends the previous sequence
 * id for id. Other token-exact servers go through a ManagedServer (proxy-managed.ts); text-only
 * servers only when the session opted into re-tokenization.
 */

import { errorMessage } from "../core/errors";
import {
  TOOL_FORMAT_NAMES,
  type ToolCallFormat,
  type ToolFormatName,
} from "../core/tool-calls/format";
import type { ChatMessage } from "../core/wire/group-types";
import {
  type InferenceProxy,
  type ProxyCallContext,
  ProxyInputError,
  type ProxyTracking,
  recordToolResults,
  type SampledIds,
  trackChoices,
} from "../core/wire/proxy-session";
import { type APIServerConfig, tokenizerNameOf } from "../core/wire/server-config";
import type { FetchLike } from "./backends/http";
import { managedChat, managedCompletion, retokenizedChoices } from "./proxy-managed";
import { ServerManager } from "./server-manager";
import { getTokenizer } from "./tokenizers/index";
import {
  parseToolCalls,
  requestedToolFormat,
  ToolCallTextLookup,
  toolFormatFor,
} from "./tool-calls";
import type {
  ChatCompletionParams,
  ChatCompletionResult,
  CompletionParams,
  CompletionResult,
  Tokenizer,
  ToolDefinition,
} from "./types";

/** Request fields the proxy sets itself or cannot honour. */
const DROPPED_FIELDS = [
  "model",
  "stream",
  "stream_options",
  "logprobs",
  "top_logprobs",
  "echo",
  "tool_format",
  "retokenize",
];

export interface InferenceProxyOptions {
  fetch?: FetchLike;
  now?: () => number;
  /** The run's tokenizer by name (default: the bundled families, URLs, R2; see tokenizers/). */
  getTokenizer?: (name: string) => Promise<Tokenizer>;
}

/**
 * How a server list is used: it templates chats and returns their ids (every server vllm), the
 * proxy templates and the servers generate from ids, or the servers answer text only.
 */
type ProxyMode = "server-template" | "client-template" | "text-only";

function modeOf(manager: ServerManager): ProxyMode {
  const backends = manager.servers.map((s) => s.backend);
  if (backends.every((b) => b.chatCompletionWithTokens)) return "server-template";
  return backends.every((b) => b.tokenSupport !== "none") ? "client-template" : "text-only";
}

const TEXT_ONLY_REFUSAL =
  "the run's inference servers include server_type openai, which returns text without token ids, so the proxy cannot record what was sampled; use a token-exact server type (vllm, vllm-generate, sglang, trl, atropos) with PUT /v1/runs/{run}/inference, or opt this session into re-tokenization (request field \"retokenize\": true, or header x-atropos-retokenize: 1), which records the proxy's own tokenization and marks the session's group as retokenized";

/** One ServerManager per server list, kept while the isolate lives (health and load state). */
class ManagerCache {
  private readonly managers = new Map<string, ServerManager>();
  /** The latest call's bucket: the same binding for every call of a Worker. */
  private bucket: ProxyCallContext["tokenizerBucket"];
  readonly loadTokenizer: (name: string) => Promise<Tokenizer>;

  constructor(
    private readonly options: InferenceProxyOptions,
    private readonly limit = 32,
  ) {
    this.loadTokenizer =
      options.getTokenizer ??
      ((name) => getTokenizer(name, this.bucket ? { bucket: this.bucket } : {}));
  }

  get(servers: readonly APIServerConfig[], bucket?: ProxyCallContext["tokenizerBucket"]) {
    if (bucket) this.bucket = bucket;
    const key = JSON.stringify(servers);
    let manager = this.managers.get(key);
    if (!manager) {
      const { fetch } = this.options;
      manager = new ServerManager([...servers], {
        ...(fetch ? { fetch } : {}),
        getTokenizer: this.loadTokenizer,
      });
      if (this.managers.size >= this.limit) {
        const oldest = this.managers.keys().next().value;
        if (oldest !== undefined) this.managers.delete(oldest);
      }
      this.managers.set(key, manager);
    }
    return manager;
  }
}

function requestParams(body: Record<string, unknown>): Record<string, unknown> {
  const params = { ...body };
  for (const field of DROPPED_FIELDS) delete params[field];
  return params;
}

/**
 * The tool-call format of a session: a request's `tool_format` (kept for the session's later
 * calls), else the one the session kept, else the format of the servers' tokenizer family.
 */
function sessionToolFormat(
  tracking: ProxyTracking,
  body: Record<string, unknown>,
  servers: readonly APIServerConfig[],
): ToolCallFormat {
  let requested: ToolFormatName | undefined;
  try {
    requested = requestedToolFormat(body.tool_format);
  } catch (error) {
    throw new ProxyInputError(
      `${errorMessage(error)}: send one of ${TOOL_FORMAT_NAMES.join(", ")}, or "auto" for the servers' tokenizer family`,
    );
  }
  if (requested) tracking.tool_format = requested;
  const first = servers[0];
  return toolFormatFor(first ? tokenizerNameOf(first) : null, tracking.tool_format);
}

function created(now: number): number {
  return Math.floor(now / 1000);
}

export function createInferenceProxy(options: InferenceProxyOptions = {}): InferenceProxy {
  const managers = new ManagerCache(options);
  const now = options.now ?? Date.now;

  /**
   * The run's tokenizer (loaded once per isolate), for servers the proxy templates for; one that
   * cannot be loaded is named with the reason (the servers were never asked).
   */
  async function runTokenizer(servers: readonly APIServerConfig[]): Promise<Tokenizer> {
    const name = servers[0] ? tokenizerNameOf(servers[0]) : "";
    return managers.loadTokenizer(name).catch((error: unknown) => {
      const why = errorMessage(error);
      throw new ProxyInputError(
        `the run's servers need the proxy to template chats with the tokenizer '${name}', which cannot be loaded (${why}); set tokenizer_name on the run's servers with PUT /v1/runs/{run}/inference`,
      );
    });
  }

  /** The request's mode, its shape checked (ProxyInputError names what to fix). */
  function check(
    servers: readonly APIServerConfig[],
    tracking: ProxyTracking,
    body: Record<string, unknown>,
    kind: "chat" | "completion",
    context: ProxyCallContext = {},
  ): { manager: ServerManager; mode: ProxyMode } {
    const manager = managers.get(servers, context.tokenizerBucket);
    const mode = modeOf(manager);
    if (kind === "chat") {
      const messages = body.messages;
      if (!Array.isArray(messages) || messages.length === 0) {
        throw new ProxyInputError("messages must be a non-empty list of chat messages");
      }
      if (mode === "text-only") optInRetokenize(tracking, body);
      sessionToolFormat(tracking, body, servers);
      return { manager, mode };
    }
    const prompt = body.prompt;
    const idsPrompt = Array.isArray(prompt) && prompt.every((id) => Number.isInteger(id));
    if (typeof prompt !== "string" && !idsPrompt) {
      throw new ProxyInputError(
        "prompt must be one string or one list of token ids (one prompt per call)",
      );
    }
    if (mode === "text-only") throw new ProxyInputError(TEXT_ONLY_COMPLETIONS);
    if (mode === "client-template" && typeof prompt !== "string") {
      throw new ProxyInputError(
        "prompt as token ids needs servers with server_type vllm (the others are sent text); send the prompt as text",
      );
    }
    return { manager, mode };
  }

  return {
    async check(servers, tracking, body, kind, context = {}) {
      const { mode } = check(servers, tracking, body, kind, context);
      if (mode !== "server-template") await runTokenizer(servers);
    },

    async chatCompletion(servers, tracking, body, context = {}) {
      const { manager, mode } = check(servers, tracking, body, "chat", context);
      const signal = context.signal;
      const messages = body.messages as Record<string, unknown>[];
      const chat = messages as ChatMessage[];
      recordToolResults(tracking, chat as unknown as Record<string, unknown>[], now());
      const tools =
        Array.isArray(body.tools) && body.tools.length > 0
          ? (body.tools as ToolDefinition[])
          : undefined;
      const format = sessionToolFormat(tracking, body, servers);
      const model = servers[0]?.model_name ?? "";
      if (mode !== "server-template") {
        const tokenizer = await runTokenizer(servers);
        const params = {
          ...requestParams(body),
          messages: chat,
          ...(tracking.tool_format ? { tool_format: tracking.tool_format } : {}),
        } as ChatCompletionParams;
        if (mode === "client-template") {
          const { chat: answer, usage } = await managedChat(
            { manager, tracking, at: now, ...(signal ? { signal } : {}) },
            params,
          );
          return chatAnswer(answer, model, now(), usage.prompt, usage.completion);
        }
        // Text-only, re-tokenized: the server sees the request as sent (its own tool calling).
        const answer = await manager.chatCompletion(params, signal);
        const sampled = retokenizedChoices(tokenizer, params, answer, now());
        trackChoices(tracking, sampled);
        const completion = sampled.reduce((sum, c) => sum + c.outputTokens.length, 0);
        return chatAnswer(answer, model, now(), sampled[0]?.promptTokens.length ?? 0, completion);
      }
      const toolChoice = body.tool_choice ?? (tools ? "auto" : "none");
      const lookup = ToolCallTextLookup.fromRecord(tracking.tool_texts);
      const params: ChatCompletionParams = {
        ...requestParams(body),
        messages: lookup.toTemplateMessages(chat, format),
        // The server renders the tools but does not parse calls: the raw text comes back, is
        // parsed here and replayed verbatim, so later prompts extend this one id for id.
        ...(tools ? { tools, tool_choice: "none" } : {}),
      };
      const answer = await manager.chatCompletionWithTokens(params, signal);
      const at = now();
      const sampled: SampledIds[] = [];
      const choices = answer.chat.choices.map((choice, index) => {
        const raw = choice.message.content ?? "";
        const parsed = tools && toolChoice !== "none" ? parseToolCalls(raw, format) : null;
        const message = parsed
          ? { role: "assistant" as const, content: parsed.content, tool_calls: parsed.toolCalls }
          : { role: "assistant" as const, content: raw };
        if (parsed) {
          lookup.remember(parsed.toolCalls, raw);
          for (const call of parsed.toolCalls) {
            tracking.tool_timing[call.id] = { issued_at: at, answered_at: null };
          }
        }
        const output = answer.tokens.outputTokens[index] ?? [];
        sampled.push({
          promptTokens: answer.tokens.promptTokens,
          outputTokens: output,
          outputLogprobs: answer.tokens.outputLogprobs[index] ?? [],
          finishReason: answer.tokens.finishReasons[index] ?? choice.finish_reason,
          conversation: [...messages, message],
          turnTimes: [at],
        });
        return { index, message, finish_reason: parsed ? "tool_calls" : choice.finish_reason };
      });
      trackChoices(tracking, sampled);
      tracking.tool_texts = lookup.toRecord();
      const completionTokens = sampled.reduce((sum, s) => sum + s.outputTokens.length, 0);
      return chatAnswer(
        { ...answer.chat, choices },
        model,
        at,
        answer.tokens.promptTokens.length,
        completionTokens,
      );
    },

    async completion(servers, tracking, body, context = {}) {
      const { manager, mode } = check(servers, tracking, body, "completion", context);
      const signal = context.signal;
      const model = servers[0]?.model_name ?? "";
      const params = requestParams(body) as unknown as CompletionParams;
      if (mode === "client-template") {
        await runTokenizer(servers);
        const { completion, usage } = await managedCompletion(
          { manager, tracking, at: now, ...(signal ? { signal } : {}) },
          params,
        );
        return completionAnswer(completion, model, now(), usage.prompt, usage.completion);
      }
      const answer = await manager.completionWithTokens(params, signal);
      const at = now();
      const sampled = answer.completion.choices.map((choice, index) => ({
        promptTokens: answer.tokens.promptTokens,
        outputTokens: answer.tokens.outputTokens[index] ?? [],
        outputLogprobs: answer.tokens.outputLogprobs[index] ?? [],
        finishReason: answer.tokens.finishReasons[index] ?? choice.finish_reason,
        turnTimes: [at],
      }));
      trackChoices(tracking, sampled);
      const completionTokens = sampled.reduce((sum, s) => sum + s.outputTokens.length, 0);
      return completionAnswer(
        answer.completion,
        model,
        at,
        answer.tokens.promptTokens.length,
        completionTokens,
      );
    },
  };
}

const TEXT_ONLY_COMPLETIONS =
  "the run's inference servers include server_type openai, which returns text without token ids; text completions through the proxy need a token-exact server type (vllm, vllm-generate, sglang, trl, atropos)";

/** Text-only servers serve a session only once it opted into re-tokenization (kept). */
function optInRetokenize(tracking: ProxyTracking, body: Record<string, unknown>): void {
  if (body.retokenize === true) tracking.retokenize = true;
  if (tracking.retokenize !== true) throw new ProxyInputError(TEXT_ONLY_REFUSAL);
}

function chatAnswer(
  chat: ChatCompletionResult,
  model: string,
  at: number,
  prompt: number,
  completion: number,
): Record<string, unknown> {
  return {
    id: chat.id,
    object: "chat.completion",
    created: created(at),
    model: chat.model || model,
    choices: chat.choices.map((choice) => ({ ...choice, logprobs: null })),
    usage: usageOf(prompt, completion),
  };
}

function completionAnswer(
  completion: CompletionResult,
  model: string,
  at: number,
  prompt: number,
  completionTokens: number,
): Record<string, unknown> {
  return {
    id: completion.id,
    object: "text_completion",
    created: created(at),
    model: completion.model || model,
    choices: completion.choices.map((choice) => ({
      index: choice.index,
      text: choice.text,
      finish_reason: choice.finish_reason,
      logprobs: null,
    })),
    usage: usageOf(prompt, completionTokens),
  };
}

function usageOf(prompt: number, completion: number) {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  };
}
