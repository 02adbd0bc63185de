/**
 * RunCoordinator: one Durable Object per run. It serialises every state transition of the run's
 * queue (registration, batch formation, leases, acks, buffer releases, resets) so concurrent
 * trainers never receive the same group and the step counter moves by exactly one per batch.
 * D1 is the system of record (queries in storage/leases.ts, runs.ts, reset.ts); this object
 * orchestrates, and remembers only what saves a D1 read while it stays exact or is checked: the
 * queue as the last lease left it, the batch that lease formed, the last empty answer and a
 * diagnosis for /stats.
 */
import { DurableObject } from "cloudflare:workers";
import { type AckedBatchView, decideAck } from "../core/batching/ack-rule";
import { earliestExactSubset } from "../core/batching/subset-sum";
import { randomUuid128Digits } from "../core/codecs/uuid128";
import { now as clockNow } from "../core/concurrency/clock";
import { errorMessage } from "../core/errors";
import type { AckAnswer, RegisterEnvAnswer } from "../core/wire/api-schemas";
import type { RegisterEnv, Registration } from "../core/wire/schemas";
import type { BaseBindings } from "./base-bindings";
import {
  firstWindow,
  type LeaseContext,
  type LeaseMemory,
  type LeaseOptions,
  type LeaseOutcome,
  type LeaseStages,
  leaseFromMemory,
  leaseLocked,
  newStages,
  planLease,
  type TimedLeaseOutcome,
} from "./coordinator-lease";
import { registerEnvTransition } from "./coordinator-register";
import { type RpcResult, rpcError } from "./errors";
import { collectGarbage, nextExpiry, retentionMs } from "./retention";
import { settingsOf } from "./settings";
import { ackLease, getLease } from "./storage/acks";
import { renewEmptyEpoch } from "./storage/empty-epoch";
import { settleLeasedGroups } from "./storage/lease-writes";
import {
  compatAckedCount,
  compatAckStatement,
  type LeaseState,
  queueBuffered,
  readBuffered,
  readLeaseState,
} from "./storage/leases";
import { deletePayloadPrefix, type LeasedGroupRef } from "./storage/payloads";
import { deleteRunRows, runWorkersAndEnvs } from "./storage/reset";
import {
  disconnectEnv,
  ensureAndGetRun,
  registerTrainer,
  setRunPolicyVersion,
} from "./storage/runs";
import { requeueStale } from "./storage/staleness";

export type { LeasedGroupRef, LeaseOptions, LeaseOutcome };

export type RegisterEnvResponse = RegisterEnvAnswer;

/** How long a diagnosis is reused while the queue's counts stay the same (env activity ages). */
const DIAGNOSIS_TTL_MS = 5000;
/**
 * How long an empty lease's answer is reused without D1 while nothing changed (a bound on any
 * writer that queues groups without `noteQueued`; the reason's wording may age meanwhile).
 */
const EMPTY_TTL_MS = 10_000;

/** A lease planned from memory read nothing before writing: its timings have no read stage. */
function withoutRead({ plan, write }: LeaseStages): Partial<LeaseStages> {
  return { plan, write };
}

export class RunCoordinator extends DurableObject<BaseBindings> {
  private tail: Promise<unknown> = Promise.resolve();
  /** The run whose name the retention alarm reads from storage (saved once per object). */
  private retainedRun: string | null = null;
  /** Hints the lease transition keeps between leases (coordinator-lease.ts). */
  private readonly memory: LeaseMemory = {
    windowHint: 64,
    evictedBelow: null,
    staleMayExist: true,
    next: null,
  };
  /**
   * The batch the last lease formed, as its row now is: an ack of it decides without reading
   * the row (one D1 round trip, not two). Only this object writes batch rows; every transition
   * but a lease or an ack forgets it, a lease replaces it, and its ack clears it.
   */
  private formed: (AckedBatchView & { run: string; step: number }) | null = null;
  /** The last diagnosis, valid while nothing here changed the queue and `key` matches. */
  private diagnosis: { key: string; at: number; reason: string | null } | null = null;
  /** Counts transitions begun and queued groups announced: what an empty answer depends on. */
  private changes = 0;
  /**
   * The last empty lease's answer, read from D1 when `changes` was `at`: reused while nothing
   * changed (no transition, no group queued: `noteQueued`), so empty pulls skip D1.
   */
  private empty: { at: number; until: number; reason: string } | null = null;
  /** The second round trip of the last lease (its groups marked leased), run after its answer. */
  private deferred: (() => Promise<void>) | null = null;
  /**
   * Whether every batch this run leased with deferred groups has them marked leased: unknown
   * (false) after a restart, and after a deferred write failed. A lease or an ack settles them
   * first when not (storage/lease-writes.ts, settleLeasedGroups).
   */
  private groupsSettled = false;

