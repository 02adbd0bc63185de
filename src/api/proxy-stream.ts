/**
 * `stream: true` on the inference proxy: Server-Sent Events in OpenAI's chunk format. The proxy
 * streams AFTER the upstream answer is complete and recorded (the tracked ids and logprobs are
 * exactly the non-streamed call's): the first chunk (the assistant role) goes out at once, the
 * rest when the answer is in. A client that disconnects before then aborts the upstream request
 * and its turn is dropped (nothing recorded); docs/PROXY.md.
 */
import { errorMessage } from "../core/errors";

export type ProxyCallKind = "chat" | "completion";

/**
 * While the upstream answer is pending an SSE comment goes out this often: clients ignore it, and
 * writing is how the runtime finds out that a client has gone (then the stream is cancelled).
 */
export const HEARTBEAT_MS = 1000;

type Json = Record<string, unknown>;

export interface StreamRequest {
  kind: ProxyCallKind;
  model: string;
  includeUsage: boolean;
  /** Runs the upstream call (aborted through `signal` when the client goes away). */
  call(signal: AbortSignal): Promise<Json>;
  /** Records the answer in the session; throws what the client should be told. */
  record(answer: Json): Promise<void>;
  /** The client-facing error for a failed call (settles quotas, logs). */
  fail(error: unknown): Promise<{ status: number; message: string; type: string }>;
  /** Keeps the Worker alive for the cleanup after a disconnect. */
  waitUntil?(promise: Promise<unknown>): void;
}

/** `stream_options.include_usage`, checked (400 names the field). */
export function includeUsageOf(body: Json): boolean | string {
  const options = body.stream_options;
  if (options === undefined || options === null) return false;
  if (typeof options !== "object" || Array.isArray(options)) {
    return 'stream_options must be an object like {"include_usage": true}';
  }
  const include = (options as Json).include_usage;
  if (include !== undefined && typeof include !== "boolean") {
    return "stream_options.include_usage must be true or false";
  }
  return include === true;
}

function sse(data: Json | string): string {
  return `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
}

interface AnswerChoice {
  index?: number;
  message?: { content?: string | null; tool_calls?: ToolCallOut[] };
  text?: string;
  finish_reason?: string;
}

interface ToolCallOut {
  id: string;
  type?: string;
  function: { name: string; arguments: string };
}

/**
 * The chunks of a complete answer after the first: per choice its content, its tool calls as
 * OpenAI `tool_calls` deltas (index, id, type, function name and arguments), its finish_reason;
 * then the usage chunk when asked for.
 */
export function answerChunks(
  kind: ProxyCallKind,
  answer: Json,
  head: Json,
  includeUsage: boolean,
): string[] {
  const out: string[] = [];
  const choices = (answer.choices as AnswerChoice[] | undefined) ?? [];
  const usage = includeUsage ? { usage: null } : {};
  const chunk = (choice: Json) => sse({ ...head, choices: [choice], ...usage });
  for (const [position, choice] of choices.entries()) {
    const index = choice.index ?? position;
    if (kind === "completion") {
      out.push(chunk({ index, text: choice.text ?? "", finish_reason: null, logprobs: null }));
      out.push(chunk({ index, text: "", finish_reason: choice.finish_reason, logprobs: null }));
      continue;
    }
    const content = choice.message?.content;
    if (typeof content === "string" && content.length > 0) {
      out.push(chunk({ index, delta: { content }, finish_reason: null, logprobs: null }));
    }
    for (const [callIndex, call] of (choice.message?.tool_calls ?? []).entries()) {
      const delta = {
        tool_calls: [
          {
            index: callIndex,
            id: call.id,
            type: "function",
            function: { name: call.function.name, arguments: call.function.arguments },
          },
        ],
      };
      out.push(chunk({ index, delta, finish_reason: null, logprobs: null }));
    }
    out.push(chunk({ index, delta: {}, finish_reason: choice.finish_reason, logprobs: null }));
  }
  if (includeUsage) out.push(sse({ ...head, choices: [], usage: answer.usage ?? null }));
  out.push(sse("[DONE]"));
  return out;
}

/** The SSE response of a proxy call; see the file comment for when what is sent. */
export function streamProxyCall(request: StreamRequest): Response {
  const upstream = new AbortController();
  const encoder = new TextEncoder();
  const id = `${request.kind === "chat" ? "chatcmpl" : "cmpl"}-${crypto.randomUUID()}`;
  const head = {
    id,
    object: request.kind === "chat" ? "chat.completion.chunk" : "text_completion",
    created: Math.floor(Date.now() / 1000),
    model: request.model,
  };
  const first =
    request.kind === "chat"
      ? { index: 0, delta: { role: "assistant", content: "" }, finish_reason: null, logprobs: null }
      : { index: 0, text: "", finish_reason: null, logprobs: null };
  let closed = false;
  const stream = new ReadableStream<Uint8Array>({
    start(out) {
      const send = (text: string) => {
        if (!closed) out.enqueue(encoder.encode(text));
      };
      send(sse({ ...head, choices: [first], ...(request.includeUsage ? { usage: null } : {}) }));
      const heartbeat = setInterval(() => send(": waiting for the answer\n\n"), HEARTBEAT_MS);
      const work = (async () => {
        let answer: Json;
        try {
          answer = await request.call(upstream.signal);
        } catch (error) {
          // Settling the failure (quota, log) may fail too: the client still hears of the first.
          const failure = await request.fail(error).catch((settling: unknown) => ({
            status: 500,
            type: "proxy_error",
            message: `${errorMessage(error)} (and settling the failed call failed: ${errorMessage(settling)})`,
          }));
          if (upstream.signal.aborted) return; // the client left: nothing to tell, nothing kept
          send(sse({ error: { ...failure, code: failure.status } }));
          return;
        }
        if (upstream.signal.aborted) {
          // Answered as the client left: dropped (fail hands the quota reservation back).
          await request.fail(upstream.signal.reason);
          return;
        }
        try {
          await request.record(answer);
        } catch (error) {
          const status = (error as { status?: unknown }).status;
          send(
            sse({
              error: { message: errorMessage(error), type: "proxy_error", code: status ?? 500 },
            }),
          );
          return;
        }
        for (const text of answerChunks(request.kind, answer, head, request.includeUsage)) {
          send(text);
        }
      })().finally(() => {
        clearInterval(heartbeat);
        if (!closed) {
          closed = true;
          out.close();
        }
      });
      request.waitUntil?.(work);
    },
    cancel(reason) {
      closed = true;
      upstream.abort(reason ?? new DOMException("the client disconnected", "AbortError"));
    },
  });
  return new Response(stream, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "x-accel-buffering": "no",
    },
  });
}
