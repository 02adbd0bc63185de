/**
 * `atropos-edge/worker`: build your project's Worker from your envs.
 *
 *     const worker = createWorker({ envs: [myEnv] });
 *     export const { RunCoordinator, EnvSession, EnvFeeder } = worker.durableObjects;
 *     export default worker.handler;
 */
export type { Bindings } from "../api/bindings";
export { type AtroposWorker, createWorker, type WorkerOptions } from "../worker/create-worker";
export {
  CloudflareContainerSandbox,
  type CloudflareContainerSandboxOptions,
  type ContainerSandboxStub,
} from "../worker/sandbox/cloudflare-sandbox";
export { createSandboxService } from "../worker/sandbox/service-worker";
export {
  WorkerLoaderSandbox,
  type WorkerLoaderSandboxOptions,
} from "../worker/sandbox/worker-loader";
