/**
 * The inference proxy's sessions as pure data: the tracked sequences (prompt ids from the
 * server, sampled ids and logprobs), how a new completion extends them, and how a finished
 * session becomes a scored group and trajectories. No tokenizer: sequences are matched by ids.
 */
import { z } from "zod";
import { TOOL_FORMAT_NAMES } from "../tool-calls/format";
import type { ScoredDataInput } from "./schemas";
import type { APIServerConfig } from "./server-config";
import type { Trajectory, TrajectoryStep } from "./trajectory";

export const PROXY_PROMPT_MASK = -100;

/** Session ids are chosen by the client (an OpenAI base URL) or by the Atropos create route. */
export const proxySessionIdSchema = z
  .string()
  .regex(/^[\w.-]{1,128}$/, "a session id is 1-128 letters, digits, '_', '-' or '.'");

export const sequenceNodeSchema = z.object({
  /**
   * Empty where the servers template chats (vllm); the rendered text where the proxy templates
   * with the run's tokenizer (it extends sequences by text, like ManagedServer).
   */
  full_text: z.string(),
  tokens: z.array(z.number().int()),
  /** -100 on prompt positions, the token id on sampled (trainable) positions. */
  masked_tokens: z.array(z.number().int()),
  /** 1.0 on prompt positions, the sampled token's logprob elsewhere. */
  logprobs: z.array(z.number()),
  metadata: z.record(z.string(), z.unknown()),
});
export type ProxySequenceNode = z.infer<typeof sequenceNodeSchema>;

type ChatMessageRecord = Record<string, unknown>;

export const proxyTrackingSchema = z.object({
  nodes: z.array(sequenceNodeSchema),
  /** Tool-call id → the raw completion text it was parsed from (replayed verbatim). */
  tool_texts: z.record(z.string(), z.string()),
  /** Tool-call id → when the call left the proxy and when its result came back (ms epoch). */
  tool_timing: z.record(
    z.string(),
    z.object({ issued_at: z.number(), answered_at: z.number().nullable() }),
  ),
  /**
   * The session's tool-call format when a request named one (`tool_format`); else the format of
   * the servers' tokenizer family (src/core/tool-calls).
   */
  tool_format: z.enum(TOOL_FORMAT_NAMES).optional(),
  /**
   * The session opted into re-tokenization (`"retokenize": true`): behind text-only (`openai`)
   * servers the proxy tokenizes the text itself; such sequences say `retokenized` and their group
   * carries `group_overrides.retokenized` and no sampling logprobs.
   */
  retokenize: z.boolean().optional(),
});
export type ProxyTracking = z.infer<typeof proxyTrackingSchema>;

export function emptyTracking(): ProxyTracking {
  return { nodes: [], tool_texts: {}, tool_timing: {} };
}

/** One sampled choice of a completion, with the ids the server used and returned. */
export interface SampledIds {
  promptTokens: number[];
  outputTokens: number[];
  outputLogprobs: number[];
  finishReason: string;
  /** The whole chat after this choice (request messages + the assistant reply), for trajectories. */
  conversation?: ChatMessageRecord[];
  /** When the choice came back (ms epoch), one per assistant turn in the conversation. */
  turnTimes?: number[];
  /** The ids are the proxy's tokenization of a text answer, not what was sampled. */
  retokenized?: boolean;
}

function isPrefix(prefix: readonly number[], of: readonly number[]): boolean {
  if (prefix.length === 0 || prefix.length > of.length) return false;
  for (let i = 0; i < prefix.length; i++) if (prefix[i] !== of[i]) return false;
  return true;
}

/**
 * Adds the choices of one completion to the tracked sequences. When a tracked sequence's ids are
 * a prefix of the prompt, its tokens, masks and logprobs are kept (its earlier completions stay
 * trainable) and only the new prompt positions are masked; the first choice replaces that
 * sequence, further choices become new sequences sharing the prefix. Otherwise each choice is a
 * new sequence whose prompt is fully masked.
 */
export function trackChoices(tracking: ProxyTracking, choices: readonly SampledIds[]): void {
  const prompt = choices[0]?.promptTokens ?? [];
  let extendingIndex = -1;
  for (const [index, node] of tracking.nodes.entries()) {
    const best = tracking.nodes[extendingIndex];
    if (isPrefix(node.tokens, prompt) && (!best || node.tokens.length > best.tokens.length)) {
      extendingIndex = index;
    }
  }
  const extending = tracking.nodes[extendingIndex];
  const fresh = prompt.slice(extending ? extending.tokens.length : 0);
  const prefixMasks = [...(extending?.masked_tokens ?? []), ...fresh.map(() => PROXY_PROMPT_MASK)];
  const prefixLogprobs = [...(extending?.logprobs ?? []), ...fresh.map(() => 1.0)];
  const turnTimes = (extending?.metadata.turn_times as number[] | undefined) ?? [];
  choices.forEach((choice, index) => {
    const node: ProxySequenceNode = {
      full_text: "",
      tokens: [...prompt, ...choice.outputTokens],
      masked_tokens: [...prefixMasks, ...choice.outputTokens],
      logprobs: [...prefixLogprobs, ...fitLogprobs(choice.outputLogprobs, choice.outputTokens)],
      metadata: {
        finish_reason: choice.finishReason,
        ...(choice.retokenized
          ? { retokenized: true, logprobs_unavailable: true }
          : { prompt_templated_by_server: true }),
        turn_times: [...turnTimes, ...(choice.turnTimes ?? [])],
        ...(choice.conversation ? { conversation: choice.conversation } : {}),
      },
    };
    if (extending && index === 0) tracking.nodes[extendingIndex] = node;
    else tracking.nodes.push(node);
  });
}

