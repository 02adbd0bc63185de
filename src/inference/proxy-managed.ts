/**
 * The inference proxy in front of servers that do not template chats (vllm-generate, SGLang, TRL,
 * Atropos' /generate, the local engine): each call runs on a ManagedServer restored from the
 * session's tracking, so the proxy renders the run's chat template and extends sequences exactly
 * as a direct ManagedServer run of the same conversation would, and the session's group equals
 * that run's. Also the opt-in re-tokenization of text-only (`openai`) answers, which is not exact.
 */
import type { ChatMessage } from "../core/wire/group-types";
import {
  PROXY_PROMPT_MASK,
  type ProxySequenceNode,
  type ProxyTracking,
  type SampledIds,
} from "../core/wire/proxy-session";
import type { ServerManager } from "./server-manager";
import type {
  ChatCompletionParams,
  ChatCompletionResult,
  CompletionParams,
  SequenceNode,
  Tokenizer,
} from "./types";

export interface ManagedCall {
  manager: ServerManager;
  tracking: ProxyTracking;
  signal?: AbortSignal;
  at: () => number;
}

/** Counts of the sampled (trainable tail) and prompt positions of a freshly tracked node. */
function usageOfNode(node: SequenceNode): { prompt: number; completion: number } {
  let completion = 0;
  for (let i = node.masked_tokens.length - 1; i >= 0; i--) {
    if (node.masked_tokens[i] === PROXY_PROMPT_MASK) break;
    completion++;
  }
  return { prompt: node.tokens.length - completion, completion };
}

/**
 * Runs `call` on a ManagedServer holding the session's sequences, then stores them back. Returns
 * the nodes the call wrote, in choice order (the extended one first, then the new ones), with
 * the turn times of the sequence each one continues.
 */
async function onManaged<T>(
  session: ManagedCall,
  call: (managed: Awaited<ReturnType<ServerManager["managedServer"]>>) => Promise<T>,
): Promise<{ result: T; written: { node: SequenceNode; turnTimes: number[] }[] }> {
  const before = session.tracking.nodes as SequenceNode[];
  const managed = await session.manager.managedServer({
    clientTemplate: true,
    state: { nodes: before, tool_texts: session.tracking.tool_texts },
    ...(session.signal ? { signal: session.signal } : {}),
  });
  const result = await call(managed);
  const after = managed.getState();
  let continued: number[] = [];
  const written: { node: SequenceNode; turnTimes: number[] }[] = [];
  after.nodes.forEach((node, index) => {
    const old = before[index];
    if (old && old.tokens.length === node.tokens.length) return;
    if (old) continued = (old.metadata.turn_times as number[] | undefined) ?? [];
    written.push({ node, turnTimes: continued });
  });
  session.tracking.nodes = after.nodes as ProxySequenceNode[];
  session.tracking.tool_texts = after.tool_texts ?? {};
  return { result, written };
}

/** A chat turn through the ManagedServer; nodes get the conversation and turn times. */
export async function managedChat(
  session: ManagedCall,
  params: ChatCompletionParams,
): Promise<{ chat: ChatCompletionResult; usage: { prompt: number; completion: number } }> {
  const { result, written } = await onManaged(session, (m) => m.chatCompletion(params));
  const at = session.at();
  const usage = { prompt: 0, completion: 0 };
  written.forEach(({ node, turnTimes }, index) => {
    const choice = result.choices[index];
    const counts = usageOfNode(node);
    usage.prompt = counts.prompt;
    usage.completion += counts.completion;
    node.metadata.turn_times = [...turnTimes, at];
    if (choice) node.metadata.conversation = [...params.messages, choice.message];
    for (const call of choice?.message.tool_calls ?? []) {
      session.tracking.tool_timing[call.id] = { issued_at: at, answered_at: null };
    }
  });
  return { chat: result, usage };
}

/** A text completion through the ManagedServer (the prompt is rendered text). */
export async function managedCompletion(session: ManagedCall, params: CompletionParams) {
  const { result, written } = await onManaged(session, (m) => m.completion(params));
  const at = session.at();
  const usage = { prompt: 0, completion: 0 };
  for (const { node, turnTimes } of written) {
    const counts = usageOfNode(node);
    usage.prompt = counts.prompt;
    usage.completion += counts.completion;
    node.metadata.turn_times = [...turnTimes, at];
  }
  return { completion: result, usage };
}

/**
 * Re-tokenization of a text-only answer (opt-in): the prompt is the run's chat template over
 * the request, the reply the template's rendering of the answer after it, both tokenized with
 * the run's tokenizer. Not what was sampled (a text round trip may tokenize differently) and no
 * logprobs: the nodes say `retokenized`.
 */
export function retokenizedChoices(
  tokenizer: Tokenizer,
  params: ChatCompletionParams,
  chat: ChatCompletionResult,
  at: number,
): SampledIds[] {
  const options = { tools: params.tools };
  const prompt = tokenizer.applyChatTemplate(params.messages, {
    ...options,
    addGenerationPrompt: true,
  });
  const promptTokens = tokenizer.encode(prompt, { addSpecialTokens: true });
  return chat.choices.map((choice) => {
    const message = choice.message as ChatMessage;
    const full = tokenizer.applyChatTemplate([...params.messages, message], options);
    const text = typeof message.content === "string" ? message.content : "";
    const reply = full.startsWith(prompt) ? full.slice(prompt.length) : text;
    return {
      promptTokens,
      outputTokens: tokenizer.encode(reply, { addSpecialTokens: false }),
      outputLogprobs: [],
      finishReason: choice.finish_reason,
      conversation: [...(params.messages as unknown as Record<string, unknown>[]), message],
      turnTimes: [at],
      retokenized: true,
    };
  });
}
