/**
 * `atropos-edge tokenizers [--json]` and `atropos-edge tokenize --tokenizer NAME_OR_DIR`
 * (docs/INFERENCE.md "Tokenizers").
 */
import { createInterface } from "node:readline";
import type { Command } from "commander";
import type { ChatMessage } from "../core/wire/group-types";
import { FAMILY_SOURCES, getTokenizer, listBundledTokenizers } from "../inference/tokenizers";
import type { ToolDefinition } from "../inference/types";

export async function runTokenizers(options: { json?: boolean }): Promise<void> {
  const entries = await listBundledTokenizers();
  if (options.json) {
    console.log(JSON.stringify(entries, null, 2));
    return;
  }
  for (const entry of entries) {
    const source = FAMILY_SOURCES[entry.name];
    console.log(`${entry.name.padEnd(14)} ${source.upstream} (${source.dataLicence})`);
  }
}

interface TokenizeLine {
  text?: unknown;
  messages?: unknown;
  tools?: unknown;
  enable_thinking?: unknown;
  add_generation_prompt?: unknown;
  chat_template_kwargs?: unknown;
}

/** One output object per input line; a bad line gets `{"error": …}` and the stream goes on. */
export async function tokenizeLine(
  line: string,
  tokenizer: Awaited<ReturnType<typeof getTokenizer>>,
): Promise<Record<string, unknown>> {
  let input: TokenizeLine;
  try {
    input = JSON.parse(line) as TokenizeLine;
  } catch {
    return { error: 'each line must be JSON: {"text": …} or {"messages": […], "tools": …}' };
  }
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    return { error: 'each line must be a JSON object: {"text": …} or {"messages": […]}' };
  }
  if (typeof input.text === "string") {
    return { ids: tokenizer.encode(input.text, { addSpecialTokens: false }) };
  }
  if (Array.isArray(input.messages)) {
    if (input.tools !== undefined && input.tools !== null && !Array.isArray(input.tools)) {
      return { error: '"tools" must be an array of tool definitions' };
    }
    const kwargs = input.chat_template_kwargs;
    if (kwargs !== undefined && (kwargs === null || typeof kwargs !== "object")) {
      return { error: '"chat_template_kwargs" must be an object' };
    }
    try {
      const text = tokenizer.applyChatTemplate(input.messages as ChatMessage[], {
        addGenerationPrompt: input.add_generation_prompt !== false,
        tools: (input.tools ?? undefined) as ToolDefinition[] | undefined,
        enableThinking:
          typeof input.enable_thinking === "boolean" ? input.enable_thinking : undefined,
        variables: kwargs as Record<string, unknown> | undefined,
      });
      return { text, ids: tokenizer.encode(text, { addSpecialTokens: false }) };
    } catch (error) {
      return { error: `chat template: ${(error as Error).message}` };
    }
  }
  return { error: 'a line needs "text" (a string) or "messages" (an array)' };
}

export async function runTokenize(options: { tokenizer: string }): Promise<number> {
  const tokenizer = await getTokenizer(options.tokenizer);
  let failures = 0;
  const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    if (line.trim() === "") continue;
    const output = await tokenizeLine(line, tokenizer);
    if ("error" in output) failures++;
    process.stdout.write(`${JSON.stringify(output)}\n`);
  }
  return failures > 0 ? 1 : 0;
}

export function registerTokenizeCommands(program: Command): void {
  program
    .command("tokenizers")
    .description("list the bundled tokenizers (--json: name + plain file paths)")
    .option("--json", "print [{name, tokenizer_json, tokenizer_config}] with absolute paths")
    .action(async (flags: { json?: boolean }) => runTokenizers(flags));
  program
    .command("tokenize")
    .description(
      'JSON lines on stdin ({"text"} or {"messages","tools"}) → one {"ids"} / {"text","ids"} line each',
    )
    .requiredOption(
      "--tokenizer <name>",
      "bundled family or model name, a directory with tokenizer.json + tokenizer_config.json, a URL, or an HF id",
    )
    .action(async (flags: { tokenizer: string }) => {
      process.exitCode = await runTokenize(flags);
    });
}
