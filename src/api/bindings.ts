/**
 * The Worker's bindings as the API sees them: those of base-bindings.ts, plus the
 * RunCoordinator's namespace typed with its class.
 */
import type { BaseBindings } from "./base-bindings";
import type { RunCoordinator } from "./run-coordinator";

export type Bindings = BaseBindings & {
  RUN_COORDINATOR: DurableObjectNamespace<RunCoordinator>;
};
