/**
 * The serve loop of one registered env: every poll (`tick`) reads /status-env, runs step checks
 * (eval / checkpoint crossings), and keeps the number of running slots at the scheduler's target;
 * each slot runs one item through the rollout core (`runSlot`), which feeds the curriculum,
 * validates and submits (idempotently). `shutdown` cancels the slots and reports the last step.
 * `serveEnv` (serve.ts) registers the env and builds one of these.
 *
 * A cancelled slot cannot be interrupted mid-request (envs get no signal); its result is discarded
 * and its item re-queued.
 */
import { abortableSleep } from "../../core/concurrency/abortable-sleep";
import { errorMessage } from "../../core/errors";
import type { BaseEnv, JsonValue } from "../base-env";
import type { BaseEnvConfig } from "../config";
import type { RolloutApiClient } from "./api-client";
import type { checkpointsFor } from "./checkpoints";
import { DropBackoff } from "./drop-backoff";
import { countDrop, runRolloutItem } from "./rollout-core";
import { crossedMultiple, type EnvStatus, planWorkers } from "./scheduler";
import { ServeMetricReporter } from "./serve-metrics";
import type { ServeOptions, ServeSummary } from "./serve-types";

/** One running rollout: an item in one of the loop's `max_num_workers` places. */
export interface Slot<Item> {
  id: number;
  item: Item;
  startedAt: number;
  cancelled: boolean;
  /** The run's policy version when this rollout started (what its groups are stamped with). */
  policyVersion: number | undefined;
}

/** What the loop learned at registration (serve.ts). */
export interface ServeLoopSetup {
  envId: number;
  startingStep: number;
  totalSteps: number;
  batchSize: number;
  maxTokenLen: number;
  maxSlots: number;
  checkpointInterval: number;
  /** Saves and loads the env's state (null: checkpoints off). */
  checkpoints: ReturnType<typeof checkpointsFor>;
}

/** Why `tick` ended the loop; null: keep going. */
export type TickOutcome = "terminated" | "exhausted" | "status_error" | null;

export class ServeLoop<Item extends JsonValue, Config extends BaseEnvConfig> {
  readonly summary: ServeSummary;
  private readonly config: Config;
  private readonly signal: AbortSignal | undefined;
  private readonly now: () => number;
  private readonly emit: NonNullable<ServeOptions["onEvent"]>;
  private readonly pollMs: number;
  private currStep: number;
  private readonly backlog: Item[] = [];
  private readonly slots = new Map<number, Slot<Item>>();
  private readonly inFlight = new Set<Promise<void>>();
  private nextId = 0;
  private exhausted = false;
  private evalRunning = false;
  private evalPromise: Promise<void> | null = null;
  private consecutiveErrors = 0;
  /** Set when a slot frees, so the loop refills it without waiting for the poll. */
  private woke = false;
  private wakeWaiter: (() => void) | null = null;
  /** Groups being submitted after their slot was given back (bounded by maxSlots). */
  private submitting = 0;
  private lastStatus: { status: EnvStatus; at: number } | null = null;
  private refreshing = false;
  private readonly metrics: ServeMetricReporter;
  private readonly backoff: DropBackoff;
  /** Items failing with a bug in the env's code would otherwise be retried as fast as they fail. */
  private readonly failureBackoff: DropBackoff;

  constructor(
    private readonly env: BaseEnv<Item, Config>,
    private readonly api: RolloutApiClient,
    private readonly setup: ServeLoopSetup,
    private readonly options: ServeOptions = {},
  ) {
    this.config = env.config;
    this.signal = options.signal;
    this.now = options.now ?? Date.now;
    this.emit = options.onEvent ?? (() => {});
    this.pollMs = options.pollIntervalMs ?? 100;
    this.currStep = setup.startingStep;
    this.summary = {
      envId: setup.envId,
      exitReason: "aborted",
      finalStep: this.currStep,
      groupsSubmitted: 0,
      groupsDropped: 0,
      submitFailures: 0,
      workerErrors: 0,
      dropReasons: {},
      evaluations: [],
    };
    this.metrics = new ServeMetricReporter(api, setup.envId, this.emit);
    this.backoff = new DropBackoff({ now: this.now });
    this.failureBackoff = new DropBackoff({ now: this.now, threshold: 50 });
  }

