/**
 * EnvFeeder: one Durable Object per env worker. It registers the env with its run, follows the
 * run's status on an alarm tick and keeps as many items in flight as Atropos' formulas allow
 * (max workers, max batches off-policy, min allocation), calling getNextItem() and sending item
 * descriptors to the rollout-items queue. Its iterator/curriculum state (the env's checkpoint)
 * and in-flight items are persisted, so it resumes after restarts.
 */
import { DurableObject } from "cloudflare:workers";
import type { Bindings } from "../api/bindings";
import type { EnvFeederPort, FeederSummary, ItemReport } from "../api/env-feeder-port";
import { errorMessage } from "../core/errors";

export type { FeederSummary };

import { guardEvaluation } from "../api/regression-guard";
import { listEnvWorker, reportWorkerStats } from "../api/storage/env-workers";
import { recordMetrics } from "../api/storage/metrics";
import { statusForEnv } from "../api/storage/status";
import {
  MAX_MESSAGE_BYTES,
  messageBytes,
  type RolloutItemMessage,
} from "../core/wire/queue-messages";
import type { EnvWorkerRef, EnvWorkerSpec } from "../core/wire/server-config";
import type { BaseEnv, JsonValue } from "../env-sdk/base-env";
import type { BaseEnvConfig } from "../env-sdk/config";
import type { EnvCatalog } from "../env-sdk/env-catalog";
import { crossedMultiple, planWorkers, resolveMaxNumWorkers } from "../env-sdk/runtime/scheduler";
import { feederEnv, rolloutEnv, withTokenizerOnDemand } from "../env-sdk/worker-env";
import { envServices } from "./env-sandbox";
import { addObservations, clearStepMetrics, stepMetrics } from "./feeder/metrics";
import {
  applyReport,
  type BacklogItem,
  dropItem,
  expireInFlight,
  type FeederState,
  forgetRegistration,
  issue,
  maySend,
  sendFailed,
  sent,
  startedState,
  summarize,
  takeUnsent,
  withBackoff,
} from "./feeder/state";
import { resolveSpec } from "./spec-inference";

export type { BacklogItem, FeederState };

/**
 * A feeder ticks every FEEDER_TICK_MS (default 500); its first tick after start() and the
 * early tick after a freed slot come 1/50 of that later. Tests that drive ticks by hand set it
 * high, so that no tick fires on its own between their steps.
 */
function tickDelays(value: string | undefined): { tick: number; soon: number } {
  const n = value === undefined ? Number.NaN : Number(value);
  const tick = Number.isFinite(n) && n > 0 ? n : 500;
  return { tick, soon: Math.max(1, Math.round(tick / 50)) };
}

export class EnvFeeder extends DurableObject<Bindings> implements EnvFeederPort {
  private state: FeederState | null = null;
  private envInstance: BaseEnv<JsonValue> | null = null;
  /** The spec with its servers (and keys) resolved, kept in memory only, with envInstance. */
  private resolved: EnvWorkerSpec | null = null;
  /** The spec's env config, parsed once (kept in memory only, with envInstance). */
  private parsedConfig: BaseEnvConfig | null = null;
  /** The evaluation in progress (kept in memory: a restart mid-evaluation skips that one). */
  private evaluation: Promise<void> | null = null;
  /**
   * Counts stop() calls. A tick awaits (registration, D1, queue sends), and the object's input
   * gate lets stop() run meanwhile; a tick that sees this change keeps the stop instead of
   * writing back the status it computed.
   */
  private stops = 0;

  /** The envs this Worker can run; `createWorker({ envs })` supplies them. */
  protected get envs(): EnvCatalog {
    throw new Error("EnvFeeder has no envs: build the Worker with createWorker({ envs })");
  }

  private async load(): Promise<FeederState | null> {
    if (!this.state) this.state = (await this.ctx.storage.get<FeederState>("state")) ?? null;
    return this.state;
  }

  private async save(): Promise<void> {
    if (this.state) await this.ctx.storage.put("state", this.state);
  }

