/**
 * The sandbox an env reaches in this Worker: a client of the SANDBOX service binding, handed to
 * every env instance the Worker builds (feeder and rollout workers alike) as a dependency, so an
 * env's evaluate() that runs code works in an isolate that never handled a queue batch.
 */
import type { Bindings } from "../api/bindings";
import type { EnvServices } from "../env-sdk/base-env";
import { SandboxServiceClient } from "../sandbox/service";

export function envServices(env: Pick<Bindings, "SANDBOX">): EnvServices {
  const binding = env.SANDBOX;
  if (!binding) return {};
  const client = new SandboxServiceClient(binding);
  return { sandbox: () => Promise.resolve(client) };
}