  /** Ticks until terminated, exhausted, aborted or out of loops; then shuts down. */
  async run(): Promise<ServeSummary> {
    let loops = 0;
    try {
      while (!this.signal?.aborted) {
        if (this.options.maxLoops !== undefined && loops++ >= this.options.maxLoops) {
          this.summary.exitReason = "max_loops";
          break;
        }
        const outcome = await this.tick();
        if (outcome === "status_error") {
          if (this.signal?.aborted) break;
          await abortableSleep(this.pollMs, this.signal).catch(() => {});
          continue;
        }
        if (outcome !== null) {
          this.summary.exitReason = outcome;
          break;
        }
        await this.waitForWork();
      }
    } finally {
      await this.shutdown();
    }
    return this.summary;
  }

  /** One poll: status, step checks, slot refill, timeouts. Throws past maxConsecutiveErrors. */
  async tick(): Promise<TickOutcome> {
    const status = await this.readStatus();
    if (status === null) return "status_error";
    this.env.inference.updateWeight(status.env_weight);
    if (status.current_step !== this.currStep) await this.stepChanged(status.current_step);

    const plan = planWorkers({
      config: this.config,
      status,
      batchSize: this.setup.batchSize,
      totalSteps: this.setup.totalSteps,
      maxNumWorkers: this.setup.maxSlots,
      evalRunning: this.evalRunning,
    });
    if (plan.action === "terminate") return "terminated";
    if (plan.action === "pause") {
      if (this.slots.size > 0) this.emit({ type: "paused" });
      this.cancel([...this.slots.values()]);
    } else if (this.slots.size < this.setup.maxSlots) {
      await this.fill(plan.target);
    }

    if (this.config.worker_timeout > 0) {
      const limit = this.now() - this.config.worker_timeout * 1000;
      const stale = [...this.slots.values()].filter((s) => s.startedAt < limit);
      for (let i = 0; i < stale.length; i++) this.drop("worker timeout");
      this.cancel(stale, true);
    }

    const { stopWhenExhausted } = this.options;
    if (stopWhenExhausted && this.exhausted && this.slots.size === 0 && this.backlog.length === 0) {
      return "exhausted";
    }
    return null;
  }

  /** One slot's rollout, from its item to its groups submitted (or dropped, or failed). */
  async runSlot(slot: Slot<Item>): Promise<void> {
    const { config, summary, signal } = this;
    try {
      const result = await runRolloutItem(this.env, slot.item, {
        validation: {
          groupSize: config.group_size,
          ensureScoresAreNotSame: config.ensure_scores_are_not_same,
          maxTokenLen: this.setup.maxTokenLen,
          includeMessages: config.include_messages,
          includeTokenTexts: config.include_token_texts,
          tokenizer: this.env.tokenizer,
        },
        cancelled: () => slot.cancelled,
        submit: async (valid) => {
          const payload = valid.length === 1 ? valid[0]!.group : valid.map((v) => v.group);
          // The slot bounds generation, not the API round trip: give it back while submitting,
          // unless as many submissions as slots are pending (then the API is the bottleneck).
          const released = this.submitting < this.setup.maxSlots && this.slots.delete(slot.id);
          if (released) {
            this.submitting++;
            this.wake();
          }
          try {
            return await this.api.submitGroups(payload, this.setup.envId, {
              signal,
              policyVersion: slot.policyVersion,
            });
          } finally {
            if (released) this.submitting--;
          }
        },
      });
      if (result.kind === "cancelled") return;
      if (result.kind === "submitted") {
        const res = result.submitted;
        this.emit({ type: "submitted", groups: result.groups, status: res.status, ok: res.ok });
        if (res.ok) {
          this.backoff.kept();
          this.failureBackoff.kept();
          summary.groupsSubmitted += result.groups;
          this.countQueued(result.groups);
        } else summary.submitFailures++;
      } else if (slot.cancelled || signal?.aborted) return;
      this.backlog.push(...result.backlog);
      if (result.kind === "submitted" || result.kind === "dropped") {
        for (const reason of result.drops) this.drop(reason);
        this.emit({ type: "item", outcome: "ran" });
      } else {
        // No retry here: inference and the API client already retried transient failures.
        summary.workerErrors++;
        this.emit({
          type: "worker_error",
          message: result.message,
          errorClass: result.kind,
          error: result.error,
        });
        this.emit({ type: "item", outcome: "failed" });
        if (result.kind === "permanent") {
          const backingOff = this.failureBackoff.dropped(
            `every item failed with an error in the env's code (last: ${result.message})`,
          );
          if (backingOff) this.emit({ type: "backing_off", message: backingOff });
        }
      }
    } finally {
      if (this.slots.delete(slot.id)) this.wake();
    }
  }

