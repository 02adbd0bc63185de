/**
 * The simulator answers tool calls in its tokenizer family's own format: envs and responders
 * write candidate calls once, Hermes-style (`<tool_call>{…}</tool_call>`), and they are rewritten
 * here as that family's model would write them. Formats whose template replays calls structured
 * (Mistral) get the calls alone, as the template renders them, so later prompts extend the
 * sampled ids. Ids come from the answer's seeded rng: same inputs, same text.
 */
import type { ToolCallFormat } from "../core/tool-calls/format";
import { hermesFormat } from "../core/tool-calls/hermes";

const ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

export function nativeToolCalls(text: string, format: ToolCallFormat, rng: () => number): string {
  if (format.name === "hermes" || hermesFormat.callStart(text) < 0) return text;
  const parsed = hermesFormat.parse(text, () =>
    Array.from({ length: 9 }, () => ID_CHARS[Math.floor(rng() * ID_CHARS.length)]).join(""),
  );
  if (parsed.calls.length === 0 || parsed.errors.length > 0) return text;
  const calls = format.render(format.parallel ? parsed.calls : parsed.calls.slice(0, 1));
  if (format.replay === "structured" || !parsed.content) return calls;
  return `${parsed.content}\n${calls}`;
}
