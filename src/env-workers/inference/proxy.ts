/**
 * The inference proxy's forwarding: an OpenAI chat or text completion from an agent goes to the
 * run's servers, which template the chat themselves and return the prompt ids they used with the
 * sampled ids and logprobs (no tokenizer is loaded); the ids are recorded in the session's
 * tracking. Tool calls are parsed here from the raw text in the format of the servers' tokenizer
 * family (or the session's `tool_format`) and their raw text is replayed verbatim on later turns,
 * so each turn's prompt extends the previous sequence id for id.
 */
import type { ChatMessage } from "../../core/group-types";
import {
  type InferenceProxy,
  ProxyInputError,
  type ProxyTracking,
  recordToolResults,
  type SampledIds,
  trackChoices,
} from "../../core/proxy-session";
import { type APIServerConfig, tokenizerNameOf } from "../../core/server-config";
import {
  TOOL_FORMAT_NAMES,
  type ToolCallFormat,
  type ToolFormatName,
} from "../../core/tool-calls/format";
import type { FetchLike } from "./backends/http";
import { ServerManager } from "./server-manager";
import {
  parseToolCalls,
  requestedToolFormat,
  ToolCallTextLookup,
  toolFormatFor,
} from "./tool-calls";
import type { ChatCompletionParams, CompletionParams, ToolDefinition } from "./types";

/** Request fields the proxy sets itself or cannot honour. */
const DROPPED_FIELDS = [
  "model",
  "stream",
  "stream_options",
  "logprobs",
  "top_logprobs",
  "echo",
  "tool_format",
];

export interface InferenceProxyOptions {
  fetch?: FetchLike;
  now?: () => number;
}

/** One ServerManager per server list, kept while the isolate lives (health and load state). */
class ManagerCache {
  private readonly managers = new Map<string, ServerManager>();

  constructor(
    private readonly fetchFn: FetchLike | undefined,
    private readonly limit = 32,
  ) {}

  get(servers: readonly APIServerConfig[]): ServerManager {
    const key = JSON.stringify(servers);
    let manager = this.managers.get(key);
    if (!manager) {
      manager = new ServerManager([...servers], this.fetchFn ? { fetch: this.fetchFn } : {});
      const able = manager.servers.filter((s) => s.backend.chatCompletionWithTokens);
      if (able.length !== manager.servers.length) {
        throw new ProxyInputError(
          "the inference proxy needs servers with server_type vllm (stock `vllm serve` ≥ 0.10.2, which templates chats and returns their token ids); set the run's servers with PUT /v1/runs/{run}/inference",
        );
      }
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
  if (body.stream === true) {
    throw new ProxyInputError("stream: true is not supported by the proxy; send stream: false");
  }
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
      `${error instanceof Error ? error.message : String(error)}: send one of ${TOOL_FORMAT_NAMES.join(", ")}, or "auto" for the servers' tokenizer family`,
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
  const managers = new ManagerCache(options.fetch);
  const now = options.now ?? Date.now;

  return {
    async chatCompletion(servers, tracking, body) {
      const messages = body.messages;
      if (!Array.isArray(messages) || messages.length === 0) {
        throw new ProxyInputError("messages must be a non-empty list of chat messages");
      }
      const manager = managers.get(servers);
      const chat = messages as ChatMessage[];
      recordToolResults(tracking, chat as unknown as Record<string, unknown>[], now());
      const tools =
        Array.isArray(body.tools) && body.tools.length > 0
          ? (body.tools as ToolDefinition[])
          : undefined;
      const toolChoice = body.tool_choice ?? (tools ? "auto" : "none");
      const format = sessionToolFormat(tracking, body, servers);
      const lookup = ToolCallTextLookup.fromRecord(tracking.tool_texts);
      const params: ChatCompletionParams = {
        ...requestParams(body),
        messages: lookup.toTemplateMessages(chat, format),
        // The server renders the tools but does not parse calls: the raw text comes back, is
        // parsed here and replayed verbatim, so later prompts extend this one id for id.
        ...(tools ? { tools, tool_choice: "none" } : {}),
      };
      const answer = await manager.chatCompletionWithTokens(params);
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
          conversation: [...(messages as Record<string, unknown>[]), message],
          turnTimes: [at],
        });
        return {
          index,
          message,
          finish_reason: parsed ? "tool_calls" : choice.finish_reason,
          logprobs: null,
        };
      });
      trackChoices(tracking, sampled);
      tracking.tool_texts = lookup.toRecord();
      const completionTokens = sampled.reduce((sum, s) => sum + s.outputTokens.length, 0);
      return {
        id: answer.chat.id,
        object: "chat.completion",
        created: created(at),
        model: answer.chat.model || (servers[0]?.model_name ?? ""),
        choices,
        usage: usageOf(answer.tokens.promptTokens.length, completionTokens),
      };
    },

    async completion(servers, tracking, body) {
      const prompt = body.prompt;
      const idsPrompt = Array.isArray(prompt) && prompt.every((id) => Number.isInteger(id));
      if (typeof prompt !== "string" && !idsPrompt) {
        throw new ProxyInputError(
          "prompt must be one string or one list of token ids (one prompt per call)",
        );
      }
      const manager = managers.get(servers);
      const answer = await manager.completionWithTokens(
        requestParams(body) as unknown as CompletionParams,
      );
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
      return {
        id: answer.completion.id,
        object: "text_completion",
        created: created(at),
        model: answer.completion.model || (servers[0]?.model_name ?? ""),
        choices: answer.completion.choices.map((choice) => ({
          index: choice.index,
          text: choice.text,
          finish_reason: choice.finish_reason,
          logprobs: null,
        })),
        usage: usageOf(answer.tokens.promptTokens.length, completionTokens),
      };
    },
  };
}

function usageOf(prompt: number, completion: number) {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  };
}
