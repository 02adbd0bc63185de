/**
 * Answers tool_use prompts like an agent (calculator call, then kv_set, then the final answer):
 * the env's good next message with probability correctProbability, else its bad one.
 */
import { TOOL_TASK_PREFIX, toolUseCandidates } from "../../envs/tool-use";
import type { Responder } from "./types";

export const toolUseResponder: Responder = {
  name: "tool_use",
  matches: (promptText) => promptText.includes(TOOL_TASK_PREFIX),
  respond: (ctx) => {
    const [good, bad] = toolUseCandidates(ctx.promptText);
    return (ctx.rng() < ctx.correctProbability ? good : bad)!.text;
  },
};
