/** Sampling helpers for envs: one managed chat call → choices paired with their tracked sequences. */
import type { ChatMessage } from "../../core/wire/group-types";
import type {
  ChatCompletionParams,
  InferenceClient,
  SequenceNode,
  Tokenizer,
} from "../../inference/types";

export interface SampledChoice {
  text: string;
  finishReason: string;
  node: SequenceNode;
  /** The prompt messages plus this choice as the assistant turn. */
  messages: ChatMessage[];
}

/**
 * n completions of one chat prompt through a fresh ManagedServer; choice i ↔ node i.
 * The ManagedServer is reset afterwards.
 */
export async function sampleChat(
  inference: InferenceClient,
  tokenizer: Tokenizer,
  messages: ChatMessage[],
  params: Omit<ChatCompletionParams, "messages">,
): Promise<SampledChoice[]> {
  const managed = await inference.managedServer({ tokenizer });
  try {
    const result = await managed.chatCompletion({ ...params, messages });
    const nodes = managed.getState().nodes;
    if (nodes.length < result.choices.length) {
      throw new Error(
        `managed server tracked ${nodes.length} sequences for ${result.choices.length} choices`,
      );
    }
    return result.choices.map((choice, i) => {
      const text = choice.message.content ?? "";
      return {
        text,
        finishReason: choice.finish_reason,
        node: nodes[i]!,
        messages: [...messages, { role: "assistant", content: text }],
      };
    });
  } finally {
    managed.reset();
  }
}
