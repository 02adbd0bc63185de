/**
 * The RunCoordinator's env registration: which earlier registration a new one resumes (pure), and
 * the transition that resumes it or inserts a new env. The Durable Object runs it exclusively.
 */
import type { RegisterEnvAnswer } from "../core/wire/api-schemas";
import type { RegisterEnv } from "../core/wire/schemas";
import { type EnvRow, getRunAndEnvs, insertEnv, resumeEnv } from "./storage/runs";

/**
 * The env a registration takes over: the one with its `env_key`, or else (no key) a keyless env
 * of the same name and group size that disconnected or went quiet for `staleMs`.
 */
export function resumableEnv(
  existing: EnvRow[],
  body: RegisterEnv,
  now: number,
  staleMs: number,
): EnvRow | undefined {
  if (body.env_key !== undefined) return existing.find((e) => e.envKey === body.env_key);
  return existing.find(
    (e) =>
      e.envKey === null &&
      e.desiredName === body.desired_name &&
      e.groupSize === body.group_size &&
      (!e.connected || now - e.lastSeenAt > staleMs),
  );
}

/** Registers (or resumes) an env of `run`; call inside the coordinator's exclusive section. */
export async function registerEnvTransition(
  db: D1Database,
  run: string,
  body: RegisterEnv,
  now: number,
  staleMs: number,
): Promise<RegisterEnvAnswer> {
  const { run: runRow, envs: existing } = await getRunAndEnvs(db, run);
  if (!runRow?.registered) return { status: "wait for trainer to start" };
  const resumable = resumableEnv(existing, body, now, staleMs);
  const settings = {
    maxTokenLength: body.max_token_length,
    weight: body.weight,
    groupSize: body.group_size,
    minBatchAllocation: body.min_batch_allocation ?? null,
  };
  let envId: number;
  let realName: string;
  if (resumable) {
    envId = resumable.envId;
    realName = resumable.realName;
    await resumeEnv(db, run, envId, settings, now);
  } else {
    envId = existing.reduce((m, e) => Math.max(m, e.envId + 1), 0);
    const sameName = existing.filter((e) => e.desiredName === body.desired_name).length;
    realName = `${body.desired_name}_${sameName}`;
    await insertEnv(db, {
      run,
      envId,
      desiredName: body.desired_name,
      realName,
      envKey: body.env_key ?? null,
      ...settings,
      connected: true,
      registeredAt: now,
      lastSeenAt: now,
    });
  }
  return {
    status: "success",
    env_id: envId,
    wandb_name: realName,
    checkpoint_dir: runRow.checkpointDir ?? "",
    starting_step: runRow.step,
    checkpoint_interval: runRow.saveCheckpointInterval,
    num_steps: runRow.numSteps,
    resumed: resumable !== undefined,
  };
}