  /**
   * Runs `fn` after every earlier state transition has finished (awaits open the input gate),
   * and the work `fn` deferred (a lease's groups) after `fn` has answered, before the next one.
   * The queue state the last lease read back is forgotten when `fn` starts, unless `fn` keeps it
   * valid: leases (they use it first) and acks (they change no queued group and no run setting).
   */
  private exclusive<T>(fn: () => Promise<T>, keepsLeaseMemory = false): Promise<T> {
    this.diagnosis = null;
    this.changes++;
    const run = () => {
      if (!keepsLeaseMemory) {
        this.memory.next = null;
        this.formed = null;
      }
      return fn();
    };
    const next = this.tail.then(run, run);
    const settle = () => this.runDeferred();
    this.tail = next.then(settle, settle);
    // The deferred work outlives the call that answered; keep the object for it.
    this.ctx.waitUntil(this.tail);
    return next;
  }

  private async runDeferred(): Promise<void> {
    const work = this.deferred;
    if (!work) return;
    this.deferred = null;
    try {
      await work();
    } catch (err) {
      // The batch row holds the lease: its groups are marked leased before the next lease or ack.
      this.groupsSettled = false;
      this.memory.next = null;
      const error = errorMessage(err);
      console.error(JSON.stringify({ level: "error", msg: "lease groups not settled", error }));
    }
  }

