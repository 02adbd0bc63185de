/**
 * `atropos-edge/worker`: build your project's Worker from your envs.
 *
 *     const worker = createWorker({ envs: [myEnv] });
 *     export const { RunCoordinator, EnvSession, EnvFeeder } = worker.durableObjects;
 *     export default worker.handler;
 */
export type { Bindings } from "../api/bindings";
export { type AtroposWorker, createWorker, type WorkerOptions } from "../worker/create-worker";
