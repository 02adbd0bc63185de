/**
 * Answers tool_use prompts like an agent: calculator call, then kv_set, then the final answer,
 * reading tool results already in the prompt. A "wrong" episode skips storing and answers off by one.
 */
import { TOOL_TASK_PREFIX } from "../../env-workers/envs/tool-use";
import type { Responder } from "./types";

const TASK = /compute (.+?) with the calculator tool, store the result under the key "([^"]+)"/g;

export const toolUseResponder: Responder = {
  name: "tool_use",
  matches: (promptText) => promptText.includes(TOOL_TASK_PREFIX),
  respond: (ctx) => {
    const task = [...ctx.promptText.matchAll(TASK)].at(-1);
    const expression = task?.[1] ?? "1 + 1";
    const key = task?.[2] ?? "result";
    const results = [...ctx.promptText.matchAll(/calculator result: (-?[\d.]+)/g)];
    const stored = ctx.promptText.includes("kv_set result: ok");
    // The rng is per request; the first draw decides this turn's quality.
    const correct = ctx.rng() < ctx.correctProbability;
    const call = (name: string, args: Record<string, unknown>) =>
      `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
    if (results.length === 0) {
      return `I need to evaluate the expression first.\n${call("calculator", { expression })}`;
    }
    const value = results.at(-1)![1]!;
    if (!stored && correct) return `Now I store the result.\n${call("kv_set", { key, value })}`;
    const answer = correct ? value : String(Number(value) + 1);
    return `The result is ${answer}.\n<answer>${answer}</answer>`;
  },
};