  /** Marks deferred leases' groups leased unless every one is known to be (one round trip). */
  private async settleGroups(run: string): Promise<void> {
    if (this.groupsSettled) return;
    await settleLeasedGroups(this.db, run);
    this.groupsSettled = true;
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
        clockNow(),
      );
      this.memory.windowHint = firstWindow(reg.batch_size);
      return { uuid: randomUuid128Digits() };
    });
  }

  async registerEnv(run: string, body: RegisterEnv): Promise<RegisterEnvResponse> {
    return this.exclusive(() =>
      registerEnvTransition(
        this.db,
        run,
        body,
        clockNow(),
        settingsOf(this.env).ENV_STALE_SECONDS * 1000,
      ),
    );
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
      const now = clockNow();
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
        this.memory.evictedBelow = null;
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
      if (release.length > 0) await queueBuffered(this.db, release, clockNow());
      return { bufferedSequences: pending.reduce((s, g) => s + g.size, 0) };
    });
  }

  /**
   * Ingest calls this once groups it stored are queued, before it answers, when it read an empty
   * epoch it had not told this object of: an empty answer remembered before then is not given
   * again.
   */
  noteQueued(): void {
    this.changes++;
  }

  /** The remembered empty answer, if nothing changed since it was read (no D1 round trip). */
  private emptyAnswer(): TimedLeaseOutcome | null {
    const empty = this.empty;
    if (!empty || empty.at !== this.changes || clockNow() >= empty.until) return null;
    return { kind: "none", reason: empty.reason, stages: {} };
  }

  /**
   * Remembers an empty answer read under `at` when it holds for every trainer until something
   * changes: no group queued, no lease out (none can expire meanwhile), no replay buffer to draw
   * from, no stale groups to queue again, and no transition or queued group since the read
   * began. Ingest tells this object about queued groups only under a new empty epoch, so one is
   * drawn first (storage/empty-epoch.ts); it is not when a group was queued meanwhile.
   */
  private async rememberEmpty(at: number, run: string, state: LeaseState, outcome: LeaseOutcome) {
    if (outcome.kind !== "none" || at !== this.changes) return;
    if (state.window.length > 0 || state.leased > 0 || state.run?.replayEnabled) return;
    if (this.memory.staleMayExist) return;
    // Keeping it is an optimisation: a failed draw keeps nothing, and the answer still stands.
    const drawn =
      state.emptyEpochRenewed || (await renewEmptyEpoch(this.db, run).catch(() => false));
    if (!drawn) return;
    if (at !== this.changes) return;
    this.empty = { at, until: clockNow() + EMPTY_TTL_MS, reason: outcome.reason };
  }

  async compatBatch(run: string, holder: string | null): Promise<TimedLeaseOutcome> {
    const empty = this.emptyAnswer();
    if (empty) return empty;
    return this.exclusive(async () => {
      // Its acknowledgements and renewals write batch rows this object does not track.
      this.formed = null;
      await this.settleGroups(run);
      const at = this.changes;
      const started = performance.now();
      const stages = newStages();
      const now = clockNow();
      const timing = { now, started, stages };
      const options: LeaseOptions = {
        consumer: "compat",
        leaseSeconds: settingsOf(this.env).COMPAT_LEASE_SECONDS,
        maxStaleness: null,
        holder,
      };
      // At-least-once for unmodified Atropos trainers: pulling again acknowledges the last batch
      // (in the lease's own round trip when the queue as the last lease left it still holds).
      const remembered = await leaseFromMemory(this.leaseContext, run, timing, options, [
        compatAckStatement(this.db, run, now),
      ]);
      if (remembered) {
        const acked = compatAckedCount(remembered.before[0]!);
        // The new lease is already written: a failure here must not keep it from its trainer
        // (a retry would acknowledge it unseen). Retention is scheduled again by the next ack.
        if (acked > 0) {
          await this.scheduleRetention(run, now).catch((err: unknown) => {
            const error = errorMessage(err);
            console.error(
              JSON.stringify({ level: "error", msg: "retention not scheduled", run, error }),
            );
          });
        }
        return { ...remembered.outcome, stages: withoutRead(stages), acknowledged: acked };
      }
      const state = await readLeaseState(this.db, run, {
        now,
        maxStaleness: null,
        windowLimit: this.memory.windowHint,
        ackCompat: true,
        // It writes anyway: an empty answer it gives is then kept without a second round trip.
        renewEmptyEpoch: !this.memory.staleMayExist,
      }).catch(async (err: unknown) => {
        // The acknowledgement may be written and a later round trip of the read have failed (an
        // expired lease's groups): what it acknowledged still gets its retention alarm.
        await this.scheduleRetention(run, now).catch(() => {});
        throw err;
      });
      stages.read = performance.now() - started;
      // Replay: what those batches carried at or above the threshold joined the buffer in the
      // same statement (its trigger), before this lease draws from it.
      if (state.compatAcked > 0) await this.scheduleRetention(run, now);
      const acknowledged = state.compatAcked;
      if (!state.run?.registered) return { kind: "not_registered", stages, acknowledged };
      const outcome = await leaseLocked(this.leaseContext, run, state.run, state, timing, options);
      await this.rememberEmpty(at, run, state, outcome);
      return { ...outcome, stages, acknowledged };
    }, true);
  }

  async lease(run: string, options: LeaseOptions): Promise<TimedLeaseOutcome> {
    // A staleness bound evicts on an empty answer: only bound-free pulls reuse one.
    const empty = options.maxStaleness === null ? this.emptyAnswer() : null;
    if (empty) return empty;
    return this.exclusive(async () => {
      const seen = this.changes;
      const started = performance.now();
      const stages = newStages();
      const now = clockNow();
      const timing = { now, started, stages };
      // Set again below: this lease may renew or dissolve the remembered batch.
      this.formed = null;
      await this.settleGroups(run);
      // The trainer waits for the lease, not for its groups' rows: those are written after.
      const cx: LeaseContext = {
        ...this.leaseContext,
        defer: (work) => {
          this.deferred = work;
        },
      };
      try {
        // One round trip when the queue as the last lease left it still holds.
        const remembered = await leaseFromMemory(cx, run, timing, options);
        if (remembered) {
          this.rememberFormed(run, remembered.outcome, options);
          return { ...remembered.outcome, stages: withoutRead(stages) };
        }
        const state = await readLeaseState(this.db, run, {
          now,
          maxStaleness: options.maxStaleness,
          windowLimit: this.memory.windowHint,
          ackCompat: false,
        });
        stages.read = performance.now() - started;
        if (!state.run?.registered) return { kind: "not_registered", stages };
        const outcome = await leaseLocked(cx, run, state.run, state, timing, options);
        if (options.maxStaleness === null) await this.rememberEmpty(seen, run, state, outcome);
        this.rememberFormed(run, outcome, options);
        return { ...outcome, stages };
      } catch (err) {
        // A write that failed may still have committed (its answer lost): a batch row whose
        // groups are still queued. The next lease or ack marks them before it reads the queue.
        this.groupsSettled = false;
        throw err;
      }
    }, true);
  }

  /** Remembers a newly formed batch's row (a renewed one's lease history is not at hand). */
  private rememberFormed(run: string, outcome: LeaseOutcome, options: LeaseOptions): void {
    if (outcome.kind !== "batch" || outcome.redelivered) return;
    this.formed = {
      run,
      id: outcome.batchId,
      step: outcome.step,
      status: "leased",
      leaseId: outcome.leaseId,
      leaseExpiresAt: outcome.leaseExpiresAt,
      leaseCount: 1,
      priorLeaseIds: [],
      holder: options.holder,
      ackedAt: null,
    };
  }

  private get leaseContext(): LeaseContext {
    return {
      db: this.db,
      memory: this.memory,
      envStaleSeconds: settingsOf(this.env).ENV_STALE_SECONDS,
    };
  }

  /**
   * Why the next lease would find nothing (null when a batch can be formed now). `key` names
   * what the answer depends on outside this object (the queue's counts, the envs' states): the
   * last answer is reused while it matches and nothing here changed the queue, so a dashboard
   * polling /stats does not plan a batch each time.
   */
  async diagnose(run: string, key: string): Promise<string | null> {
    const now = clockNow();
    const cached = this.diagnosis;
    if (cached && cached.key === key && now - cached.at < DIAGNOSIS_TTL_MS) return cached.reason;
    const state = await readLeaseState(this.db, run, {
      now,
      maxStaleness: null,
      windowLimit: this.memory.windowHint,
      ackCompat: false,
    });
    let reason: string | null;
    if (!state.run?.registered) reason = "no trainer has registered (POST /register)";
    else {
      const plan = await planLease(this.leaseContext, run, state, state.run.batchSize, null, now);
      reason = plan.ok ? null : plan.reason;
    }
    this.diagnosis = { key, at: now, reason };
    return reason;
  }

  /**
   * `caller`: the acking token's id (null: API_TOKEN or open local development). `readRow`:
   * whether the batch's row was read first (not when the last lease formed this batch).
   */
  async ack(
    run: string,
    batchId: string,
    leaseId: string | undefined,
    caller: string | null,
  ): Promise<{ result: RpcResult<AckAnswer>; readRow: boolean }> {
    return this.exclusive(async () => {
      // Its trigger delivers the groups marked with the batch's id.
      await this.settleGroups(run);
      const formed = this.formed?.id === batchId && this.formed.run === run ? this.formed : null;
      // Forgotten before the write: if its outcome is unknown (an error), the next ack reads it.
      if (formed) this.formed = null;
      const batch = formed ?? (await getLease(this.db, run, batchId));
      const readRow = formed === null;
      const answer = async (): Promise<RpcResult<AckAnswer>> => {
        if (!batch) {
          return rpcError("NOT_FOUND", `batch '${batchId}' does not exist in run '${run}'`);
        }
        const now = clockNow();
        const decision = decideAck(batch, leaseId, caller, now);
        if (decision.kind === "conflict") return rpcError("CONFLICT", decision.message);
        const acked = { batch_id: batchId, status: "acked", step: batch.step } as const;
        if (decision.kind === "already_acked") {
          return { ok: true, value: { ...acked, already_acked: true } };
        }
        // Its groups are delivered, and replay admits those that reached the threshold, by the
        // ack's one statement (its trigger).
        await ackLease(this.db, batchId, now);
        await this.scheduleRetention(run, now);
        return { ok: true, value: { ...acked, already_acked: false } };
      };
      return { result: await answer(), readRow };
    }, true);
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
    // Alarms run on the runtime's wall clock (tests drive them with runDurableObjectAlarm).
    const next = collected.more ? Date.now() : await nextExpiry(this.env, run, retention);
    if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, Date.now() + 1000));
  }

  /**
   * Removes all of the run's data (docs/API.md lists what that is): env workers first, so none
   * writes again, then env checkpoints, every D1 table's rows of the run, and the payloads.
   */
  async reset(run: string): Promise<void> {
    return this.exclusive(async () => {
      this.memory.evictedBelow = null;
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
