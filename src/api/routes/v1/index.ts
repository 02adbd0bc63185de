/**
 * atropos-edge's own API: exactly-once lease/ack delivery, policy versions, observability, env
 * checkpoints, env workers and API tokens. Everything but tokens is scoped to a run: /v1/runs/{run}/…
 */
import type { ApiRoute } from "../define";
import { ackBatch } from "./ack-batch";
import { atroposProxyChat } from "./atropos-proxy-chat";
import { atroposProxyCreate } from "./atropos-proxy-create";
import { atroposProxyDelete } from "./atropos-proxy-delete";
import { atroposProxyNodes } from "./atropos-proxy-nodes";
import { createTokenRoute } from "./create-token";
import { envScores } from "./env-scores";
import { getCheckpoint } from "./get-checkpoint";
import { getEnvWorker } from "./get-env-worker";
import { getGroup } from "./get-group";
import { getGuardRoute } from "./get-guard";
import { getInference } from "./get-inference";
import { getMetrics } from "./get-metrics";
import { getPolicy } from "./get-policy";
import { getReplay } from "./get-replay";
import { getTrajectories } from "./get-trajectories";
import { importReplay } from "./import-replay";
import { leaseBatch } from "./lease-batch";
import { listBatches } from "./list-batches";
import { listCheckpoints } from "./list-checkpoints";
import { listEvals } from "./list-evals";
import { listEvents } from "./list-events";
import { listGroups } from "./list-groups";
import { listRuns } from "./list-runs";
import { listTasksRoute } from "./list-tasks";
import { listTokensRoute } from "./list-tokens";
import { proxyChatCompletions } from "./proxy-chat-completions";
import { proxyCompletions } from "./proxy-completions";
import { proxyFinish } from "./proxy-finish";
import { proxyOpen } from "./proxy-open";
import { proxyState } from "./proxy-state";
import { putInference } from "./put-inference";
import { registerTaskRoute } from "./register-task";
import { reportEval } from "./report-eval";
import { reportMetrics } from "./report-metrics";
import { revokeTokenRoute } from "./revoke-token";
import { saveCheckpoint } from "./save-checkpoint";
import { setBaselinesRoute } from "./set-baselines";
import { setGuardRoute } from "./set-guard";
import { setPolicy } from "./set-policy";
import { setReplay } from "./set-replay";
import { startEnvWorker } from "./start-env-worker";
import { stats } from "./stats";
import { stopEnvWorker } from "./stop-env-worker";
import { timeseries } from "./timeseries";
import { updateEnv } from "./update-env";

export const v1Routes: readonly ApiRoute[] = [
  listRuns,
  leaseBatch,
  ackBatch,
  setPolicy,
  getPolicy,
  getReplay,
  setReplay,
  importReplay,
  stats,
  timeseries,
  getMetrics,
  reportMetrics,
  listGroups,
  getGroup,
  listBatches,
  envScores,
  updateEnv,
  listEvals,
  reportEval,
  getGuardRoute,
  setGuardRoute,
  setBaselinesRoute,
  listEvents,
  saveCheckpoint,
  listCheckpoints,
  getCheckpoint,
  startEnvWorker,
  getEnvWorker,
  stopEnvWorker,
  createTokenRoute,
  listTokensRoute,
  revokeTokenRoute,
  putInference,
  getInference,
  proxyChatCompletions,
  proxyCompletions,
  proxyState,
  proxyFinish,
  proxyOpen,
  registerTaskRoute,
  listTasksRoute,
  atroposProxyCreate,
  atroposProxyChat,
  atroposProxyNodes,
  atroposProxyDelete,
  getTrajectories,
];
