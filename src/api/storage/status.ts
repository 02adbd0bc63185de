/**
 * /status-env numbers for one env, from D1 (shared by the HTTP route and the env feeder DO).
 */
import { computeStatusEnv, type StatusEnvResult } from "../../core/wire/status-env";
import { getRun, listEnvs, queueByEnv, queueCounts, toStatusEnvRecord } from "./runs";

export async function statusForEnv(
  d1: D1Database,
  run: string,
  envId: number,
): Promise<{
  status: StatusEnvResult;
  batchSize: number;
  policyVersion: number;
  paused: boolean;
} | null> {
  const [runRow, envRows, counts] = await Promise.all([
    getRun(d1, run),
    listEnvs(d1, run),
    queueCounts(d1, run),
  ]);
  const me = envRows.find((e) => e.envId === envId);
  if (!me) return null;
  return {
    status: computeStatusEnv({
      envId,
      envs: envRows.map(toStatusEnvRecord),
      queue: queueByEnv(counts),
      batchSize: runRow?.batchSize ?? -1,
      step: runRow?.step ?? 0,
    }),
    batchSize: runRow?.batchSize ?? -1,
    policyVersion: runRow?.policyVersion ?? 0,
    paused: me.paused,
  };
}
