/** The Worker under test: the example envs plus test-only ones, built by the public factory. */
import { builtinEnvs } from "../../src/envs/index";
import { createWorker } from "../../src/worker/create-worker";
import { testEnvs } from "./test-envs";

const worker = createWorker({ envs: [...builtinEnvs.list(), ...testEnvs] });

export const { RunCoordinator, EnvSession, EnvFeeder } = worker.durableObjects;
export const testEnvCatalog = worker.envs;
export default worker.handler;