  private async resolvedSpec(state: FeederState): Promise<EnvWorkerSpec> {
    if (!this.resolved) this.resolved = await resolveSpec(this.env, state.run, state.spec);
    return this.resolved;
  }

  private config(state: FeederState): BaseEnvConfig {
    this.parsedConfig ??= this.envs.get(state.spec.envName).parseConfig(state.spec.config);
    return this.parsedConfig;
  }

  private async instance(state: FeederState): Promise<BaseEnv<JsonValue>> {
    if (!this.envInstance) {
      this.envInstance = await feederEnv(
        // The parsed config: the definition takes it as it is.
        { ...(await this.resolvedSpec(state)), config: this.config(state) },
        this.envs.get(state.spec.envName),
        envServices(this.env),
      );
      if (state.checkpoint) this.envInstance.loadCheckpoint(state.checkpoint);
    }
    return this.envInstance;
  }

  /** Starts (or reconfigures) this feeder. Validates the env config before anything runs. */
  async start(run: string, name: string, spec: EnvWorkerRef): Promise<FeederSummary> {
    const config = this.envs.get(spec.envName).parseConfig(spec.config);
    const previous = await this.load();
    // Listed in D1 first, so a reset of the run always finds (and clears) this feeder.
    await listEnvWorker(this.env.DB, { run, name, envName: spec.envName, startedAt: Date.now() });
    this.state = startedState(run, name, spec, previous);
    this.envInstance = null;
    this.resolved = null;
    this.parsedConfig = config;
    await this.save();
    await this.ctx.storage.setAlarm(Date.now() + tickDelays(this.env.FEEDER_TICK_MS).soon);
    return summarize(this.state, this.evaluation !== null);
  }

  async stop(): Promise<FeederSummary | null> {
    const state = await this.load();
    if (!state) return null;
    this.stops++;
    state.status = "stopped";
    await this.save();
    await this.ctx.storage.deleteAlarm();
    await this.reportStats(state);
    return summarize(state, this.evaluation !== null);
  }

