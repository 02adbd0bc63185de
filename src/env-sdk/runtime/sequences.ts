/**
 * Turning sampled sequences into trainable rollouts: exact tokens/masks/logprobs from a
 * ManagedServer SequenceNode, or (when the backend returned no token ids) Atropos'
 * `tokenize_for_trainer` rule applied to the final chat, without logprobs.
 */
import type { ChatMessage, ScoredDataItem } from "../../core/wire/group-types";
import type { SequenceNode, Tokenizer } from "../../inference/types";

export const PROMPT_MASK = -100;

export interface TrainerTokens {
  tokens: number[];
  masks: number[];
}

/**
 * Atropos `tokenize_for_trainer`: the whole chat is tokenized; by default only the last message is
 * trainable; with `trainOnAllAssistantTurns` every assistant turn is.
 */
export function tokenizeForTrainer(
  tokenizer: Tokenizer,
  chat: ChatMessage[],
  options: { trainOnAllAssistantTurns?: boolean; finishReason?: string } = {},
): TrainerTokens {
  const encode = (msgs: ChatMessage[], addGenerationPrompt: boolean) =>
    tokenizer.encode(tokenizer.applyChatTemplate(msgs, { addGenerationPrompt }), {
      addSpecialTokens: false,
    });
  const tokens = encode(chat, false);
  let masks: number[];
  if (!options.trainOnAllAssistantTurns) {
    const promptLen = Math.min(encode(chat.slice(0, -1), true).length, tokens.length);
    masks = tokens.map((t, i) => (i < promptLen ? PROMPT_MASK : t));
  } else {
    masks = tokens.map(() => PROMPT_MASK);
    chat.forEach((msg, i) => {
      if (msg.role !== "assistant" && msg.role !== "agent") return;
      const start = encode(chat.slice(0, i), true).length;
      const end = Math.min(encode(chat.slice(0, i + 1), false).length, tokens.length);
      for (let p = start; p < end; p++) masks[p] = tokens[p]!;
    });
  }
  if (options.finishReason === "length" && tokens.at(-1) === tokenizer.eosTokenId) {
    tokens.pop();
    masks.pop();
  }
  return { tokens, masks };
}

/** True when a node carries real sampled token ids. */
export function nodeHasTokens(node: SequenceNode): boolean {
  return !node.metadata.tokens_unavailable && node.tokens.length > 0;
}

/**
 * A ScoredDataItem from a ManagedServer node. Exact tokens, masks and inference logprobs when the
 * backend provided them; otherwise the final chat is tokenized (no logprobs are invented).
 */
export function scoredItemFromNode(
  node: SequenceNode,
  score: number,
  fallback: { tokenizer: Tokenizer; messages: ChatMessage[] },
  extra: Partial<ScoredDataItem> = {},
): ScoredDataItem {
  if (nodeHasTokens(node)) {
    return {
      tokens: [...node.tokens],
      masks: [...node.masked_tokens],
      inference_logprobs: [...node.logprobs],
      scores: score,
      messages: fallback.messages,
      ...extra,
    };
  }
  const { tokens, masks } = tokenizeForTrainer(fallback.tokenizer, fallback.messages, {
    trainOnAllAssistantTurns: true,
    finishReason: node.metadata.finish_reason,
  });
  return {
    tokens,
    masks,
    inference_logprobs: null,
    scores: score,
    messages: fallback.messages,
    ...extra,
  };
}
