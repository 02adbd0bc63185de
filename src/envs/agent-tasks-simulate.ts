/** agent_tasks' prompt and the candidates the simulator's toy policy chooses from. */
import type { SimCandidate, SimulatedItem, Task } from "../sdk/env";

export const AGENT_TASK_PREFIX = "Agent task id:";

export function agentTaskPrompt(task: Pick<Task, "id" | "prompt">): string {
  return `${AGENT_TASK_PREFIX} ${task.id}\n\n${task.prompt}`;
}

/** Candidate answers for the simulator's toy policy (good ones score well under every evaluation). */
export function agentTasksSimulate(task: Task): SimulatedItem {
  const ev = task.evaluation;
  const match = `${AGENT_TASK_PREFIX} ${task.id}\n`;
  let candidates: SimCandidate[];
  if (ev.kind === "reference") {
    const answer: SimCandidate = {
      text: `Key points: I worked through the task step by step.\n<answer>${ev.answer}</answer>`,
      label: "correct",
    };
    const guess: SimCandidate = {
      text: "I am not sure.\n<answer>unknown</answer>",
      label: "guess",
    };
    const tool = ["calculator", "web_search"].find((t) => task.required_tools.includes(t));
    if (!tool) return { match, candidates: [answer, guess] };
    // Tasks that need the calculator or a search: use it first, then answer.
    const args = tool === "calculator" ? { expression: ev.answer } : { query: task.prompt };
    const call = `Let me check with ${tool}.\n<tool_call>${JSON.stringify({ name: tool, arguments: args })}</tool_call>`;
    return {
      match,
      candidates: (promptText) =>
        promptText.includes(`${tool} result:`)
          ? [answer, guess]
          : [{ text: call, label: `use_${tool}` }, guess],
    };
  } else if (ev.kind === "hidden_tests") {
    candidates = [
      {
        text: `Key points: a small, tested solution.\n\`\`\`${ev.language}\n${ev.solution ?? "# no solution given"}\n\`\`\``,
        label: "solution",
      },
      { text: `\`\`\`${ev.language}\npass\n\`\`\``, label: "stub" },
    ];
  } else {
    candidates = [
      {
        text: "Key points: the main cause, how it works, a short example and the caveats.\n<answer>See the key points above.</answer>",
        label: "thorough",
      },
      { text: "It depends on many things, hard to say.", label: "vague" },
    ];
  }
  return { match, candidates };
}
