/**
 * atropos-edge's own API: exactly-once lease/ack delivery, policy versions, observability, env
 * checkpoints, env workers and API tokens. Everything but tokens is scoped to a run: /v1/runs/{run}/…
 */
import type { ApiRoute } from "../define";
import { ackBatch } from "./batches/ack-batch";
import { leaseBatch } from "./batches/lease-batch";
import { listBatches } from "./batches/list-batches";
import { envScores } from "./closed-loop/env-scores";
import { getGuardRoute } from "./closed-loop/get-guard";
import { getReplay } from "./closed-loop/get-replay";
import { importReplay } from "./closed-loop/import-replay";
import { listEvals } from "./closed-loop/list-evals";
import { reportEval } from "./closed-loop/report-eval";
import { setBaselinesRoute } from "./closed-loop/set-baselines";
import { setGuardRoute } from "./closed-loop/set-guard";
import { setReplay } from "./closed-loop/set-replay";
import { getEnvWorker } from "./env-workers/get-env-worker";
import { getInference } from "./env-workers/get-inference";
import { putInference } from "./env-workers/put-inference";
import { startEnvWorker } from "./env-workers/start-env-worker";
import { stopEnvWorker } from "./env-workers/stop-env-worker";
import { updateEnv } from "./env-workers/update-env";
import { getGroup } from "./groups/get-group";
import { getTrajectories } from "./groups/get-trajectories";
import { listGroups } from "./groups/list-groups";
import { stats } from "./groups/stats";
import { timeseries } from "./groups/timeseries";
import { atroposProxyChat } from "./proxy/atropos-proxy-chat";
import { atroposProxyCreate } from "./proxy/atropos-proxy-create";
import { atroposProxyDelete } from "./proxy/atropos-proxy-delete";
import { atroposProxyNodes } from "./proxy/atropos-proxy-nodes";
import { proxyChatCompletions } from "./proxy/proxy-chat-completions";
import { proxyCompletions } from "./proxy/proxy-completions";
import { proxyFinish } from "./proxy/proxy-finish";
import { proxyOpen } from "./proxy/proxy-open";
import { proxyState } from "./proxy/proxy-state";
import { getCheckpoint } from "./runs/get-checkpoint";
import { getMetrics } from "./runs/get-metrics";
import { getPolicy } from "./runs/get-policy";
import { listCheckpoints } from "./runs/list-checkpoints";
import { listEvents } from "./runs/list-events";
import { listRuns } from "./runs/list-runs";
import { reportMetrics } from "./runs/report-metrics";
import { saveCheckpoint } from "./runs/save-checkpoint";
import { setPolicy } from "./runs/set-policy";
import { listTasksRoute } from "./tasks/list-tasks";
import { registerTaskRoute } from "./tasks/register-task";
import { createTokenRoute } from "./tokens/create-token";
import { listTokensRoute } from "./tokens/list-tokens";
import { revokeTokenRoute } from "./tokens/revoke-token";

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
