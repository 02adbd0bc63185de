/**
 * The single Worker script: the rollout API and dashboard (`fetch`), env-worker invocations
 * (`queue`) and the Durable Object classes.
 */
import { createApp } from "./api/app";
import type { Bindings } from "./api/bindings";
import { handleQueueBatch } from "./queues/consumer";
import type { RolloutItemMessage } from "./queues/messages";

export { EnvSession } from "./api/env-session";
export { RunCoordinator } from "./api/run-coordinator";
export { EnvFeeder } from "./env-workers/env-feeder";

const app = createApp();

export default {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),
  queue: (batch, env, ctx) => handleQueueBatch(batch, env, ctx),
} satisfies ExportedHandler<Bindings, RolloutItemMessage>;
