/** This repository's own Worker: the example envs registered through the public factory. */
import { builtinEnvs } from "../envs/index";
import { createWorker } from "./create-worker";

const worker = createWorker({ envs: builtinEnvs.list() });

export const { RunCoordinator, EnvSession, EnvFeeder } = worker.durableObjects;
export default worker.handler;