  /** Cancels the slots, lets their cleanup run briefly, reports the last step and disconnects. */
  async shutdown(): Promise<void> {
    this.cancel([...this.slots.values()]);
    // Finished work of cancelled slots is discarded; wait briefly so cleanup() hooks run.
    await Promise.race([Promise.allSettled([...this.inFlight]), abortableSleep(1000)]);
    if (this.evalPromise) await Promise.race([this.evalPromise, abortableSleep(1000)]);
    this.metrics.reportStep(this.currStep, this.env.metrics());
    await Promise.race([this.metrics.settled(), abortableSleep(2000)]);
    if (this.options.disconnectOnExit ?? true) {
      await this.api.disconnectEnv(this.setup.envId).catch(() => {});
    }
  }

  /** The status to plan with, or null after a failure that is retried next poll. */
  private async readStatus(): Promise<EnvStatus | null> {
    const wokenBySlot = this.woke;
    this.woke = false;
    try {
      let status: EnvStatus;
      if (wokenBySlot && this.lastStatus) {
        // Woken by a freed slot: refill it now from the latest status, and refresh that status in
        // the background once it is older than a poll interval.
        status = this.lastStatus.status;
        if (this.now() - this.lastStatus.at >= this.pollMs) this.refreshStatus();
      } else {
        status = await this.api.statusEnv(this.setup.envId, this.signal);
        this.lastStatus = { status, at: this.now() };
      }
      this.consecutiveErrors = 0;
      return status;
    } catch (err) {
      if (this.signal?.aborted) return null;
      this.emit({
        type: "status_error",
        message: errorMessage(err),
      });
      if (++this.consecutiveErrors >= (this.options.maxConsecutiveErrors ?? 30)) throw err;
      return null;
    }
  }

  /** Single-flight background /status-env; failures are left to the next timed poll. */
  private refreshStatus(): void {
    if (this.refreshing) return;
    this.refreshing = true;
    this.api
      .statusEnv(this.setup.envId, this.signal)
      .then((fresh) => {
        this.lastStatus = { status: fresh, at: this.now() };
      })
      .catch(() => {})
      .finally(() => {
        this.refreshing = false;
      });
  }

  /** Keeps the cached status conservative until the next refresh: the queue only grew. */
  private countQueued(groups: number): void {
    if (!this.lastStatus) return;
    // (status-env counts groups of this env's size; a valid group is one of them.)
    const s = this.lastStatus.status;
    this.lastStatus.status = {
      ...s,
      queue_size: s.queue_size + groups,
      self_queue_size: s.self_queue_size + groups,
    };
  }

