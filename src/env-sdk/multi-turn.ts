/**
 * MultiTurnEnv: the loop every multi-turn env shares — context → model → parse tool calls (in
 * the tokenizer family's format) → run tools → append results → stop — with small hooks, in the
 * shape of verifiers' `MultiTurnEnv.rollout`. All turns go through one ManagedServer, so every
 * assistant turn stays trainable in one tracked sequence (docs/WRITING_ENVS.md, multi-turn envs).
 */
import { z } from "zod";
import { hashString } from "../core/codecs/rng";
import { errorMessage } from "../core/errors";
import { TOOL_FORMAT_NAMES, type ToolCallFormat } from "../core/tool-calls/format";
import type { ChatMessage, ToolCall } from "../core/wire/group-types";
import { toolFormatFor } from "../inference/tool-calls";
import type { ChatCompletionParams, SequenceNode } from "../inference/types";
import { BaseEnv, type JsonValue } from "./base-env";
import { BaseEnvConfigSchema } from "./config";
import type { Toolbox } from "./tools/toolbox";

/** Config fields of envs that offer tools (`tool_format`: "auto" = the tokenizer family's). */
export const ToolEnvConfigSchema = BaseEnvConfigSchema.extend({
  tool_format: z.enum(["auto", ...TOOL_FORMAT_NAMES]).default("auto"),
});

/** One assistant reply, parsed. */
export interface AssistantTurn {
  /** The reply as the model wrote it (tool calls included). */
  text: string;
  /** Text before the first call, think tags removed (a trajectory step's thought). */
  thought: string;
  /** Well-formed calls, with ids the family's template accepts. */
  calls: ToolCall[];
  /** Malformed calls (bad JSON, truncated, not allowed here): each becomes a tool error. */
  errors: string[];
  finishReason: string;
}

/** A tool call and what came of it (a malformed call has name "-invalid-"). */
export interface ToolOutcome {
  name: string;
  arguments: Record<string, unknown>;
  result: string | null;
  error: string | null;
  latency_ms: number;
  /** What the model sees (the tool message's content). */
  observation: string;
  timestamp: number;
}

export interface TurnRecord {
  reply: AssistantTurn;
  tools: ToolOutcome[];
}

/** How an episode starts: its messages, its own state, and the tools it offers (if any). */
export interface EpisodeStart<State> {
  messages: ChatMessage[];
  state: State;
  toolbox?: Toolbox;
}

export interface MultiTurnEpisode<State> {
  messages: ChatMessage[];
  turns: TurnRecord[];
  state: State;
  /** true when `isDone` or `envResponse` ended it; false when the turn limit did. */
  finished: boolean;
  /** The tracked sequence of the whole conversation (tokens, masks, logprobs). */
  node: SequenceNode;
  wallTimeMs: number;
}

export abstract class MultiTurnEnv<
  Item extends JsonValue,
  Config extends z.output<typeof BaseEnvConfigSchema> = z.output<typeof BaseEnvConfigSchema>,
  State = undefined,
> extends BaseEnv<Item, Config> {
  /** The first messages, the episode's state and its tools. */
  protected abstract setupEpisode(
    item: Item,
    episode: number,
  ): EpisodeStart<State> | Promise<EpisodeStart<State>>;

  /** Assistant turns at most. */
  protected maxTurns(): number {
    return 8;
  }

  /**
   * Whether the episode ends after this reply, before its tools run (default: a reply without
   * tool calls). Each turn goes reply → isDone → tools → envResponse; to stop on what a tool
   * returned, return null from envResponse instead. A turn that leaves the model nothing to answer
   * (no tool result and no env message) ends the episode whatever isDone says.
   */
  protected isDone(turn: AssistantTurn, _state: State): boolean {
    return turn.calls.length === 0 && turn.errors.length === 0;
  }

  /**
   * What the environment says after the tool results: more messages (default none), or null to
   * end the episode (a game that is over).
   */
  protected envResponse(
    _turn: AssistantTurn,
    _state: State,
    _tools: readonly ToolOutcome[],
  ): ChatMessage[] | null | Promise<ChatMessage[] | null> {
    return [];
  }

  /** Sampling for every turn (temperature, max_tokens, …). */
  protected samplingParams(_state: State): Partial<ChatCompletionParams> {
    const temperature = (this.config as { temperature?: unknown }).temperature;
    return {
      max_tokens: this.config.max_token_length,
      temperature: typeof temperature === "number" ? temperature : 1,
    };
  }

  /** Seed of an episode's first turn; turn t uses seed + t (rollouts of a group differ). */
  protected episodeSeed(item: Item, episode: number): number {
    return hashString(JSON.stringify(item)) + episode * 7919;
  }

  /** The tool-call format: config `tool_format`, else the tokenizer family's. */
  toolFormat(): ToolCallFormat {
    const configured = (this.config as { tool_format?: unknown }).tool_format;
    return toolFormatFor(
      this.tokenizer.name,
      typeof configured === "string" ? (configured as ToolCallFormat["name"]) : undefined,
    );
  }

  /** One episode: the loop. `split: "eval"` samples from the evaluation pool. */
  async rollout(
    item: Item,
    episode = 0,
    options: { split?: "train" | "eval" } = {},
  ): Promise<MultiTurnEpisode<State>> {
    const started = Date.now();
    const { messages, state, toolbox } = await this.setupEpisode(item, episode);
    const format = this.toolFormat();
    const tools = toolbox?.definitions() ?? [];
    const seed = this.episodeSeed(item, episode);
    const managed = await this.inference.managedServer({ tokenizer: this.tokenizer });
    const turns: TurnRecord[] = [];
    let finished = false;
    try {
      for (let turn = 0; turn < this.maxTurns(); turn++) {
        const res = await managed.chatCompletion({
          ...this.samplingParams(state),
          messages,
          ...(tools.length > 0
            ? { tools, tool_choice: "auto" as const, tool_format: format.name }
            : {}),
          n: 1,
          seed: (seed + turn) % 2 ** 31,
          ...(options.split ? { split: options.split } : {}),
        });
        const choice = res.choices[0];
        if (!choice) throw new Error("inference returned no choice");
        const reply = assistantTurn(choice.message, choice.finish_reason, format, tools.length > 0);
        messages.push({
          role: "assistant",
          content: choice.message.content,
          ...(choice.message.tool_calls?.length ? { tool_calls: choice.message.tool_calls } : {}),
        });
        const record: TurnRecord = { reply, tools: [] };
        turns.push(record);
        if (this.isDone(reply, state)) {
          finished = true;
          break;
        }
        const answered = messages.length;
        record.tools = await runTools(reply, toolbox, format, messages);
        const more = await this.envResponse(reply, state, record.tools);
        if (more === null) {
          finished = true;
          break;
        }
        messages.push(...more);
        // Nothing for the model to answer (no tool result, no env message): sampling again would
        // put two assistant turns in a row and break the tracked sequence, so the episode ends.
        if (messages.length === answered) {
          finished = true;
          break;
        }
      }
      const node = managed.getState().nodes.at(-1);
      if (!node) throw new Error("managed server tracked no sequence");
      return { messages, turns, state, finished, node, wallTimeMs: Date.now() - started };
    } finally {
      managed.reset();
    }
  }
}