/** Logprobs padded with 1.0 / truncated to the output length. */
function fitLogprobs(logprobs: readonly number[], output: readonly number[]): number[] {
  if (logprobs.length >= output.length) return logprobs.slice(0, output.length);
  return [...logprobs, ...output.slice(logprobs.length).map(() => 1.0)];
}

/** Marks the tool results a request carries as answered (the first time each is seen). */
export function recordToolResults(
  tracking: ProxyTracking,
  messages: readonly ChatMessageRecord[],
  now: number,
): void {
  for (const message of messages) {
    const id = message.role === "tool" ? message.tool_call_id : undefined;
    const timing = typeof id === "string" ? tracking.tool_timing[id] : undefined;
    if (timing && timing.answered_at === null) timing.answered_at = now;
  }
}

export const finishSessionRequestSchema = z
  .object({
    scores: z
      .array(z.number())
      .min(1)
      .describe("One score per tracked sequence, in the order GET …/state lists them."),
    turn_scores: z
      .array(z.array(z.number()))
      .optional()
      .describe(
        "Optional, per sequence: one value per assistant turn (each run of trainable tokens), " +
          "written as that turn's per-token advantage; a sequence with more turns than values " +
          "repeats its last value.",
      ),
    success: z.array(z.boolean().nullable()).optional().describe("Per sequence, for trajectories."),
    judge_scores: z.array(z.number().nullable()).optional(),
    env_id: z.number().int().min(0).nullable().optional(),
  })
  .describe("Scores for a session's tracked sequences; the session becomes one scored group.");
export type FinishSessionRequest = z.infer<typeof finishSessionRequestSchema>;

/** Why a finish request does not fit the session; null when it does. */
export function finishProblem(tracking: ProxyTracking, body: FinishSessionRequest): string | null {
  const count = tracking.nodes.length;
  if (count === 0) return "the session has no tracked completions to score";
  if (tracking.nodes.some((node) => node.tokens.length === 0)) {
    return "a tracked sequence has no token ids";
  }
  const lists: [string, unknown[] | undefined][] = [
    ["scores", body.scores],
    ["turn_scores", body.turn_scores],
    ["success", body.success],
    ["judge_scores", body.judge_scores],
  ];
  for (const [name, list] of lists) {
    if (list !== undefined && list.length !== count) {
      return `${name} has ${list.length} entries but the session tracks ${count} sequence${count === 1 ? "" : "s"} (see GET …/state)`;
    }
  }
  return null;
}

/** Per-token advantages: the i-th run of trainable positions gets the i-th turn value. */
export function turnAdvantages(masks: readonly number[], turns: readonly number[]): number[] {
  const out = new Array<number>(masks.length).fill(0);
  let turn = -1;
  let inTurn = false;
  for (let i = 0; i < masks.length; i++) {
    const trainable = masks[i] !== PROXY_PROMPT_MASK;
    if (trainable && !inTurn) turn++;
    inTurn = trainable;
    if (trainable && turns.length > 0) out[i] = turns[Math.min(turn, turns.length - 1)]!;
  }
  return out;
}

/** The scored group a finished session submits: exact ids, masks and sampling logprobs. */
export function sessionGroup(tracking: ProxyTracking, body: FinishSessionRequest): ScoredDataInput {
  const nodes = tracking.nodes;
  const conversations = nodes.map((node) => node.metadata.conversation);
  const withMessages = conversations.every((c) => Array.isArray(c) && c.length > 0);
  // Re-tokenized text has no sampling logprobs: the group says so instead of carrying 1.0s.
  const retokenized = nodes.some((node) => node.metadata.retokenized === true);
  return {
    tokens: nodes.map((node) => node.tokens),
    masks: nodes.map((node) => node.masked_tokens),
    scores: body.scores,
    ...(retokenized
      ? { group_overrides: { retokenized: true } }
      : { inference_logprobs: nodes.map((node) => node.logprobs) }),
    ...(body.turn_scores
      ? {
          advantages: nodes.map((node, i) =>
            turnAdvantages(node.masked_tokens, body.turn_scores?.[i] ?? []),
          ),
        }
      : {}),
    ...(withMessages
      ? { messages: conversations.map((c) => (c as ChatMessageRecord[]).map(messageForGroup)) }
      : {}),
    ...(body.env_id !== undefined ? { env_id: body.env_id } : {}),
  } as ScoredDataInput;
}