  /**
   * Forgets everything (the run was reset): state, checkpoint, counters and the alarm. A tick or
   * evaluation still running sees that its state is no longer current and writes nothing back.
   */
  async clear(): Promise<void> {
    this.stops++;
    this.state = null;
    this.envInstance = null;
    this.resolved = null;
    this.parsedConfig = null;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  async describe(): Promise<FeederSummary | null> {
    const state = await this.load();
    return state ? summarize(state, this.evaluation !== null) : null;
  }

  private async register(state: FeederState): Promise<boolean> {
    const cfg = this.config(state);
    const coordinator = this.env.RUN_COORDINATOR.get(
      this.env.RUN_COORDINATOR.idFromName(state.run),
    );
    const res = await coordinator.registerEnv(state.run, {
      max_token_length: cfg.max_token_length,
      desired_name: cfg.wandb_name ?? state.spec.envName,
      weight: cfg.inference_weight,
      group_size: cfg.group_size,
      min_batch_allocation: cfg.min_batch_allocation ?? null,
      env_key: `feeder:${state.name}`,
    });
    if (res.status !== "success") return false;
    state.envId = Number(res.env_id);
    state.status = "running";
    return true;
  }

  override async alarm(): Promise<void> {
    const state = await this.load();
    if (!state || state.status === "stopped") return;
    // last_error describes the latest tick: cleared first, set by the tick or its failure.
    state.lastError = null;
    const stopsBefore = this.stops;
    try {
      await this.tick(state);
    } catch (error) {
      state.lastError = errorMessage(error);
      console.error(
        JSON.stringify({
          level: "error",
          msg: "feeder tick failed",
          feeder: state.name,
          error: state.lastError,
        }),
      );
    }
    if (this.state !== state) return; // cleared (run reset) or restarted meanwhile
    if (this.stops !== stopsBefore) state.status = "stopped";
    await this.save();
    await this.reportStats(state);
    // Re-arm late, after the work, so a throw above cannot replace the alarm's retry schedule.
    if ((state.status as FeederState["status"]) !== "stopped") {
      await this.ctx.storage.setAlarm(Date.now() + tickDelays(this.env.FEEDER_TICK_MS).tick);
    }
  }

  private async tick(state: FeederState): Promise<void> {
    if (state.envId === null && !(await this.register(state))) {
      state.status = "waiting_for_trainer";
      return;
    }
    const found = await statusForEnv(this.env.DB, state.run, state.envId!);
    if (!found) {
      // The run was reset or the env forgotten: register again.
      forgetRegistration(state);
      return;
    }
    const { status, batchSize, policyVersion } = found;
    if (found.paused) {
      // Paused through PATCH /v1/runs/{run}/envs/{id}: issue nothing until resumed.
      state.status = "paused";
      return;
    }
    const cfg = this.config(state);
    const previousStep = state.lastStep ?? null;
    if (previousStep !== null && previousStep !== status.current_step) {
      await this.reportStepMetrics(state, previousStep);
    }
    state.lastStep = status.current_step;
    if (previousStep !== null && this.evaluation === null) {
      const evalStep = crossedMultiple(previousStep, status.current_step, cfg.steps_per_eval);
      if (evalStep !== null) this.startEvaluation(state, evalStep);
    }
    const now = Date.now();
    expireInFlight(state, cfg.worker_timeout, now);
    const plan = planWorkers({
      config: cfg,
      status,
      batchSize,
      // total_steps ≤ 0: feed until stopped.
      totalSteps: cfg.total_steps > 0 ? cfg.total_steps : Number.POSITIVE_INFINITY,
      maxNumWorkers: resolveMaxNumWorkers(cfg, (await this.resolvedSpec(state)).inference.length),
      evalRunning: this.evaluation !== null,
    });
    if (plan.action === "terminate") {
      state.status = "stopped";
      return;
    }
    if (plan.action === "pause") {
      state.status = "paused";
      return;
    }
    state.status = "running";
    const free = plan.target - Object.keys(state.inFlight).length;
    if (free <= 0 || !maySend(state)) return;
    const env = await this.instance(state);
    const message = (itemId: string, item: JsonValue): RolloutItemMessage => ({
      itemId,
      run: state.run,
      feeder: state.name,
      envId: state.envId!,
      spec: state.spec,
      item,
      policyVersion,
      issuedAt: now,
    });
    // Items whose send failed on an earlier tick go first, with their ids.
    const messages = takeUnsent(state, free).map((b) => message(b.itemId, b.item));
    for (const m of messages) issue(state, m.itemId, m.item as JsonValue, now);
    for (let taken = messages.length; taken < free; taken++) {
      if (!withBackoff(state, now, (backoff) => backoff.maySpawn())) break;
      const item = await env.getNextItem();
      if (item === null) break;
      const next = message(crypto.randomUUID(), item);
      const bytes = messageBytes(next);
      if (bytes > MAX_MESSAGE_BYTES) {
        // Queue messages are capped at 128 KB: the env must send ids or seeds, not data.
        dropItem(state, "item too large for a queue message", now);
        state.lastError = `item of ${state.spec.envName} is ${bytes} bytes as a queue message (limit ${MAX_MESSAGE_BYTES}); make getNextItem() return ids or seeds, not data`;
        continue;
      }
      issue(state, next.itemId, item, now);
      messages.push(next);
    }
    state.checkpoint = env.saveCheckpoint();
    // Persist the iterator position and in-flight set before the items leave.
    await this.save();
    for (let i = 0; i < messages.length; i += 100) {
      const chunk = messages.slice(i, i + 100);
      try {
        await this.env.ROLLOUT_ITEMS.sendBatch(chunk.map((body) => ({ body })));
      } catch (error) {
        // Their slots are free at once; the items go out again after a back-off.
        const unsent = messages
          .slice(i)
          .map((m) => ({ itemId: m.itemId, item: m.item as JsonValue }));
        sendFailed(state, unsent, errorMessage(error));
        return;
      }
      sent(state, chunk.length);
    }
  }

  /**
   * Runs env.evaluate() (with a tokenizer and inference, like a rollout worker) and stores the
   * metrics in the metrics store (kind eval), where GET /v1/runs/{run}/metrics and the dashboard read them. While it runs,
   * eval_handling limits how many training items are fed (STOP_TRAIN: none).
   */
  private startEvaluation(state: FeederState, step: number): void {
    const envId = state.envId;
    this.evaluation = (async () => {
      const env = await rolloutEnv(
        await this.resolvedSpec(state),
        this.envs.get(state.spec.envName),
        this.env.PAYLOADS,
        { services: envServices(this.env) },
      );
      const { metrics } = await withTokenizerOnDemand(env, () => env.evaluateWithSamples());
      if (this.state !== state) return; // the run was reset meanwhile
      if (envId !== null) {
        await recordMetrics(this.env.DB, {
          run: state.run,
          envId,
          step,
          kind: "eval",
          values: metrics,
        });
        // The run's regression guard checks every evaluation, whoever ran it.
        await guardEvaluation(this.env, state.run, envId, step, (work) => this.ctx.waitUntil(work));
      }
      state.evaluations = (state.evaluations ?? 0) + 1;
      await this.save();
    })()
      .catch((error) => {
        state.lastError = `evaluation at step ${step} failed: ${errorMessage(error)}`;
      })
      .finally(() => {
        this.evaluation = null;
      });
    this.ctx.waitUntil(this.evaluation);
  }

  /**
   * Outcome of one item, from a queue consumer (or the dead-letter consumer). Returns whether the
   * item was in flight: a redelivered message reports again, and is not counted twice.
   */
  async report(itemId: string, outcome: ItemReport): Promise<boolean> {
    const state = await this.load();
    if (!state) return false;
    const reported = applyReport(state, itemId, outcome, Date.now());
    if (!reported) return false;
    if (reported.scored) {
      // Curriculum feedback happens here, where the iterator state lives.
      const env = await this.instance(state);
      env.recordScores(reported.entry.item, outcome.scores ?? []);
      // What the curriculum observed (e.g. curriculum/level) joins the step's env metrics.
      addObservations(state, env.takeObservations());
      state.checkpoint = env.saveCheckpoint();
    }
    await this.save();
    // A slot just freed: refill it soon instead of at the next regular tick (reports arriving
    // within the same few milliseconds share one early tick).
    if (state.status === "running") {
      const next = await this.ctx.storage.getAlarm();
      const soon = Date.now() + tickDelays(this.env.FEEDER_TICK_MS).soon;
      if (next === null || next > soon) await this.ctx.storage.setAlarm(soon);
    }
    return true;
  }

  /**
   * Stores the finished step's env metrics. On failure they stay, and are reported with the
   * next step's.
   */
  private async reportStepMetrics(state: FeederState, step: number): Promise<void> {
    const values = stepMetrics(state);
    if (state.envId === null || Object.keys(values).length === 0) return;
    try {
      await recordMetrics(this.env.DB, {
        run: state.run,
        envId: state.envId,
        step,
        kind: "env",
        values,
      });
      clearStepMetrics(state);
    } catch (error) {
      state.lastError = `metrics of step ${step} not stored: ${errorMessage(error)}`;
    }
  }

  private async reportStats(state: FeederState): Promise<void> {
    if (state.envId === null) return;
    await reportWorkerStats(this.env.DB, {
      run: state.run,
      envId: state.envId,
      envName: state.spec.envName,
      itemsInFlight: Object.keys(state.inFlight).length,
      itemsSucceeded: state.succeeded,
      itemsFailed: state.failed,
      // An evaluation holds training back (Atropos' STOP_TRAIN): the dashboard shows it as such.
      workerStatus:
        this.evaluation !== null && state.status !== "stopped" ? "evaluating" : state.status,
      updatedAt: Date.now(),
    });
  }
}
