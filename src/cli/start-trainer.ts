/**
 * `start`'s trainer: either a shell command run in the foreground (it registers and leases
 * itself), or the demo trainer loop: lease → check shapes / GRPO advantages → step the toy
 * policy → bump the policy version → ack, until the steps are done, a stop or a failure.
 */
import { spawn } from "node:child_process";
import type { TrainerClient } from "../client/trainer-client";
import { demoTrainStep, type ToyPolicyTrainer } from "./demo-trainer";
import type { LearningRecorder } from "./learning-summary";
import { type EnvRun, nodeEnvsFailure } from "./start-node-envs";
import type { StartProgress } from "./start-progress";
import type { WorkerEnvs } from "./start-worker-envs";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the trainer command in the foreground; a failure when it exits non-zero or overruns. */
export async function runTrainerCommand(
  command: string,
  env: Record<string, string>,
  stopRequested: () => boolean,
  maxSeconds: number,
): Promise<{ failure: string | null }> {
  const child = spawn(command, {
    shell: true,
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, ...env },
  });
  const exited = new Promise<number | null>((done) => {
    child.on("exit", (code) => done(code));
    child.on("error", () => done(127));
  });
  const started = Date.now();
  for (;;) {
    const code = await Promise.race([exited, sleep(250).then(() => undefined)]);
    if (code !== undefined) {
      return { failure: code === 0 ? null : `trainer command exited with code ${code}` };
    }
    const overran = maxSeconds > 0 && Date.now() - started > maxSeconds * 1000;
    if (stopRequested() || overran) {
      child.kill("SIGTERM");
      await exited;
      return {
        failure: overran ? `trainer command still running after --max-seconds ${maxSeconds}` : null,
      };
    }
  }
}

export interface DemoTrainerLoop {
  trainer: TrainerClient;
  view: StartProgress;
  learning: LearningRecorder;
  /** The toy policy (simulator only), stepped and pushed after each batch. */
  policyTrainer: ToyPolicyTrainer | null;
  /** The policy version this trainer announced last (counts from 0). */
  policy: { version: number };
  /** The envs on the Worker's queue path (null: in Node, `envRuns`). */
  workerEnvs: WorkerEnvs | null;
  envRuns: EnvRun[];
  steps: number;
  maxSeconds: number;
  leaseSeconds: number;
  started: number;
  stopRequested(): boolean;
}

/** Trains until the steps are done or a stop; returns why it failed, or null. */
export async function runDemoTrainer(loop: DemoTrainerLoop): Promise<string | null> {
  const { trainer, view, learning, workerEnvs, policy } = loop;
  const progress = view.progress;
  while (!loop.stopRequested() && progress.step < loop.steps) {
    if (loop.maxSeconds > 0 && Date.now() - loop.started > loop.maxSeconds * 1000) {
      return `gave up after --max-seconds ${loop.maxSeconds} (last reason: ${progress.lastReason ?? "none"})`;
    }
    const envsFailure = workerEnvs ? workerEnvs.failure() : nodeEnvsFailure(loop.envRuns);
    if (envsFailure) return envsFailure;
    const leased = await trainer.lease({ leaseSeconds: loop.leaseSeconds });
    if (!leased.batch) {
      progress.lastReason = leased.reason;
      await sleep(100);
      continue;
    }
    progress.lastReason = null;
    const batch = leased.batch;
    const result = demoTrainStep(batch.groups);
    const stale = batch.manifest.map((g) => policy.version - g.policy_version);
    progress.staleness = stale.length
      ? { mean: stale.reduce((a, b) => a + b, 0) / stale.length, max: Math.max(...stale) }
      : null;
    learning.stepStaleness(progress.step + 1, stale);
    if (workerEnvs) {
      // The feeders' env ids come with their status polls: a batch leased before the first
      // poll answered would otherwise be left out of the curve.
      if (batch.manifest.some((g) => !workerEnvs.byEnvId(g.env_id))) await workerEnvs.pollAll();
      // Worker envs' groups are scored in workerd: the curve sees those that reach a batch.
      batch.manifest.forEach((g, i) => {
        const env = workerEnvs.byEnvId(g.env_id);
        const scores = batch.groups[i]?.scores;
        if (env && scores) learning.groups(env.name, [scores]);
      });
    }
    loop.policyTrainer?.step(batch.groups);
    policy.version++;
    if (loop.policyTrainer) {
      await loop.policyTrainer.push(policy.version);
      learning.pushes++;
    }
    // This trainer counts from 0: the run may remember a higher version from an earlier start.
    await trainer.setPolicyVersion(policy.version, { reset: policy.version === 1 });
    await trainer.ack(batch);
    view.stepDone(result);
  }
  return null;
}
