/**
 * The Worker factory: the rollout API and dashboard (`fetch`), env-worker invocations (`queue`)
 * and the Durable Object classes, for the envs a project registers. A project's entry file
 * exports `handler` as its default and the three classes by name (wrangler binds them by name).
 */
import { createApp } from "../api/app";
import type { Bindings } from "../api/bindings";
import { EnvSession } from "../api/env-session";
import { RunCoordinator } from "../api/run-coordinator";
import type { RolloutItemMessage } from "../core/wire/queue-messages";
import type { EnvDefinition } from "../env-sdk/define-env";
import { EnvCatalog } from "../env-sdk/env-catalog";
import { createInferenceProxy } from "../inference/proxy";
import { setSandboxProvider } from "../sandbox/registry";
import { SandboxServiceClient } from "../sandbox/service";
import { EnvFeeder } from "./env-feeder";
import { handleQueueBatch } from "./queue-handler";

export interface WorkerOptions {
  /** Envs that env workers on this Worker can run (`POST /v1/runs/{run}/env-workers`). */
  envs: readonly EnvDefinition[];
}

export interface AtroposWorker {
  handler: ExportedHandler<Bindings, RolloutItemMessage>;
  durableObjects: {
    RunCoordinator: typeof RunCoordinator;
    EnvSession: typeof EnvSession;
    EnvFeeder: typeof EnvFeeder;
  };
  envs: EnvCatalog;
}

export function createWorker(options: WorkerOptions): AtroposWorker {
  const envs = new EnvCatalog(options.envs);
  const app = createApp({ inferenceProxy: createInferenceProxy() });
  class ProjectEnvFeeder extends EnvFeeder {
    protected override get envs(): EnvCatalog {
      return envs;
    }
  }
  return {
    handler: {
      fetch: (request, env, ctx) => app.fetch(request, env, ctx),
      queue: (batch, env, ctx) => {
        const sandbox = env.SANDBOX;
        // Rollouts run here: envs that execute code reach the bound sandbox service.
        if (sandbox) setSandboxProvider(() => new SandboxServiceClient(sandbox));
        return handleQueueBatch(batch, env, ctx, envs);
      },
    },
    durableObjects: { RunCoordinator, EnvSession, EnvFeeder: ProjectEnvFeeder },
    envs,
  };
}