  /** Evaluation and checkpoint crossings, and the finished step's metrics. */
  private async stepChanged(step: number): Promise<void> {
    const evalStep = crossedMultiple(this.currStep, step, this.config.steps_per_eval);
    if (evalStep !== null && !this.evalRunning) this.startEval(evalStep);
    const ckptStep = crossedMultiple(this.currStep, step, this.setup.checkpointInterval);
    if (
      ckptStep !== null &&
      (await this.setup.checkpoints?.save(ckptStep, this.env.saveCheckpoint()))
    )
      this.emit({ type: "checkpoint", step: ckptStep });
    this.metrics.reportStep(this.currStep, this.env.metrics());
    this.currStep = step;
    this.summary.finalStep = step;
    this.emit({ type: "step", step });
  }

  /** Cancels the oldest slots above `target`, then starts items until `target` run. */
  private async fill(target: number): Promise<void> {
    const { slots } = this;
    if (slots.size > target) {
      const oldestFirst = [...slots.values()].sort((a, b) => a.startedAt - b.startedAt);
      this.cancel(oldestFirst.slice(0, slots.size - Math.max(0, target)));
    }
    while (slots.size < target && this.backoff.maySpawn() && this.failureBackoff.maySpawn()) {
      const item =
        this.backlog.length > 0
          ? this.backlog.shift()!
          : this.exhausted
            ? null
            : await this.env.getNextItem();
      if (item === null) {
        this.exhausted = true;
        break;
      }
      this.start(item);
    }
    // A dataset that ended may get more items later (curriculum); re-ask next poll.
    if (!this.options.stopWhenExhausted) this.exhausted = false;
  }

  private start(item: Item): void {
    const slot: Slot<Item> = {
      id: this.nextId++,
      item,
      startedAt: this.now(),
      cancelled: false,
      policyVersion: this.lastStatus?.status.policy_version,
    };
    this.slots.set(slot.id, slot);
    const p = this.runSlot(slot).finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  private startEval(step: number): void {
    this.evalRunning = true;
    if (this.config.eval_handling === "STOP_TRAIN") this.cancel([...this.slots.values()]);
    this.evalPromise = this.env
      .evaluateWithSamples()
      .then((result) => {
        this.summary.evaluations.push({ step, metrics: result.metrics });
        this.emit({ type: "eval", step, result });
        this.metrics.report(step, "eval", result.metrics);
      })
      .catch((err) => this.emit({ type: "worker_error", message: `evaluate: ${String(err)}` }))
      .finally(() => {
        this.evalRunning = false;
      });
  }

  private drop(reason: string): void {
    const backingOff = this.backoff.dropped(reason);
    if (backingOff) this.emit({ type: "backing_off", message: backingOff });
    this.summary.groupsDropped++;
    countDrop(this.summary.dropReasons, reason);
    this.metrics.dropped(reason);
    this.emit({ type: "dropped", reason });
  }

  /** Cancels slots; their items go back to the backlog unless `dropItems`. */
  private cancel(slots: Slot<Item>[], dropItems = false): void {
    for (const s of slots) {
      s.cancelled = true;
      this.slots.delete(s.id);
      if (!dropItems) this.backlog.push(s.item);
    }
  }

  private wake(): void {
    this.woke = true;
    this.wakeWaiter?.();
  }

  /** Sleeps until the next poll, a freed slot (possibly already) or abort. */
  private async waitForWork(): Promise<void> {
    if (this.woke) {
      // Items that settle without I/O (an env failing at once) would wake the loop from
      // microtasks forever, starving timers and I/O: give the event loop a turn.
      await new Promise<void>((resolve) => setTimeout(resolve, 0));
      return;
    }
    const { signal } = this;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        this.wakeWaiter = null;
        resolve();
      };
      const timer = setTimeout(done, this.pollMs);
      signal?.addEventListener("abort", done, { once: true });
      this.wakeWaiter = done;
    });
  }
}
