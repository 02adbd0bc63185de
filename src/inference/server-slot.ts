import type { APIServerConfig } from "../core/wire/server-config";
import { AdaptiveSemaphore } from "./adaptive-semaphore";
import type { InferenceBackend } from "./backends/types";

export type Split = "train" | "eval";

/** One inference server: its backend, request slots and health. */
export class ServerSlot {
  readonly train: AdaptiveSemaphore;
  readonly eval: AdaptiveSemaphore;
  healthy = true;
  lastProbeAt = 0;
  probing: Promise<void> | null = null;
  requests = 0;
  failures = 0;
  /**
   * Whether chats may go through the server's own template with ids returned: the backend can
   * (chatCompletionWithTokens), until the server shows it cannot (an older vLLM).
   */
  serverChatTokens: boolean;

  constructor(
    readonly index: number,
    readonly config: APIServerConfig,
    readonly backend: InferenceBackend,
  ) {
    this.train = new AdaptiveSemaphore(config.num_max_requests_at_once);
    this.eval = new AdaptiveSemaphore(config.num_requests_for_eval);
    this.serverChatTokens = backend.chatCompletionWithTokens !== undefined;
  }

  /** Atropos' wait_for_sem capacity: train slots exclude those eval is using. */
  capacity(split: Split): number {
    if (split === "eval") return this.eval.available;
    return this.train.available - this.eval.inUse;
  }
}

export function leastLoaded(pool: ServerSlot[], split: Split): ServerSlot {
  let best = pool[0] as ServerSlot;
  for (const server of pool) if (server.capacity(split) > best.capacity(split)) best = server;
  return best;
}
