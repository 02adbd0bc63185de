import { Template } from "@huggingface/jinja";
import type { ToolCallFormat } from "../../core/tool-calls/format";
import { hermesFormat } from "../../core/tool-calls/hermes";
import type { ChatMessage } from "../../core/wire/group-types";
import type { ToolDefinition } from "../types";
import { adaptMessages, type TemplateShape, templateShape } from "./template-messages";

export interface ChatTemplateOptions {
  addGenerationPrompt?: boolean;
  tools?: ToolDefinition[];
  enableThinking?: boolean;
  /** Extra template variables (HF's chat_template_kwargs), e.g. `date_string`. */
  variables?: Record<string, unknown>;
  /** How tool calls are written where the template does not say (default Hermes). */
  toolFormat?: ToolCallFormat;
}

export interface ChatTemplateContext {
  bosToken: string | null;
  eosToken: string | null;
}

/**
 * A compiled Jinja chat template (the `chat_template` of tokenizer_config.json).
 * Compiled once per tokenizer; rendering is pure. What the template cannot express is adapted
 * before rendering (see `adaptMessages`), from what its source shows it does.
 */
export class ChatTemplate {
  private readonly template: Template;
  /** Whether the template itself renders `tools`; if not, the format's tool prompt is injected. */
  readonly handlesTools: boolean;
  private readonly shape: TemplateShape;
  /** Whether the template tells a null content apart (DeepSeek V3 renders tool calls only then). */
  private readonly testsNullContent: boolean;

  constructor(
    readonly source: string,
    private readonly context: ChatTemplateContext,
  ) {
    this.template = new Template(source);
    this.handlesTools = /\btools\b/.test(source);
    this.shape = templateShape(source);
    this.testsNullContent =
      /message(?:\.content|\[['"]content['"]\])\s+is\s+(?:not\s+)?none\b/.test(source);
  }

  render(messages: ChatMessage[], options: ChatTemplateOptions = {}): string {
    const tools = options.tools && options.tools.length > 0 ? options.tools : undefined;
    const format = options.toolFormat ?? hermesFormat;
    const prompted =
      tools && !this.handlesTools ? withToolPrompt(messages, format.prompt(tools)) : messages;
    // Plain chats render exactly as the reference does; tool conversations get adapted.
    const toolChat =
      tools !== undefined || messages.some((m) => m.role === "tool" || m.tool_calls?.length);
    const adapted = toolChat ? adaptMessages(prompted, this.shape, format) : prompted;
    const variables: Record<string, unknown> = {
      ...options.variables,
      messages: this.testsNullContent ? adapted : adapted.map(normaliseMessage),
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

/** The tool prompt appended to the system message (or as one, when there is none). */
export function withToolPrompt(messages: ChatMessage[], prompt: string): ChatMessage[] {
  const [first, ...rest] = messages;
  if (first?.role === "system") {
    const existing = typeof first.content === "string" ? first.content : "";
    return [{ ...first, content: existing ? `${existing}\n\n${prompt}` : prompt }, ...rest];
  }
  return [{ role: "system", content: prompt }, ...messages];
}
