import { Template } from "@huggingface/jinja";
import type { ChatMessage } from "../../core/group-types";
import type { ToolDefinition } from "../inference/types";

export interface ChatTemplateOptions {
  addGenerationPrompt?: boolean;
  tools?: ToolDefinition[];
  enableThinking?: boolean;
  /** Extra template variables (HF's chat_template_kwargs), e.g. `date_string`. */
  variables?: Record<string, unknown>;
}

export interface ChatTemplateContext {
  bosToken: string | null;
  eosToken: string | null;
}

/**
 * A compiled Jinja chat template (the `chat_template` of tokenizer_config.json).
 * Compiled once per tokenizer; rendering is pure.
 */
export class ChatTemplate {
  private readonly template: Template;
  /** Whether the template itself renders `tools`; if not, a Hermes system prompt is injected. */
  readonly handlesTools: boolean;
  /** Whether the template tells a null content apart (DeepSeek V3 renders tool calls only then). */
  private readonly testsNullContent: boolean;

  constructor(
    readonly source: string,
    private readonly context: ChatTemplateContext,
  ) {
    this.template = new Template(source);
    this.handlesTools = /\btools\b/.test(source);
    this.testsNullContent =
      /message(?:\.content|\[['"]content['"]\])\s+is\s+(?:not\s+)?none\b/.test(source);
  }

  render(messages: ChatMessage[], options: ChatTemplateOptions = {}): string {
    const tools = options.tools && options.tools.length > 0 ? options.tools : undefined;
    const rendered = tools && !this.handlesTools ? withHermesToolPrompt(messages, tools) : messages;
    const variables: Record<string, unknown> = {
      ...options.variables,
      messages: this.testsNullContent ? rendered : rendered.map(normaliseMessage),
      add_generation_prompt: options.addGenerationPrompt ?? false,
      bos_token: this.context.bosToken ?? "",
      eos_token: this.context.eosToken ?? "",
    };
    if (tools && this.handlesTools) variables.tools = tools;
    if (options.enableThinking !== undefined) variables.enable_thinking = options.enableThinking;
    return this.template.render(variables);
  }
}

/**
 * Most templates use `message.content` as a string, so a null content (an OpenAI tool-call turn)
 * becomes "" for them; templates that test it against none get the null as sent.
 */
function normaliseMessage(message: ChatMessage): ChatMessage {
  return message.content === null || message.content === undefined
    ? { ...message, content: "" }
    : message;
}

/**
 * Hermes-format tool prompt for templates that ignore `tools` (e.g. Llama 3 Instruct): the tool
 * signatures go in a system message inside <tools></tools>, calls come back as <tool_call> JSON.
 */
export function withHermesToolPrompt(
  messages: ChatMessage[],
  tools: ToolDefinition[],
): ChatMessage[] {
  const signatures = tools.map((tool) => JSON.stringify(tool)).join("\n");
  const instructions =
    "You may call one or more functions to assist with the user query.\n\n" +
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
    `${signatures}\n</tools>\n\n` +
    "For each function call, return a json object with function name and arguments within " +
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": ' +
    "<args-json-object>}\n</tool_call>";
  const [first, ...rest] = messages;
  if (first?.role === "system") {
    const existing = typeof first.content === "string" ? first.content : "";
    return [{ ...first, content: `${existing}\n\n${instructions}` }, ...rest];
  }
  return [{ role: "system", content: instructions }, ...messages];
}
