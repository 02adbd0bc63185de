/**
 * RunCoordinator: one Durable Object per run. It serialises every state transition of the run's
 * queue (registration, batch formation, leases, acks, buffer releases, resets) so concurrent
 * trainers never receive the same group and the step counter moves by exactly one per batch.
 * D1 is the system of record (queries in storage/leases.ts, runs.ts, reset.ts); this object
 * orchestrates and remembers only a diagnosis for /stats.
 */
import { DurableObject } from "cloudflare:workers";
import { decideAck } from "../core/ack-rule";
import type { RegisterEnvAnswer } from "../core/api-schemas";
import type { PackResult } from "../core/packing";
import type { MixResult } from "../core/replay-mix";
import type { RegisterEnv, Registration } from "../core/schemas";
import { minAcceptedVersion, reasonWithStaleness } from "../core/staleness";
import { earliestExactSubset } from "../core/subset-sum";
import { randomUuid128Digits } from "../core/uuid128";
import type { BaseBindings } from "./base-bindings";
import { activeAllocations, planBatch, type ReplayPlan } from "./batch-plan";
import { type RpcResult, rpcError } from "./errors";
import { collectGarbage, nextExpiry, retentionMs } from "./retention";
import { settingsOf } from "./settings";
import { ackLease, getLease } from "./storage/acks";
import {
  dissolveLease,
  formLease,
  type LeaseState,
  queueBuffered,
  queuedOfEnvs,
  queuedWindow,
  readBuffered,
  readLeaseState,
  renewLease,
} from "./storage/leases";
import { deletePayloadPrefix, type LeasedGroupRef } from "./storage/payloads";
import {
  admitAckedBatch,
  admitCompatAcked,
  markReplayedStatements,
  replayCandidates,
} from "./storage/replay";
import { deleteRunRows, runWorkersAndEnvs } from "./storage/reset";
import {
  disconnectEnv,
  ensureAndGetRun,
  getRunAndEnvs,
  insertEnv,
  type RunRow,
  registerTrainer,
  resumeEnv,
  setRunPolicyVersion,
} from "./storage/runs";
import {
  evictStale,
  evictStaleStatement,
  requeueAccepted,
  requeueStale,
  staleCount,
} from "./storage/staleness";

export type { LeasedGroupRef };

export type LeaseOutcome =
  | {
      kind: "batch";
      batchId: string;
      leaseId: string;
      step: number;
      leaseExpiresAt: number;
      redelivered: boolean;
      groups: LeasedGroupRef[];
    }
  | { kind: "none"; reason: string }
  | { kind: "not_registered" };

export type RegisterEnvResponse = RegisterEnvAnswer;

export interface LeaseOptions {
  consumer: "compat" | "lease";
  leaseSeconds: number;
  maxStaleness: number | null;
  /** The token taking the lease (null: API_TOKEN or open local development). */
  holder: string | null;
}

/** Oldest queued groups considered per batch: first a batch-sized window, then this many. */
const QUEUE_WINDOW = 4096;
/** Replay buffer candidates read per batch beyond batch_size (highest priorities first). */
const REPLAY_SLACK = 16;
/** How long a diagnosis is reused while the queue's counts stay the same (env activity ages). */
const DIAGNOSIS_TTL_MS = 5000;

function firstWindow(batchSize: number): number {
  return Math.min(QUEUE_WINDOW, Math.max(batchSize, 16));
}

export class RunCoordinator extends DurableObject<BaseBindings> {
  private tail: Promise<unknown> = Promise.resolve();
  /** The run whose name the retention alarm reads from storage (saved once per object). */
  private retainedRun: string | null = null;
  /** The first window's size: the run's batch size as last seen (any value is correct). */
  private windowHint = 64;
  /** The last diagnosis, valid while nothing here changed the queue and `key` matches. */
  private diagnosis: { key: string; at: number; reason: string | null } | null = null;
  /**
   * Staleness: the bound below which queued groups were last set aside. A successful lease evicts
   * again only when its bound is higher (about once per policy version, not once per lease: the
   * eviction scans the queue); a lease that finds no batch always evicts.
   */
  private evictedBelow: number | null = null;
  /**
   * Whether the run may hold stale groups. Only this object sets groups aside, so once a lease
   * that accepts every version has queued them all again, none exist until it evicts: empty
   * pulls then skip the requeue's round trip. Unknown (true) after a restart.
   */
  private staleMayExist = true;