/** Messages as the group stores them: role and content always present. */
function messageForGroup(message: ChatMessageRecord): ChatMessageRecord {
  return { ...message, content: message.content ?? null };
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) =>
        part && typeof part === "object" && "text" in part ? String(part.text ?? "") : "",
      )
      .join("");
  }
  return "";
}

function parametersOf(args: unknown): Record<string, unknown> {
  if (typeof args !== "string") return args && typeof args === "object" ? { ...args } : {};
  try {
    const parsed = JSON.parse(args) as unknown;
    return parsed && typeof parsed === "object" && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : { value: parsed };
  } catch {
    return { raw: args };
  }
}

interface ToolCallRecord {
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

/**
 * A trajectory per tracked sequence, read from the conversation that produced it: each assistant
 * tool call is a step (its result and observation are the matching tool message); an assistant
 * turn without calls is a step with its text as the thought, and the last one is the final response.
 */
export function sessionTrajectories(
  tracking: ProxyTracking,
  body: FinishSessionRequest,
  startedAt: number,
  finishedAt: number,
): Trajectory[] {
  return tracking.nodes.map((node, sequence) => {
    const conversation = (node.metadata.conversation as ChatMessageRecord[] | undefined) ?? [];
    const times = (node.metadata.turn_times as number[] | undefined) ?? [];
    const steps: TrajectoryStep[] = [];
    let assistantTurn = 0;
    let finalResponse: string | null = null;
    for (const [index, message] of conversation.entries()) {
      if (message.role !== "assistant") continue;
      const timestamp = times[assistantTurn++] ?? startedAt;
      const thought = textOf(message.content);
      const calls = Array.isArray(message.tool_calls)
        ? (message.tool_calls as ToolCallRecord[])
        : [];
      if (calls.length === 0) {
        steps.push({ thought, tool_call: null, observation: null, timestamp });
        finalResponse = thought;
        continue;
      }
      for (const call of calls) {
        const id = typeof call.id === "string" ? call.id : undefined;
        const reply = conversation
          .slice(index + 1)
          .find((m) => m.role === "tool" && (id === undefined || m.tool_call_id === id));
        const observation = reply ? textOf(reply.content) : null;
        const timing = id ? tracking.tool_timing[id] : undefined;
        const failed = observation !== null && /^\s*(tool )?error\b/i.test(observation);
        steps.push({
          thought,
          tool_call: {
            name: String(call.function?.name ?? ""),
            parameters: parametersOf(call.function?.arguments),
            result: failed ? null : observation,
            error: failed ? observation : null,
            latency_ms:
              timing && timing.answered_at !== null ? timing.answered_at - timing.issued_at : null,
          },
          observation,
          timestamp,
        });
      }
    }
    const firstUser = conversation.find((m) => m.role === "user");
    return {
      task: firstUser ? textOf(firstUser.content) : "",
      steps,
      final_response: finalResponse,
      success: body.success?.[sequence] ?? null,
      judge_score: body.judge_scores?.[sequence] ?? null,
      token_count: node.tokens.length,
      wall_time_ms: Math.max(0, finishedAt - startedAt),
      sequence,
      source: "proxy" as const,
    };
  });
}

/** The run's request could not be served as asked (answered 400 with this message). */
export class ProxyInputError extends Error {
  override name = "ProxyInputError";
}

/**
 * What the API needs from the inference layer to serve a proxy call: forward an OpenAI request
 * to the run's servers and record the sampled ids in `tracking` (mutated in place). Implemented
 * beside the ManagedServer and handed to the API by the Worker factory.
 */
/** What a proxy call brings besides the request: its client's signal, the Worker's R2 bucket. */
export interface ProxyCallContext {
  /** Aborted when the client goes away (a stream it left): the upstream request is aborted. */
  signal?: AbortSignal;
  /** Where a Worker reads bundled tokenizers (env.PAYLOADS), for servers that need one. */
  tokenizerBucket?: {
    get(
      key: string,
    ): Promise<{ text(): Promise<string>; arrayBuffer(): Promise<ArrayBuffer> } | null>;
  };
}

export interface InferenceProxy {
  /**
   * Rejects with ProxyInputError a request the servers cannot serve as asked (bad shape, a
   * text-only server without re-tokenization, a run tokenizer that cannot be loaded), before
   * anything is sent upstream or to the client.
   */
  check(
    servers: readonly APIServerConfig[],
    tracking: ProxyTracking,
    body: Record<string, unknown>,
    kind: "chat" | "completion",
    context?: ProxyCallContext,
  ): Promise<void>;
  chatCompletion(
    servers: readonly APIServerConfig[],
    tracking: ProxyTracking,
    body: Record<string, unknown>,
    context?: ProxyCallContext,
  ): Promise<Record<string, unknown>>;
  completion(
    servers: readonly APIServerConfig[],
    tracking: ProxyTracking,
    body: Record<string, unknown>,
    context?: ProxyCallContext,
  ): Promise<Record<string, unknown>>;
}
