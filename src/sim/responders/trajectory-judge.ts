/**
 * Judges for the agent_tasks panel (test doubles). A trajectory whose final response has "Key
 * points:" is good (about 8/10), others poor (about 3/10), plus a little deterministic noise.
 * The judge's name (in the system prompt) sets its bias: a name containing "strict" scores 3
 * points lower, "lenient" 2 higher — so calibration has something to correct. Pointwise replies
 * alternate between bare JSON, fenced JSON and "Dimension: N/10" lines, as real judges do.
 */
import { RUBRIC_DIMENSIONS } from "../../core/wire/judge-schemas";
import { RANKING_MARKER, RUBRIC_MARKER } from "../../env-sdk/judges/rubric";
import type { Responder, ResponderContext } from "./types";

function biasOf(promptText: string): number {
  const name = /You are ([^,\n]*), an expert evaluator/.exec(promptText)?.[1] ?? "";
  if (/strict/i.test(name)) return -3;
  if (/lenient/i.test(name)) return 2;
  return 0;
}

const finalResponseOf = (section: string) => section.slice(section.lastIndexOf("Final response:"));

function quality(section: string, ctx: ResponderContext, bias: number): number {
  const good = finalResponseOf(section).includes("Key points:");
  return Math.min(10, Math.max(0, (good ? 8 : 3) + bias + Math.floor(ctx.rng() * 3) - 1));
}

export const trajectoryJudgeResponder: Responder = {
  name: "trajectory_judge",
  matches: (promptText) =>
    promptText.includes(RUBRIC_MARKER) || promptText.includes(RANKING_MARKER),
  respond: (ctx) => {
    const bias = biasOf(ctx.promptText);
    if (ctx.promptText.includes(RANKING_MARKER)) {
      const sections = [
        ...ctx.promptText.matchAll(/<trajectory id="(\d+)">([\s\S]*?)<\/trajectory>/g),
      ];
      const scores = sections.map((m) => ({
        id: Number(m[1]),
        score: quality(m[2]!, ctx, bias) / 10,
      }));
      return `Compared side by side.\n\`\`\`json\n${JSON.stringify({ scores })}\n\`\`\``;
    }
    const at = ctx.promptText.indexOf(RUBRIC_MARKER);
    const base = quality(ctx.promptText.slice(at), ctx, bias);
    const dims = Object.fromEntries(
      RUBRIC_DIMENSIONS.map((d) => [
        d,
        Math.min(10, Math.max(0, base + Math.floor(ctx.rng() * 3) - 1)),
      ]),
    );
    const form = Math.floor(ctx.rng() * 3);
    if (form === 0) return JSON.stringify(dims);
    if (form === 1)
      return `Here is my assessment.\n\`\`\`json\n${JSON.stringify(dims, null, 2)}\n\`\`\``;
    return RUBRIC_DIMENSIONS.map((d) => `${d.replace(/_/g, " ")}: ${dims[d]}/10`).join("\n");
  },
};
