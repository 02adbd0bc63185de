/**
 * Connects an env to the in-process simulator: before the env samples an item, its
 * `simulate(item)` candidates are registered with the simulator's toy policy (an object in this
 * process; nothing crosses the wire). Also lets the caller see every scored group, dropped or not.
 */
import type { BaseEnv, JsonValue } from "../env-sdk/base-env";
import type { EnvDefinition } from "../env-sdk/define-env";
import type { SimulationSink } from "../env-sdk/simulate";

export interface SimulatedEnvOptions {
  /** The simulator's toy policy, or null with an external inference server. */
  sink: SimulationSink | null;
  /** Scores of each group the env produced (before any drop rule). */
  onGroups?: (scores: number[][]) => void;
  /** Where the one-line warning for envs without `simulate` goes. */
  warn?: (line: string) => void;
}

export function noSimulateWarning(env: string): string {
  return `warning: env ${env} exports no simulate(): the simulator answers its prompts with a generic mix of answer shapes (docs/WRITING_ENVS.md shows how to export one)`;
}

export function wireSimulation(
  env: BaseEnv<JsonValue>,
  definition: EnvDefinition,
  options: SimulatedEnvOptions,
): void {
  const { sink, onGroups } = options;
  if (sink && !definition.simulate) options.warn?.(noSimulateWarning(definition.name));
  if (!onGroups && !(sink && definition.simulate)) return;
  const collect = env.collectTrajectories.bind(env);
  env.collectTrajectories = async (item) => {
    if (sink && definition.simulate) sink.register(definition.name, definition.simulate(item));
    const result = await collect(item);
    const [groups] = result;
    const list = groups === null ? [] : Array.isArray(groups) ? groups : [groups];
    if (onGroups && list.length > 0) onGroups(list.map((g) => g.scores ?? []));
    return result;
  };
}
