/**
 * Tool-call formats by name, and the one each bundled tokenizer family uses. A family missing
 * here (an unbundled tokenizer) gets Hermes, which most open tool-tuned models follow.
 */
import { deepseekV3Format } from "./deepseek";
import { TOOL_FORMAT_NAMES, type ToolCallFormat, type ToolFormatName } from "./format";
import { hermesFormat } from "./hermes";
import { llama3JsonFormat } from "./llama-json";
import { mistralFormat } from "./mistral";
import { pythonicFormat } from "./pythonic";

export * from "./format";

export const TOOL_FORMATS: Record<ToolFormatName, ToolCallFormat> = {
  hermes: hermesFormat,
  llama3_json: llama3JsonFormat,
  mistral: mistralFormat,
  deepseek_v3: deepseekV3Format,
  pythonic: pythonicFormat,
};

/**
 * Keyed by the bundled tokenizer family names (src/inference/tokenizers/registry.ts). Gemma 3
 * and Llama 3.0 templates ignore `tools` and tool calls: pythonic is this project's choice there.
 */
export const FAMILY_TOOL_FORMATS: Readonly<Record<string, ToolFormatName>> = {
  qwen2_5: "hermes",
  qwen3: "hermes",
  llama3: "pythonic",
  llama3_2: "llama3_json",
  gemma3: "pythonic",
  deepseek_v3: "deepseek_v3",
  mistral_nemo: "mistral",
};

export function isToolFormatName(name: unknown): name is ToolFormatName {
  return typeof name === "string" && (TOOL_FORMAT_NAMES as readonly string[]).includes(name);
}

/** A format by name; an unknown name is an error listing the known ones. */
export function toolFormat(name: string): ToolCallFormat {
  if (!isToolFormatName(name))
    throw new Error(`unknown tool-call format '${name}' (known: ${TOOL_FORMAT_NAMES.join(", ")})`);
  return TOOL_FORMATS[name];
}

/** The format a tokenizer family's model writes (Hermes for families not listed). */
export function toolFormatForFamily(family: string | null | undefined): ToolCallFormat {
  return TOOL_FORMATS[(family && FAMILY_TOOL_FORMATS[family]) || "hermes"];
}
