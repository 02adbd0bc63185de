/**
 * The inference proxy's e2e reference: a conversation an agent had through the proxy, replayed on
 * a ManagedServer bound straight to the same server (same seeds, same tool observations). The
 * proxy's group must equal that run's node token for token.
 */

import type { ChatMessage } from "../../src/core/wire/group-types";
import type { APIServerConfigInput } from "../../src/core/wire/server-config";
import { ServerManager } from "../../src/inference/server-manager";
import type { SequenceNode, ToolDefinition } from "../../src/inference/types";

export interface Transcript {
  messages: Record<string, unknown>[];
  tools: ToolDefinition[];
  finish: { group_id: number; status: string; sequences: number };
}

export interface Payload {
  tokens: number[][];
  masks: number[][];
  inference_logprobs: number[][];
  scores: number[];
}

/** The conversation replayed on a ManagedServer bound straight to `server`. */
export async function directRun(
  server: APIServerConfigInput,
  transcript: Pick<Transcript, "messages" | "tools">,
  seed: number,
): Promise<SequenceNode> {
  const manager = new ServerManager([server]);
  const managed = await manager.managedServer();
  const observations = transcript.messages
    .filter((m) => m.role === "tool")
    .map((m) => String(m.content));
  const messages: ChatMessage[] = transcript.messages.slice(0, 2) as unknown as ChatMessage[];
  for (let turn = 0; turn < 4; turn++) {
    const answer = await managed.chatCompletion({
      messages,
      tools: transcript.tools,
      temperature: 1.0,
      max_tokens: 256,
      seed: seed + turn,
    });
    const message = answer.choices[0]!.message;
    messages.push({
      role: "assistant",
      content: message.content,
      ...(message.tool_calls ? { tool_calls: message.tool_calls } : {}),
    });
    if (!message.tool_calls?.length) break;
    for (const call of message.tool_calls) {
      messages.push({ role: "tool", tool_call_id: call.id, content: observations.shift() ?? "" });
    }
  }
  return managed.getState().nodes.at(-1)!;
}