  /** Runs `fn` after every earlier state transition has finished (awaits open the input gate). */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    this.diagnosis = null;
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => undefined);
    return next;
  }

  private get db() {
    return this.env.DB;
  }

  async register(run: string, reg: Registration): Promise<{ uuid: string }> {
    return this.exclusive(async () => {
      await registerTrainer(
        this.db,
        run,
        {
          batchSize: reg.batch_size,
          maxTokenLen: reg.max_token_len,
          wandbGroup: reg.wandb_group,
          wandbProject: reg.wandb_project,
          checkpointDir: reg.checkpoint_dir,
          saveCheckpointInterval: reg.save_checkpoint_interval,
          numSteps: reg.num_steps,
          startingStep: reg.starting_step,
        },
        Date.now(),
      );
      this.windowHint = firstWindow(reg.batch_size);
      return { uuid: randomUuid128Digits() };
    });
  }

  async registerEnv(run: string, body: RegisterEnv): Promise<RegisterEnvResponse> {
    return this.exclusive(async () => {
      const now = Date.now();
      const { run: runRow, envs: existing } = await getRunAndEnvs(this.db, run);
      if (!runRow?.registered) return { status: "wait for trainer to start" };
      const staleMs = settingsOf(this.env).ENV_STALE_SECONDS * 1000;
      const resumable =
        (body.env_key !== undefined
          ? existing.find((e) => e.envKey === body.env_key)
          : undefined) ??
        (body.env_key === undefined
          ? existing.find(
              (e) =>
                e.envKey === null &&
                e.desiredName === body.desired_name &&
                e.groupSize === body.group_size &&
                (!e.connected || now - e.lastSeenAt > staleMs),
            )
          : undefined);
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
        await resumeEnv(this.db, run, envId, settings, now);
      } else {
        envId = existing.reduce((m, e) => Math.max(m, e.envId + 1), 0);
        const sameName = existing.filter((e) => e.desiredName === body.desired_name).length;
        realName = `${body.desired_name}_${sameName}`;
        await insertEnv(this.db, {
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
    });
  }

  async disconnectEnv(run: string, envId: number): Promise<RpcResult<{ status: "success" }>> {
    return this.exclusive(async () => {
      if (!(await disconnectEnv(this.db, run, envId))) {
        return rpcError("NOT_FOUND", `env_id ${envId} is not registered in run '${run}'`);
      }
      return { ok: true, value: { status: "success" } };
    });
  }

  /**
   * Versions only move forward (staleness and batch order depend on it); going back needs
   * `reset`, a trainer saying it restarted. The same version again is a harmless repeat.
   */
  async setPolicyVersion(
    run: string,
    version: number,
    reset = false,
  ): Promise<RpcResult<{ policy_version: number }>> {
    return this.exclusive(async () => {
      const now = Date.now();
      const current = (await ensureAndGetRun(this.db, run, now))?.policyVersion ?? 0;
      if (version < current && !reset) {
        return rpcError(
          "CONFLICT",
          `policy version ${version} is lower than the run's current policy version ${current}; versions only move forward. If training restarted from older weights, send {"version": ${version}, "reset": true}`,
        );
      }
      await setRunPolicyVersion(this.db, run, version, now);
      if (version < current) {
        // Going back to older weights may make groups set aside as stale deliverable again.
        this.evictedBelow = null;
        await requeueStale(this.db, run).run();
      }
      return { ok: true, value: { policy_version: version } };
    });
  }

  /** Moves buffered partial groups of an env to the queue once some of them sum to group_size. */
  async releaseBuffered(run: string, envId: number): Promise<{ bufferedSequences: number }> {
    return this.exclusive(async () => {
      const { groupSize, buffered } = await readBuffered(this.db, run, envId);
      let pending = buffered;
      const release: number[] = [];
      if (groupSize !== null) {
        for (;;) {
          const chosen = earliestExactSubset(
            pending.map((g) => g.size),
            groupSize,
          );
          if (!chosen || chosen.length === 0) break;
          const picked = new Set(chosen);
          for (const i of chosen) release.push(pending[i]!.id);
          pending = pending.filter((_, i) => !picked.has(i));
        }
      }
      if (release.length > 0) await queueBuffered(this.db, release, Date.now());
      return { bufferedSequences: pending.reduce((s, g) => s + g.size, 0) };
    });
  }

  async compatBatch(run: string, holder: string | null): Promise<LeaseOutcome> {
    return this.exclusive(async () => {
      const started = performance.now();
      const now = Date.now();
      // At-least-once for unmodified Atropos trainers: pulling again acknowledges the last batch.
      const state = await readLeaseState(this.db, run, {
        now,
        maxStaleness: null,
        windowLimit: this.windowHint,
        ackCompat: true,
      });
      if (state.compatAcked > 0) {
        // Replay: what those batches carried at or above the threshold joins the buffer before
        // this lease draws from it.
        if (state.run?.replayEnabled) await this.db.batch(admitCompatAcked(this.db, run, now));
        await this.scheduleRetention(run, now);
      }
      if (!state.run?.registered) return { kind: "not_registered" };
      const leaseSeconds = settingsOf(this.env).COMPAT_LEASE_SECONDS;
      return this.leaseLocked(
        run,
        state.run,
        state,
        { now, started },
        {
          consumer: "compat",
          leaseSeconds,
          maxStaleness: null,
          holder,
        },
      );
    });
  }

  async lease(run: string, options: LeaseOptions): Promise<LeaseOutcome> {
    return this.exclusive(async () => {
      const started = performance.now();
      const now = Date.now();
      const state = await readLeaseState(this.db, run, {
        now,
        maxStaleness: options.maxStaleness,
        windowLimit: this.windowHint,
        ackCompat: false,
      });
      if (!state.run?.registered) return { kind: "not_registered" };
      return this.leaseLocked(run, state.run, state, { now, started }, options);
    });
  }

  /**
   * Call with the state read under the same exclusive section (one round trip). Renewing an
   * expired lease or forming a new one is one more; allocated envs and a queue head that does not
   * pack add a read each.
   */
  private async leaseLocked(
    run: string,
    runRow: RunRow,
    state: LeaseState,
    /** `started`: when this lease began reading (formation time counts the reads). */
    { now, started }: { now: number; started: number },
    options: LeaseOptions,
  ): Promise<LeaseOutcome> {
    const leaseExpiresAt = now + Math.round(options.leaseSeconds * 1000);
    const leaseId = crypto.randomUUID();
    const minVersion = minAcceptedVersion(runRow.policyVersion, options.maxStaleness);
    this.windowHint = firstWindow(runRow.batchSize);

    // 1. An expired lease: hand the same batch out again (same id and step).
    let queue: LeaseState = state;
    const expired = state.expired;
    if (expired) {
      if (minVersion !== null && expired.groups.some((g) => g.policyVersion < minVersion)) {
        // Too stale for this trainer: dissolve it so fresh groups are packed instead.
        await dissolveLease(this.db, run, expired);
        const head = await queuedWindow(this.db, run, minVersion, this.windowHint);
        queue = { ...state, window: head, windowComplete: head.length < this.windowHint };
      } else {
        await renewLease(this.db, expired.id, {
          leaseId,
          leaseExpiresAt,
          consumer: options.consumer,
          holder: options.holder,
        });
        return {
          kind: "batch",
          batchId: expired.id,
          leaseId,
          step: expired.step,
          leaseExpiresAt,
          redelivered: true,
          groups: expired.groups,
        };
      }
    }

    // 2. Form a new batch from the oldest queued groups (and the replay buffer, when mixing).
    const replay = await this.replayPlan(run, runRow, minVersion);
    let packed = await this.plan(run, queue, runRow.batchSize, minVersion, now, replay);
    // Staleness: set-aside groups this lease accepts count again when the queue alone falls short.
    if (!packed.ok && this.staleMayExist && (await this.requeueAccepted(run, minVersion)) > 0) {
      const head = await queuedWindow(this.db, run, minVersion ?? -1, this.windowHint);
      queue = { ...queue, window: head, windowComplete: head.length < this.windowHint };
      packed = await this.plan(run, queue, runRow.batchSize, minVersion, now, replay);
    }
    if (!packed.ok) {
      if (minVersion === null || options.maxStaleness === null) {
        return { kind: "none", reason: packed.reason };
      }
      // Staleness: groups too old for this bound leave the queue (and the counts envs throttle on).
      this.staleMayExist = true;
      const evictedNow = await evictStale(this.db, run, minVersion);
      this.evictedBelow = minVersion;
      const staleTotal = await staleCount(this.db, run);
      const eviction = {
        evictedNow,
        staleTotal,
        currentVersion: runRow.policyVersion,
        maxStaleness: options.maxStaleness,
      };
      return { kind: "none", reason: reasonWithStaleness(packed.reason, eviction) };
    }
    const batchId = crypto.randomUUID();
    const step = runRow.step + 1;
    const replayIds = "replayIds" in packed ? packed.replayIds : [];
    const replaySeqs = replay
      ? replay.candidates.filter((c) => replayIds.includes(c.id)).reduce((t, c) => t + c.size, 0)
      : 0;
    const evict =
      minVersion !== null && (this.evictedBelow === null || minVersion > this.evictedBelow);
    const groups = await formLease(
      this.db,
      run,
      {
        batchId,
        step,
        consumer: options.consumer,
        leaseId,
        leaseExpiresAt,
        maxStaleness: options.maxStaleness,
        policyVersion: runRow.policyVersion,
        groupIds: [...packed.ids, ...replayIds].sort((x, y) => x - y),
        replayIds,
        replaySeqs,
        sequences: packed.sequences,
        formationMs: performance.now() - started,
        now,
        holder: options.holder,
      },
      [
        ...markReplayedStatements(this.db, run, replayIds, runRow.replayMaxReplays),
        // Staleness: set aside what this bound can never deliver, in the same round trip.
        ...(evict && minVersion !== null ? [evictStaleStatement(this.db, run, minVersion)] : []),
      ],
    );
    if (evict) {
      this.evictedBelow = minVersion;
      this.staleMayExist = true;
    }
    return { kind: "batch", batchId, leaseId, step, leaseExpiresAt, redelivered: false, groups };
  }

  /** Queues again the stale groups this bound accepts (all of them when it has none). */
  private async requeueAccepted(run: string, minVersion: number | null): Promise<number> {
    const requeued = await requeueAccepted(this.db, run, minVersion);
    if (minVersion === null) this.staleMayExist = false;
    return requeued;
  }

  /**
   * Chooses the groups of the next batch without changing anything. The common case (sizes that
   * pack greedily) needs at most `batchSize` groups, which the lease state already holds; the
   * large window is read only when that head cannot be packed.
   */
  private async plan(
    run: string,
    state: Pick<LeaseState, "envs" | "window" | "windowComplete">,
    batchSize: number,
    minVersion: number | null,
    now: number,
    replay: ReplayPlan | null = null,
  ): Promise<PackResult | MixResult> {
    const versionFloor = minVersion ?? -1;
    const allocations = activeAllocations(state.envs, now, settingsOf(this.env).ENV_STALE_SECONDS);
    // An allocated env's groups may sit behind the window; fetch enough of them explicitly.
    const extra = await queuedOfEnvs(
      this.db,
      run,
      allocations.map((a) => a.envId),
      versionFloor,
      batchSize,
    );
    const first = planBatch(state.window, extra, batchSize, allocations, replay);
    if (first.ok || state.windowComplete || state.window.length >= QUEUE_WINDOW) return first;
    const wide = await queuedWindow(this.db, run, versionFloor, QUEUE_WINDOW);
    return planBatch(wide, extra, batchSize, allocations, replay);
  }

  /** Replay candidates for the next batch, or null when the run does not mix replays in. */
  private async replayPlan(
    run: string,
    runRow: RunRow,
    minVersion: number | null,
  ): Promise<ReplayPlan | null> {
    if (!runRow.replayEnabled || runRow.replayFraction <= 0) return null;
    const candidates = await replayCandidates(
      this.db,
      run,
      runRow.replayMaxReplays,
      minVersion,
      // Enough to reach any fraction of the batch even with one-sequence groups.
      runRow.batchSize + REPLAY_SLACK,
    );
    return candidates.length > 0 ? { candidates, fraction: runRow.replayFraction } : null;
  }

  /**
   * Why the next lease would find nothing (null when a batch can be formed now). `key` names
   * what the answer depends on outside this object (the queue's counts, the envs' states): the
   * last answer is reused while it matches and nothing here changed the queue, so a dashboard
   * polling /stats does not plan a batch each time.
   */
  async diagnose(run: string, key: string): Promise<string | null> {
    const now = Date.now();
    const cached = this.diagnosis;
    if (cached && cached.key === key && now - cached.at < DIAGNOSIS_TTL_MS) return cached.reason;
    const state = await readLeaseState(this.db, run, {
      now,
      maxStaleness: null,
      windowLimit: this.windowHint,
      ackCompat: false,
    });
    let reason: string | null;
    if (!state.run?.registered) reason = "no trainer has registered (POST /register)";
    else {
      const plan = await this.plan(run, state, state.run.batchSize, null, now);
      reason = plan.ok ? null : plan.reason;
    }
    this.diagnosis = { key, at: now, reason };
    return reason;
  }

  /** `caller`: the acking token's id (null: API_TOKEN or open local development). */
  async ack(
    run: string,
    batchId: string,
    leaseId: string | undefined,
    caller: string | null,
  ): Promise<
    RpcResult<{ batch_id: string; status: "acked"; already_acked: boolean; step: number }>
  > {
    return this.exclusive(async () => {
      const batch = await getLease(this.db, run, batchId);
      if (!batch) {
        return rpcError("NOT_FOUND", `batch '${batchId}' does not exist in run '${run}'`);
      }
      const now = Date.now();
      const decision = decideAck(batch, leaseId, caller, now);
      if (decision.kind === "conflict") return rpcError("CONFLICT", decision.message);
      if (decision.kind === "already_acked") {
        return {
          ok: true,
          value: { batch_id: batchId, status: "acked", already_acked: true, step: batch.step },
        };
      }
      // Replay: this batch's online groups that reached the threshold join the buffer.
      await ackLease(this.db, batchId, now, admitAckedBatch(this.db, run, batchId));
      await this.scheduleRetention(run, now);
      return {
        ok: true,
        value: { batch_id: batchId, status: "acked", already_acked: false, step: batch.step },
      };
    });
  }

  /**
   * With RETENTION_HOURS set, an ack makes sure an alarm will collect what it delivered (the
   * alarm keeps itself going while delivered groups remain).
   */
  private async scheduleRetention(run: string, ackedAt: number): Promise<void> {
    const retention = retentionMs(this.env);
    if (retention === null) return;
    if (this.retainedRun !== run) {
      await this.ctx.storage.put("run", run);
      this.retainedRun = run;
    }
    if ((await this.ctx.storage.getAlarm()) === null) {
      await this.ctx.storage.setAlarm(ackedAt + retention);
    }
  }

  /** Retention: removes expired delivered groups, then waits for the next one to expire. */
  override async alarm(): Promise<void> {
    const run = await this.ctx.storage.get<string>("run");
    const retention = retentionMs(this.env);
    if (run === undefined || retention === null) return;
    const collected = await collectGarbage(this.env, run, retention);
    if (collected.groups > 0) {
      console.log(JSON.stringify({ level: "info", msg: "retention", run, ...collected }));
    }
    const next = collected.more ? Date.now() : await nextExpiry(this.env, run, retention);
    if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, Date.now() + 1000));
  }

  /**
   * Removes all of the run's data (docs/API.md lists what that is): env workers first, so none
   * writes again, then env checkpoints, every D1 table's rows of the run, and the payloads.
   */
  async reset(run: string): Promise<void> {
    return this.exclusive(async () => {
      this.evictedBelow = null;
      const { feeders, envIds } = await runWorkersAndEnvs(this.db, run);
      for (const name of feeders) {
        await this.env.ENV_FEEDER.get(this.env.ENV_FEEDER.idFromName(name)).clear();
      }
      for (const envId of envIds) {
        await this.env.ENV_SESSION.get(this.env.ENV_SESSION.idFromName(`${run}/${envId}`)).clear();
      }
      await deleteRunRows(this.db, run);
      // Awaited: "Reset successful" means the payloads are gone too.
      await deletePayloadPrefix(this.env.PAYLOADS, `runs/${run}/`);
    });
  }
}
