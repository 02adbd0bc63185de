import type { Bindings } from "../api/bindings";
import type { RolloutItemMessage } from "./messages";

export async function handleQueueBatch(
  batch: MessageBatch<RolloutItemMessage>,
  _env: Bindings,
  _ctx: ExecutionContext,
): Promise<void> {
  for (const message of batch.messages) message.retry();
}