/**
 * A reply's calls: the server's `tool_calls` when it parsed them, else the text parsed in the
 * format (which also finds malformed calls; the server leaves those as text).
 */
export function assistantTurn(
  message: { content: string | null; tool_calls?: ToolCall[] },
  finishReason: string,
  format: ToolCallFormat,
  withTools: boolean,
): AssistantTurn {
  const content = message.content ?? "";
  if (message.tool_calls?.length) {
    return {
      text: content
        ? `${content}\n${format.render(message.tool_calls)}`
        : format.render(message.tool_calls),
      thought: thoughtOf(content, format),
      calls: message.tool_calls,
      errors: [],
      finishReason,
    };
  }
  const parsed = withTools ? format.parse(content) : { calls: [], errors: [] };
  return {
    text: content,
    thought: thoughtOf(content, format),
    calls: parsed.calls,
    errors: parsed.errors,
    finishReason,
  };
}

/** Text before the first call, think blocks' tags removed. */
export function thoughtOf(text: string, format: ToolCallFormat): string {
  const cut = format.callStart(text);
  return (cut >= 0 ? text.slice(0, cut) : text).replace(/<\/?think>/g, "").trim();
}

/**
 * Runs a reply's calls in order and appends one tool message per call; a malformed call (or any
 * call when the episode has no tools) becomes a tool error the model sees, never a crash.
 */
async function runTools(
  reply: AssistantTurn,
  toolbox: Toolbox | undefined,
  format: ToolCallFormat,
  messages: ChatMessage[],
): Promise<ToolOutcome[]> {
  const outcomes: ToolOutcome[] = [];
  for (const error of reply.errors) {
    const observation = `tool error: ${error}`;
    outcomes.push(outcome("-invalid-", {}, null, error, 0, observation));
    messages.push({
      role: "tool",
      name: "invalid",
      tool_call_id: format.newId(),
      content: observation,
    });
  }
  for (const call of reply.calls) {
    const name = call.function.name;
    let args: Record<string, unknown> = {};
    let out = { result: null as string | null, error: null as string | null, latency_ms: 0 };
    try {
      args = JSON.parse(call.function.arguments || "{}") as Record<string, unknown>;
      out = toolbox
        ? await toolbox.call(name, args)
        : { result: null, error: "no tools are available here", latency_ms: 0 };
    } catch (err) {
      out.error = `arguments are not JSON: ${errorMessage(err)}`;
    }
    const observation = out.error ? `${name} error: ${out.error}` : `${name} result: ${out.result}`;
    outcomes.push(outcome(name, args, out.result, out.error, out.latency_ms, observation));
    messages.push({ role: "tool", name, tool_call_id: call.id, content: observation });
  }
  return outcomes;
}

function outcome(
  name: string,
  args: Record<string, unknown>,
  result: string | null,
  error: string | null,
  latency: number,
  observation: string,
): ToolOutcome {
  return {
    name,
    arguments: args,
    result,
    error,
    latency_ms: latency,
    observation,
    timestamp: Date.now(),
  };
}

/** An episode's tool calls as trajectory steps (what judges read and the API stores). */
export function trajectorySteps(turns: readonly TurnRecord[]) {
  return turns.flatMap((turn) =>
    turn.tools.map((tool) => ({
      thought: turn.reply.thought,
      tool_call: {
        name: tool.name,
        parameters: tool.arguments,
        result: tool.result,
        error: tool.error,
        latency_ms: tool.latency_ms,
      },
      observation: tool.observation,
      timestamp: tool.timestamp,
    })),
  );
}
