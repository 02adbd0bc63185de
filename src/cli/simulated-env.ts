/**
 * The CLI's side of the simulator: wiring an env to it (src/sim/wire-simulation.ts) and, for
 * envs running in workerd, registering items ahead.
 */
import type { BaseEnv, JsonValue } from "../env-sdk/base-env";
import type { SimulationSink } from "../env-sdk/simulate";
import type { EnvDefinition } from "../envs/index";

export {
  noSimulateWarning,
  type SimulatedEnvOptions,
  wireSimulation,
} from "../sim/wire-simulation";

/**
 * Worker envs roll out in workerd, out of reach of the simulator in this process, so no
 * simulate() hook runs per item. Instead the candidates of the first `count` items of an instance
 * with the same config are registered up front: the items the EnvFeeder hands out, for envs whose
 * item order depends only on their config and seed. (An env whose items follow its scores, like a
 * curriculum, drifts from them; prompts nobody registered get the generic mix.) Returns how many
 * items were registered.
 */
export async function registerItemsAhead(
  env: BaseEnv<JsonValue>,
  definition: EnvDefinition,
  sink: SimulationSink,
  count: number,
): Promise<number> {
  if (!definition.simulate) return 0;
  await env.setup();
  let registered = 0;
  while (registered < count) {
    const item = await env.getNextItem();
    if (item === null) break;
    sink.register(definition.name, definition.simulate(item));
    registered++;
  }
  return registered;
}
