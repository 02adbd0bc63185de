// @ts-check
// One sequence of a group as the rollout page shows it: its facts, its completion as text, its
// trajectory as a step timeline, and a column of "Compare sequences" (the whole conversation turn
// by turn for multi-turn and tool rollouts, else the final answer).
import { h, pill } from "./dom.js";
import { fmtInt, fmtNum } from "./format.js";
import { contentText, messageList } from "./messages.js";
import { completionCount, MASKED } from "./tokens.js";
import { isMultiTurn } from "./tool-calls.js";

/**
 * @param {import("./api.js").GroupDetail} detail
 * @param {number} i
 * @returns {import("./tokens.js").TokenSequence}
 */
export function sequenceAt(detail, i) {
  const p = detail.payload;
  return {
    tokens: p.tokens[i] ?? [],
    masks: p.masks?.[i] ?? null,
    logprobs: p.inference_logprobs?.[i] ?? null,
    advantages: p.advantages?.[i] ?? null,
    texts: detail.token_texts?.[i] ?? null,
  };
}

/**
 * Completion as text: from token_texts when the server decoded them, else as token ids.
 * @param {import("./tokens.js").TokenSequence} seq
 */
export function completionText(seq) {
  const parts = [];
  for (let i = 0; i < seq.tokens.length; i++) {
    if (seq.masks?.[i] === MASKED) continue;
    parts.push(seq.texts ? (seq.texts[i] ?? "") : String(seq.tokens[i]));
  }
  return seq.texts ? parts.join("") : parts.join(" ");
}

/** @param {number[] | null} values */
function mean(values) {
  if (!values || values.length === 0) return null;
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/**
 * Key facts of one sequence, shared by the list and the comparison.
 * @param {import("./api.js").GroupDetail} detail
 * @param {number} i
 */
export function sequenceFacts(detail, i) {
  const seq = sequenceAt(detail, i);
  const completion = completionCount(seq.masks);
  const facts = [
    ["score", fmtNum(detail.payload.scores[i] ?? null, 4)],
    ["tokens", fmtInt(seq.tokens.length)],
    ["completion", fmtInt(completion)],
  ];
  const completionLogprobs =
    seq.logprobs?.filter((lp, j) => seq.masks?.[j] !== MASKED && lp <= 0) ?? null;
  const meanLogprob = mean(completionLogprobs);
  if (meanLogprob !== null) facts.push(["mean logprob", fmtNum(meanLogprob, 3)]);
  const advantage = mean(seq.advantages);
  if (advantage !== null) facts.push(["mean advantage", fmtNum(advantage, 3)]);
  const override = detail.payload.overrides?.[i];
  if (override && Object.keys(override).length) facts.push(["overrides", JSON.stringify(override)]);
  return h(
    "dl",
    { class: "facts", "data-seq": i },
    facts.map(([k, v]) => [h("dt", null, k), h("dd", { "data-field": k }, v)]),
  );
}

/** @param {unknown} value */
function shortJson(value) {
  const text = JSON.stringify(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * A trajectory as a step timeline: each step's time from the first, thought, tool call with its
 * result or error and latency, and what the agent observed.
 * @param {import("./api.js").Trajectory} trajectory
 */
export function trajectoryTimeline(trajectory) {
  const start = trajectory.steps[0]?.timestamp ?? 0;
  const facts = [
    ["success", trajectory.success === null ? "–" : String(trajectory.success)],
    ["judge score", fmtNum(trajectory.judge_score, 3)],
    ["steps", fmtInt(trajectory.steps.length)],
    ["tokens", fmtInt(trajectory.token_count)],
    ["wall time", `${fmtNum(trajectory.wall_time_ms / 1000, 2)} s`],
    ["source", trajectory.source],
  ];
  return h(
    "div",
    { class: "trajectory", "data-testid": "trajectory" },
    h("p", { class: "small" }, h("strong", null, "Task: "), trajectory.task),
    h(
      "dl",
      { class: "facts" },
      facts.map(([k, v]) => [h("dt", null, k), h("dd", { "data-field": `trajectory_${k}` }, v)]),
    ),
    h(
      "ol",
      { class: "timeline" },
      trajectory.steps.map((step, n) => {
        const call = step.tool_call;
        return h(
          "li",
          { class: "timeline-step", "data-step": n },
          h(
            "div",
            { class: "timeline-time mono small" },
            `+${fmtNum((step.timestamp - start) / 1000, 2)} s`,
          ),
          step.thought ? h("div", { class: "timeline-thought" }, step.thought) : null,
          call
            ? h(
                "div",
                { class: "timeline-call mono small" },
                pill(call.name, call.error ? "bad" : "ok"),
                ` ${shortJson(call.parameters)}`,
                call.latency_ms === null ? "" : ` · ${fmtInt(call.latency_ms)} ms`,
                call.error ? h("div", { class: "timeline-error" }, `error: ${call.error}`) : null,
              )
            : null,
          step.observation
            ? h("div", { class: "timeline-observation small muted" }, `→ ${step.observation}`)
            : null,
        );
      }),
    ),
    trajectory.final_response
      ? h(
          "div",
          null,
          h("h4", { class: "sub-title" }, "Final response"),
          h("pre", { class: "msg-content" }, trajectory.final_response),
        )
      : null,
  );
}

/**
 * One side of "Compare sequences": the facts, then the whole conversation turn by turn (tool
 * calls compact, results under them) when it has several turns or tools, else the trajectory's
 * timeline when the env sent one, else the final answer.
 * @param {import("./api.js").GroupDetail} detail
 * @param {number} i
 * @param {import("./api.js").Trajectory | undefined} trajectory
 */
export function compareColumn(detail, i, trajectory) {
  const seq = sequenceAt(detail, i);
  const messages = detail.payload.messages?.[i];
  if (isMultiTurn(messages)) {
    return [
      sequenceFacts(detail, i),
      h(
        "div",
        { class: "compare-conversation", "data-field": "compare_conversation" },
        messageList(messages),
      ),
    ];
  }
  if (trajectory && !messages) return [sequenceFacts(detail, i), trajectoryTimeline(trajectory)];
  const lastAssistant = [...(messages ?? [])].reverse().find((m) => m && m.role === "assistant");
  return [
    sequenceFacts(detail, i),
    h(
      "pre",
      { class: "msg-content compare-text", "data-field": "compare_text" },
      lastAssistant ? contentText(lastAssistant.content) : completionText(seq),
    ),
  ];
}
