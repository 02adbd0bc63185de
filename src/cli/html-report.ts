/**
 * A self-contained HTML report of scored groups (no scripts, no external assets). Every piece of
 * model output or env data is inserted only through escapeHtml(), never as markup.
 */
import type { ChatMessage, ScoredDataGroup } from "../core/wire/group-types";

const HTML_ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

export function escapeHtml(value: unknown): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

export interface ReportOptions {
  title: string;
  /** Decodes one token id (for the per-token view); token ids are shown when absent. */
  decodeToken?: (id: number) => string;
  /** Per-token tables are capped to keep the file small. */
  maxTokensPerSequence?: number;
}

function fmt(n: number | undefined | null): string {
  return typeof n === "number" && Number.isFinite(n) ? n.toFixed(3) : "–";
}

const HERMES_CALL = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

function parseJson(text: unknown): unknown {
  if (typeof text !== "string") return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** `name(k=v, …)`, as the dashboard shows a tool call. */
export function formatToolCall(name: string, args: unknown): string {
  if (args === null || args === undefined) return `${name}()`;
  if (typeof args !== "object" || Array.isArray(args)) return `${name}(${JSON.stringify(args)})`;
  const parts = Object.entries(args).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return `${name}(${parts.join(", ")})`;
}

interface CallView {
  name: string;
  args: unknown;
  id: string | null;
}

/** An assistant message's tool calls (OpenAI tool_calls, else Hermes blocks) and plain text. */
function callsOf(m: ChatMessage): { calls: CallView[]; text: string } {
  // A reply that is only tool calls has content null: show no text for it.
  const raw =
    typeof m.content === "string"
      ? m.content
      : m.content == null
        ? ""
        : (JSON.stringify(m.content) ?? "");
  const calls: CallView[] = (m.tool_calls ?? []).map((c) => ({
    name: c.function?.name ?? "?",
    args: parseJson(c.function?.arguments),
    id: c.id ?? null,
  }));
  const hermes = [...raw.matchAll(HERMES_CALL)];
  if (calls.length === 0) {
    for (const block of hermes) {
      const parsed = parseJson(block[1]) as { name?: unknown; arguments?: unknown } | string;
      calls.push(
        typeof parsed === "object" && parsed && typeof parsed.name === "string"
          ? { name: parsed.name, args: parseJson(parsed.arguments), id: null }
          : { name: "(unparsed tool call)", args: block[1], id: null },
      );
    }
  }
  return { calls, text: hermes.length ? raw.replace(HERMES_CALL, "").trim() : raw };
}

/**
 * A conversation turn by turn: each tool call as `name(k=v)` with the tool message that answers
 * it (by tool_call_id, else the next one) under it.
 */
function messagesHtml(messages: ScoredDataGroup["messages"], seq: number): string {
  const list = messages?.[seq];
  if (!list || list.length === 0) return "";
  const paired = new Set<number>();
  const multiTurn =
    list.filter((m) => m.role === "assistant").length > 1 || list.some((m) => m.role === "tool");
  let turn = 0;
  return list
    .map((m, i) => {
      if (paired.has(i)) return "";
      if (m.role !== "assistant") {
        return `<div class="msg ${escapeHtml(m.role)}"><b>${escapeHtml(m.role)}</b><pre>${escapeHtml(m.content)}</pre></div>`;
      }
      const { calls, text } = callsOf(m);
      const answers: number[] = [];
      for (let j = i + 1; j < list.length && list[j]?.role === "tool"; j++) answers.push(j);
      const callsHtml = calls.map((call) => {
        const byId = call.id
          ? answers.find((j) => list[j]?.tool_call_id === call.id && !paired.has(j))
          : undefined;
        const answer = byId ?? answers.find((j) => !paired.has(j));
        if (answer !== undefined) paired.add(answer);
        const result =
          answer === undefined ? "(no result)" : `→ ${escapeHtml(list[answer]!.content)}`;
        return `<div class="call"><code>${escapeHtml(formatToolCall(call.name, call.args))}</code><pre>${result}</pre></div>`;
      });
      const label = multiTurn ? `assistant · turn ${++turn}` : "assistant";
      return `<div class="msg assistant"><b>${label}</b>${text ? `<pre>${escapeHtml(text)}</pre>` : ""}${callsHtml.join("")}</div>`;
    })
    .join("");
}

function tokensHtml(group: ScoredDataGroup, seq: number, options: ReportOptions): string {
  const tokens = group.tokens[seq] ?? [];
  const masks = group.masks[seq] ?? [];
  const logprobs = group.inference_logprobs?.[seq];
  const limit = options.maxTokensPerSequence ?? 400;
  const spans = tokens.slice(0, limit).map((id, i) => {
    const trained = masks[i] !== -100;
    const text = options.decodeToken ? options.decodeToken(id) : String(id);
    const title = `id ${id} · mask ${masks[i]} · logprob ${fmt(logprobs?.[i])}`;
    return `<span class="${trained ? "tr" : "pr"}" title="${escapeHtml(title)}">${escapeHtml(text)}</span>`;
  });
  const more = tokens.length > limit ? `<i> … ${tokens.length - limit} more tokens</i>` : "";
  return `<div class="tokens">${spans.join("")}${more}</div>`;
}

export function renderGroupsReport(groups: ScoredDataGroup[], options: ReportOptions): string {
  const allScores = groups.flatMap((g) => g.scores);
  const mean = allScores.length ? allScores.reduce((a, b) => a + b, 0) / allScores.length : 0;
  const sections = groups.map((group, g) => {
    const rows = group.tokens.map((_, s) => {
      const trained = (group.masks[s] ?? []).filter((t) => t !== -100).length;
      return `<details><summary>seq ${s} · score ${fmt(group.scores[s])} · ${group.tokens[s]?.length ?? 0} tokens (${trained} trained)</summary>${messagesHtml(group.messages, s)}${tokensHtml(group, s, options)}</details>`;
    });
    return `<section><h2>Group ${g}</h2><p>scores: ${escapeHtml(group.scores.map(fmt).join(", "))}</p>${rows.join("")}</section>`;
  });
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>${escapeHtml(options.title)}</title>
<style>
body{font:14px system-ui,sans-serif;margin:2rem;max-width:70rem}
pre{white-space:pre-wrap;margin:.2rem 0}
.msg{border-left:3px solid #ccc;padding-left:.5rem;margin:.3rem 0}
.msg.assistant{border-color:#48f}
.msg.tool{border-color:#d97706}
.call{border-left:3px solid #d97706;background:#fffbeb;padding:.1rem .5rem;margin:.2rem 0}
.call code{font-weight:600;color:#92400e}
.tokens{font:12px ui-monospace,monospace;line-height:1.6;white-space:pre-wrap}
.tr{background:#dfe}.pr{background:#eee;color:#666}
section{border-top:1px solid #ddd;margin-top:1rem}
</style></head><body>
<h1>${escapeHtml(options.title)}</h1>
<p>${groups.length} groups · ${allScores.length} sequences · mean score ${fmt(mean)}.
Green tokens are trained (mask ≠ −100); grey ones are prompt. Hover a token for its id, mask and logprob.</p>
${sections.join("\n")}
</body></html>
`;
}
