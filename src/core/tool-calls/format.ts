/**
 * The shape every tool-call format shares: how a model of one family writes tool calls in raw
 * text, how that text is parsed back into OpenAI `tool_calls`, the system prompt that teaches the
 * format where the chat template does not render `tools`, and the call ids the family's template
 * accepts. One module per format beside this file; the registry is index.ts.
 */
import { errorMessage } from "../errors";
import type { ToolCall, ToolDefinition } from "../wire/group-types";

export const TOOL_FORMAT_NAMES = [
  "hermes",
  "llama3_json",
  "mistral",
  "deepseek_v3",
  "pythonic",
] as const;
export type ToolFormatName = (typeof TOOL_FORMAT_NAMES)[number];

/** Raw completion text split into the reply's text, its well-formed calls and its bad ones. */
export interface ParsedToolText {
  /** Text before the first call, trimmed (null when empty). */
  content: string | null;
  /** Well-formed calls, each with an id in the format's shape. */
  calls: ToolCall[];
  /** One line per malformed call (bad JSON, truncated, not allowed): shown to the model. */
  errors: string[];
}

export interface ToolCallFormat {
  readonly name: ToolFormatName;
  /** Whether one assistant message may hold several calls (Llama 3.2's template refuses it). */
  readonly parallel: boolean;
  /**
   * How an earlier assistant turn with tool calls is replayed into the next prompt: "raw" puts
   * back the exact sampled text (the prompt then extends the sampled ids); "structured" lets the
   * template render the calls (Mistral's template needs them to alternate roles), which equals
   * the sampled text when the model wrote the calls as `render` does.
   */
  readonly replay: "raw" | "structured";
  /** Parses a completion; never throws (malformed calls become `errors`). */
  parse(text: string, newId?: () => string): ParsedToolText;
  /** The calls as a model of this format writes them. */
  render(calls: readonly ToolCall[]): string;
  /** System-prompt text offering `tools` in this format (for templates that ignore `tools`). */
  prompt(tools: readonly ToolDefinition[]): string;
  /** A fresh call id the family's template accepts. */
  newId(): string;
  /** Where the first call (or call attempt) starts in the text, or -1. */
  callStart(text: string): number;
}

/** `call_` + 24 hex digits (OpenAI's shape; Hermes, Llama, DeepSeek and pythonic ids). */
export function openAiCallId(): string {
  return `call_${crypto.randomUUID().replace(/-/g, "").slice(0, 24)}`;
}

const ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** 9 alphanumeric characters: the only id Mistral's template accepts. */
export function mistralCallId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(9));
  return Array.from(bytes, (b) => ALPHANUMERIC[b % ALPHANUMERIC.length]).join("");
}

/** JSON with Python's `json.dumps` separators (", " and ": "), as the templates' `tojson` writes. */
export function spacedJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(spacedJson).join(", ")}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(
    ([, v]) => v !== undefined,
  );
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${spacedJson(v)}`).join(", ")}}`;
}

/** A call's arguments as an object (a JSON string that is not an object stays a string). */
export function argumentsValue(call: ToolCall): unknown {
  try {
    return JSON.parse(call.function.arguments || "{}");
  } catch {
    return call.function.arguments;
  }
}

/**
 * One decoded `{"name": …, "arguments"|"parameters": …}` object as a call, or the reason it is
 * not one. Arguments given as a JSON string are decoded (some models double-encode them).
 */
export function callFromObject(
  value: unknown,
  id: string,
  argumentKeys: readonly string[] = ["arguments", "parameters"],
): ToolCall | string {
  if (!value || typeof value !== "object" || Array.isArray(value))
    return "a call must be a JSON object";
  const record = value as Record<string, unknown>;
  if (typeof record.name !== "string" || record.name === "") return 'a call needs a "name"';
  const key = argumentKeys.find((k) => k in record);
  let args = key === undefined ? {} : record[key];
  if (typeof args === "string") {
    try {
      args = JSON.parse(args);
    } catch {
      return `arguments of ${record.name} are not JSON`;
    }
  }
  if (!args || typeof args !== "object" || Array.isArray(args))
    return `arguments of ${record.name} must be a JSON object`;
  return { id, type: "function", function: { name: record.name, arguments: JSON.stringify(args) } };
}

/** The text before `at`, trimmed, or null when empty. */
export function contentBefore(text: string, at: number): string | null {
  const before = (at < 0 ? text : text.slice(0, at)).trim();
  return before.length > 0 ? before : null;
}

/** The tool list as one JSON object per line (the Hermes and DeepSeek prompts). */
export function toolLines(tools: readonly ToolDefinition[]): string {
  return tools.map((tool) => spacedJson(tool)).join("\n");
}

export function errorText(err: unknown): string {
  return errorMessage(err);
}
