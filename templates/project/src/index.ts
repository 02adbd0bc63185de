/**
 * This project's Worker: the rollout API, the dashboard, env workers (queue consumers) and the
 * Durable Objects, with your envs registered. `wrangler deploy` deploys it.
 */
import { createWorker } from "atropos-edge/worker";
import addition from "./envs/addition";

const worker = createWorker({ envs: [addition] });

export const { RunCoordinator, EnvSession, EnvFeeder } = worker.durableObjects;
export default worker.handler;
