/**
 * RunCoordinator: one Durable Object per run. It serialises every state transition of the run's
 * queue (registration, batch formation, leases, acks, buffer releases, resets) so concurrent
 * trainers never receive the same group and the step counter moves by exactly one per batch.
 * D1 is the system of record; this object holds no state of its own.
 */
import { DurableObject } from "cloudflare:workers";
import {
  type EnvAllocation,
  type PackResult,
  packBatch,
  type QueuedGroupRef,
} from "../core/packing";
import { mixBatch, type ReplayCandidate } from "../core/replay-mix";
import type { RegisterEnv, Registration } from "../core/schemas";
import { minAcceptedVersion, reasonWithStaleness } from "../core/staleness";
import { earliestExactSubset } from "../core/subset-sum";
import { randomUuid128Digits } from "../core/uuid128";
import { type Bindings, numberVar } from "./bindings";
import { type RpcResult, rpcError } from "./errors";
import { collectGarbage, nextExpiry, retentionMs } from "./retention";
import {
  deletePayloadPrefix,
  GROUP_REF_COLUMNS,
  type GroupRefRow,
  groupRef,
  type LeasedGroupRef,
} from "./storage/payloads";
import {
  admitAckedBatch,
  admitCompatAcked,
  markReplayedStatements,
  replayCandidates,
} from "./storage/replay";
import { getRun, isEnvActive, listEnvs, type RunRow } from "./storage/runs";
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

export interface RegisterEnvResponse {
  status: string;
  env_id?: number;
  wandb_name?: string;
  checkpoint_dir?: string;
  starting_step?: number;
  checkpoint_interval?: number;
  num_steps?: number;
  resumed?: boolean;
}

export interface LeaseOptions {
  consumer: "compat" | "lease";
  leaseSeconds: number;
  maxStaleness: number | null;
}

/** Oldest queued groups considered per batch: first a batch-sized window, then this many. */
const QUEUE_WINDOW = 4096;

/** Replay buffer candidates read per batch beyond batch_size (highest priorities first). */
const REPLAY_SLACK = 16;

/** Replay mixing for one batch formation: the buffer's candidates and the fraction to aim for. */
interface ReplayPlan {
  candidates: ReplayCandidate[];
  fraction: number;
}

type BatchPlan = PackResult & { replayIds?: number[] };

export class RunCoordinator extends DurableObject<Bindings> {
  private tail: Promise<unknown> = Promise.resolve();
  /** The run whose name the retention alarm reads from storage (saved once per object). */
  private retainedRun: string | null = null;
  /**
   * Staleness: the bound below which queued groups were last set aside. A successful lease evicts
   * again only when its bound is higher (about once per policy version, not once per lease: the
   * eviction scans the queue); a lease that finds no batch always evicts.
   */
  private evictedBelow: number | null = null;

  /** Runs `fn` after every earlier state transition has finished (awaits open the input gate). */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => undefined);
    return next;
  }

  private get db() {
    return this.env.DB;
  }

  private async ensureRun(run: string, now: number) {
    await this.db
      .prepare(
        "INSERT INTO runs (name, created_at, updated_at) VALUES (?1, ?2, ?2) ON CONFLICT(name) DO NOTHING",
      )
      .bind(run, now)
      .run();
  }

  async register(run: string, reg: Registration): Promise<{ uuid: string }> {
    return this.exclusive(async () => {
      const now = Date.now();
      await this.ensureRun(run, now);
      await this.db.batch([
        this.db
          .prepare(
            `UPDATE runs SET batch_size = ?2, max_token_len = ?3, wandb_group = ?4, wandb_project = ?5,
               checkpoint_dir = ?6, save_checkpoint_interval = ?7, num_steps = ?8, step = ?9,
               registered = 1, updated_at = ?10 WHERE name = ?1`,
          )
          .bind(
            run,
            reg.batch_size,
            reg.max_token_len,
            reg.wandb_group,
            reg.wandb_project,
            reg.checkpoint_dir,
            reg.save_checkpoint_interval,
            reg.num_steps,
            reg.starting_step,
            now,
          ),
        // A (re)registering Atropos trainer lost whatever it had pulled but not trained on:
        // make its outstanding batches available again, first in line.
        this.db
          .prepare(
            "UPDATE batches SET lease_expires_at = 0 WHERE run = ?1 AND consumer = 'compat' AND status = 'leased'",
          )
          .bind(run),
      ]);
      return { uuid: randomUuid128Digits() };
    });
  }

  async registerEnv(run: string, body: RegisterEnv): Promise<RegisterEnvResponse> {
    return this.exclusive(async () => {
      const now = Date.now();
      const runRow = await getRun(this.db, run);
      if (!runRow?.registered) return { status: "wait for trainer to start" };
      const staleMs = numberVar(this.env.ENV_STALE_SECONDS, 120) * 1000;
      const existing = await listEnvs(this.db, run);
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
      let envId: number;
      let realName: string;
      if (resumable) {
        envId = resumable.envId;
        realName = resumable.realName;
        await this.db
          .prepare(
            `UPDATE envs SET max_token_length = ?3, weight = ?4, group_size = ?5,
               min_batch_allocation = ?6, connected = 1, last_seen_at = ?7
             WHERE run = ?1 AND env_id = ?2`,
          )
          .bind(
            run,
            envId,
            body.max_token_length,
            body.weight,
            body.group_size,
            body.min_batch_allocation ?? null,
            now,
          )
          .run();
      } else {
        envId = existing.reduce((m, e) => Math.max(m, e.envId + 1), 0);
        const sameName = existing.filter((e) => e.desiredName === body.desired_name).length;
        realName = `${body.desired_name}_${sameName}`;
        await this.db
          .prepare(
            `INSERT INTO envs (run, env_id, desired_name, real_name, env_key, max_token_length, weight,
               group_size, min_batch_allocation, connected, registered_at, last_seen_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, ?10, ?10)`,
          )
          .bind(
            run,
            envId,
            body.desired_name,
            realName,
            body.env_key ?? null,
            body.max_token_length,
            body.weight,
            body.group_size,
            body.min_batch_allocation ?? null,
            now,
          )
          .run();
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
      const res = await this.db
        .prepare("UPDATE envs SET connected = 0 WHERE run = ?1 AND env_id = ?2")
        .bind(run, envId)
        .run();
      if (res.meta.changes === 0) {
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
      await this.ensureRun(run, now);
      const current = (await getRun(this.db, run))?.policyVersion ?? 0;
      if (version < current && !reset) {
        return rpcError(
          "CONFLICT",
          `policy version ${version} is lower than the run's current policy version ${current}; versions only move forward. If training restarted from older weights, send {"version": ${version}, "reset": true}`,
        );
      }
      const setVersion = this.db
        .prepare("UPDATE runs SET policy_version = ?2, updated_at = ?3 WHERE name = ?1")
        .bind(run, version, now);
      // Going back to older weights may make groups set aside as stale deliverable again.
      if (version < current) this.evictedBelow = null;
      await this.db.batch(
        version < current ? [setVersion, requeueStale(this.db, run)] : [setVersion],
      );
      return { ok: true, value: { policy_version: version } };
    });
  }

  /** Moves buffered partial groups of an env to the queue once some of them sum to group_size. */
  async releaseBuffered(run: string, envId: number): Promise<{ bufferedSequences: number }> {
    return this.exclusive(async () => {
      const env = await this.db
        .prepare("SELECT group_size FROM envs WHERE run = ?1 AND env_id = ?2")
        .bind(run, envId)
        .first<{ group_size: number }>();
      const { results } = await this.db
        .prepare(
          "SELECT id, num_seqs FROM groups WHERE run = ?1 AND env_id = ?2 AND status = 'buffered' ORDER BY id",
        )
        .bind(run, envId)
        .all<{ id: number; num_seqs: number }>();
      let pending = results;
      const release: number[] = [];
      if (env) {
        for (;;) {
          const chosen = earliestExactSubset(
            pending.map((g) => g.num_seqs),
            env.group_size,
          );
          if (!chosen || chosen.length === 0) break;
          const picked = new Set(chosen);
          for (const i of chosen) release.push(pending[i]!.id);
          pending = pending.filter((_, i) => !picked.has(i));
        }
      }
      if (release.length > 0) {
        await this.db
          .prepare(
            `UPDATE groups SET status = 'queued', queued_at = ?2
             WHERE status = 'buffered' AND id IN (SELECT value FROM json_each(?1))`,
          )
          .bind(JSON.stringify(release), Date.now())
          .run();
      }
      return { bufferedSequences: pending.reduce((s, g) => s + g.num_seqs, 0) };
    });
  }

  async compatBatch(run: string): Promise<LeaseOutcome> {
    return this.exclusive(async () => {
      const runRow = await getRun(this.db, run);
      if (!runRow?.registered) return { kind: "not_registered" };
      const now = Date.now();
      // At-least-once for unmodified Atropos trainers: pulling again acknowledges the last batch.
      const ackResults = await this.db.batch([
        // Replay: keep what reached the threshold (runs first, while the batches are still leased).
        ...admitCompatAcked(this.db, run, now),
        this.db
          .prepare(
            `UPDATE groups SET status = 'delivered' WHERE batch_id IN
               (SELECT id FROM batches WHERE run = ?1 AND consumer = 'compat' AND status = 'leased' AND lease_expires_at > ?2)`,
          )
          .bind(run, now),
        this.db
          .prepare(
            `UPDATE batches SET status = 'acked', acked_at = ?2
             WHERE run = ?1 AND consumer = 'compat' AND status = 'leased' AND lease_expires_at > ?2`,
          )
          .bind(run, now),
      ]);
      const ackedCompat = ackResults.at(-1);
      if ((ackedCompat?.meta.changes ?? 0) > 0) await this.scheduleRetention(run, now);
      const leaseSeconds = numberVar(this.env.COMPAT_LEASE_SECONDS, 3600);
      return this.leaseLocked(run, runRow, {
        consumer: "compat",
        leaseSeconds,
        maxStaleness: null,
      });
    });
  }

  async lease(run: string, options: LeaseOptions): Promise<LeaseOutcome> {
    return this.exclusive(async () => {
      const runRow = await getRun(this.db, run);
      if (!runRow?.registered) return { kind: "not_registered" };
      return this.leaseLocked(run, runRow, options);
    });
  }

  private async groupRefs(
    ids: number[],
    replayIds: readonly number[] = [],
  ): Promise<LeasedGroupRef[]> {
    const { results } = await this.db
      .prepare(
        `SELECT ${GROUP_REF_COLUMNS} FROM groups
         WHERE id IN (SELECT value FROM json_each(?1)) ORDER BY id`,
      )
      .bind(JSON.stringify(ids))
      .all<GroupRefRow>();
    const replayed = new Set(replayIds);
    return results.map((row) => ({ ...groupRef(row), replayed: replayed.has(row.id) }));
  }

  /** Call with the run row read under the same exclusive section. */
  private async leaseLocked(
    run: string,
    runRow: RunRow,
    options: LeaseOptions,
  ): Promise<LeaseOutcome> {
    const started = performance.now();
    const now = Date.now();
    const leaseExpiresAt = now + Math.round(options.leaseSeconds * 1000);
    const leaseId = crypto.randomUUID();
    const minVersion = minAcceptedVersion(runRow.policyVersion, options.maxStaleness);

    // 1. An expired lease: hand the same batch out again (same id and step).
    const expired = await this.db
      .prepare(
        `SELECT id, step, group_ids, replay_ids FROM batches WHERE run = ?1 AND status = 'leased'
         AND lease_expires_at <= ?2 ORDER BY step LIMIT 1`,
      )
      .bind(run, now)
      .first<{ id: string; step: number; group_ids: string; replay_ids: string | null }>();
    if (expired) {
      const ids = JSON.parse(expired.group_ids) as number[];
      const expiredReplays = JSON.parse(expired.replay_ids ?? "[]") as number[];
      const refs = await this.groupRefs(ids, expiredReplays);
      if (minVersion !== null && refs.some((g) => g.policyVersion < minVersion)) {
        // Too stale for this trainer: dissolve it so fresh groups are packed instead.
        await this.db.batch([
          this.db
            .prepare("UPDATE groups SET status = 'queued', batch_id = NULL WHERE batch_id = ?1")
            .bind(expired.id),
          this.db.prepare("DELETE FROM batches WHERE id = ?1").bind(expired.id),
        ]);
      } else {
        await this.db
          .prepare(
            `UPDATE batches SET lease_id = ?2, lease_expires_at = ?3, lease_count = lease_count + 1,
               consumer = ?4 WHERE id = ?1`,
          )
          .bind(expired.id, leaseId, leaseExpiresAt, options.consumer)
          .run();
        return {
          kind: "batch",
          batchId: expired.id,
          leaseId,
          step: expired.step,
          leaseExpiresAt,
          redelivered: true,
          groups: refs,
        };
      }
    }

    // 2. Form a new batch from the oldest queued groups.
    // Replay: the buffer's candidates within the bound, when the run mixes replays in.
    const replay = await this.replayPlan(run, runRow, minVersion);
    let packed = await this.planBatch(run, runRow.batchSize, minVersion, now, replay);
    // Staleness: set-aside groups this lease accepts count again when the queue alone falls short.
    if (!packed.ok && (await requeueAccepted(this.db, run, minVersion)) > 0) {
      packed = await this.planBatch(run, runRow.batchSize, minVersion, now, replay);
    }
    if (!packed.ok) {
      // Staleness: groups too old for this bound leave the queue (and the counts envs throttle on).
      if (minVersion === null || options.maxStaleness === null) {
        return { kind: "none", reason: packed.reason };
      }
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
    const ids = packed.ids;
    // Replay: replayed groups join the batch without leaving the buffer's 'delivered' status.
    const replayIds = packed.replayIds ?? [];
    const allIds = [...ids, ...replayIds].sort((x, y) => x - y);
    const replaySeqs = replay
      ? replay.candidates.filter((c) => replayIds.includes(c.id)).reduce((t, c) => t + c.size, 0)
      : 0;
    const evict =
      minVersion !== null && (this.evictedBelow === null || minVersion > this.evictedBelow);
    const formationMs = performance.now() - started;
    await this.db.batch([
      this.db
        .prepare(
          `UPDATE groups SET status = 'leased', batch_id = ?2
           WHERE run = ?1 AND status = 'queued' AND id IN (SELECT value FROM json_each(?3))`,
        )
        .bind(run, batchId, JSON.stringify(ids)),
      this.db
        .prepare(
          `INSERT INTO batches (id, run, step, status, consumer, lease_id, lease_expires_at,
             max_staleness, policy_version, num_groups, num_seqs, group_ids, formation_ms, created_at,
             replay_ids, replay_seqs)
           VALUES (?1, ?2, ?3, 'leased', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)`,
        )
        .bind(
          batchId,
          run,
          step,
          options.consumer,
          leaseId,
          leaseExpiresAt,
          options.maxStaleness,
          runRow.policyVersion,
          allIds.length,
          packed.sequences,
          JSON.stringify(allIds),
          formationMs,
          now,
          replayIds.length > 0 ? JSON.stringify(replayIds) : null,
          replaySeqs,
        ),
      ...markReplayedStatements(this.db, run, replayIds, runRow.replayMaxReplays),
      this.db
        .prepare("UPDATE runs SET step = step + 1, started = 1, updated_at = ?2 WHERE name = ?1")
        .bind(run, now),
      // Staleness: set aside what this bound can never deliver, in the same round trip.
      ...(evict && minVersion !== null ? [evictStaleStatement(this.db, run, minVersion)] : []),
    ]);
    if (evict) this.evictedBelow = minVersion;
    return {
      kind: "batch",
      batchId,
      leaseId,
      step,
      leaseExpiresAt,
      redelivered: false,
      groups: await this.groupRefs(allIds, replayIds),
    };
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
   * Chooses the groups of the next batch without changing anything. The common case (sizes that
   * pack greedily) needs at most `batchSize` groups, so that window is read first; the large
   * window is read only when it cannot be packed.
   */
  private async planBatch(
    run: string,
    batchSize: number,
    minVersion: number | null,
    now: number,
    replay: ReplayPlan | null = null,
  ): Promise<BatchPlan> {
    const small = Math.min(QUEUE_WINDOW, Math.max(batchSize, 16));
    const first = await this.planWindow(run, batchSize, minVersion, now, small, replay);
    if (first.plan.ok || first.rows < small) return first.plan;
    return (await this.planWindow(run, batchSize, minVersion, now, QUEUE_WINDOW, replay)).plan;
  }

  private async planWindow(
    run: string,
    batchSize: number,
    minVersion: number | null,
    now: number,
    limit: number,
    replay: ReplayPlan | null,
  ): Promise<{ plan: BatchPlan; rows: number }> {
    const versionFilter = minVersion === null ? -1 : minVersion;
    const { results: window } = await this.db
      .prepare(
        `SELECT id, env_id, num_seqs FROM groups WHERE run = ?1 AND status = 'queued'
         AND policy_version >= ?2 ORDER BY id LIMIT ?3`,
      )
      .bind(run, versionFilter, limit)
      .all<{ id: number; env_id: number | null; num_seqs: number }>();
    const candidates = new Map<number, QueuedGroupRef>();
    for (const r of window) candidates.set(r.id, { id: r.id, envId: r.env_id, size: r.num_seqs });

    const staleSeconds = numberVar(this.env.ENV_STALE_SECONDS, 120);
    const allocations: EnvAllocation[] = [];
    for (const e of await listEnvs(this.db, run)) {
      if (
        e.minBatchAllocation !== null &&
        e.minBatchAllocation > 0 &&
        !e.paused &&
        isEnvActive(e, now, staleSeconds)
      ) {
        allocations.push({ envId: e.envId, name: e.realName, fraction: e.minBatchAllocation });
      }
    }
    for (const a of allocations) {
      // An allocated env's groups may sit behind the window; fetch enough of them explicitly.
      const { results } = await this.db
        .prepare(
          `SELECT id, env_id, num_seqs FROM groups WHERE run = ?1 AND status = 'queued'
           AND env_id = ?2 AND policy_version >= ?3 ORDER BY id LIMIT ?4`,
        )
        .bind(run, a.envId, versionFilter, batchSize)
        .all<{ id: number; env_id: number | null; num_seqs: number }>();
      for (const r of results) {
        candidates.set(r.id, { id: r.id, envId: r.env_id, size: r.num_seqs });
      }
    }
    const queue = [...candidates.values()].sort((x, y) => x.id - y.id);
    const plan = replay
      ? mixBatch(queue, replay.candidates, batchSize, replay.fraction, allocations)
      : packBatch(queue, batchSize, allocations);
    return { plan, rows: window.length };
  }

  /** Why the next lease would find nothing (null when a batch can be formed now). */
  async diagnose(run: string): Promise<string | null> {
    const runRow = await getRun(this.db, run);
    if (!runRow?.registered) return "no trainer has registered (POST /register)";
    const plan = await this.planBatch(run, runRow.batchSize, null, Date.now());
    return plan.ok ? null : plan.reason;
  }

  async ack(
    run: string,
    batchId: string,
    leaseId: string | undefined,
  ): Promise<
    RpcResult<{ batch_id: string; status: "acked"; already_acked: boolean; step: number }>
  > {
    return this.exclusive(async () => {
      const batch = await this.db
        .prepare("SELECT id, status, lease_id, step FROM batches WHERE id = ?1 AND run = ?2")
        .bind(batchId, run)
        .first<{ id: string; status: string; lease_id: string; step: number }>();
      if (!batch) {
        return rpcError("NOT_FOUND", `batch '${batchId}' does not exist in run '${run}'`);
      }
      if (batch.status === "acked") {
        return {
          ok: true,
          value: { batch_id: batchId, status: "acked", already_acked: true, step: batch.step },
        };
      }
      if (leaseId !== undefined && leaseId !== batch.lease_id) {
        return rpcError(
          "CONFLICT",
          `lease '${leaseId}' of batch '${batchId}' expired and the batch was leased again; do not train on it twice — drop it and lease a new batch`,
        );
      }
      const now = Date.now();
      await this.db.batch([
        this.db.prepare("UPDATE groups SET status = 'delivered' WHERE batch_id = ?1").bind(batchId),
        // Replay: keep this batch's online groups that reached the threshold.
        ...admitAckedBatch(this.db, run, batchId),
        this.db
          .prepare("UPDATE batches SET status = 'acked', acked_at = ?2 WHERE id = ?1")
          .bind(batchId, now),
      ]);
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
      const [feeders, envs] = await Promise.all([
        this.db
          .prepare("SELECT name FROM env_workers WHERE run = ?1")
          .bind(run)
          .all<{ name: string }>(),
        this.db
          .prepare("SELECT env_id FROM envs WHERE run = ?1")
          .bind(run)
          .all<{ env_id: number }>(),
      ]);
      for (const { name } of feeders.results) {
        await this.env.ENV_FEEDER.get(this.env.ENV_FEEDER.idFromName(name)).clear();
      }
      for (const { env_id } of envs.results) {
        await this.env.ENV_SESSION.get(this.env.ENV_SESSION.idFromName(`${run}/${env_id}`)).clear();
      }
      const statements = [
        "DELETE FROM groups WHERE run = ?1",
        "DELETE FROM batches WHERE run = ?1",
        "DELETE FROM envs WHERE run = ?1",
        "DELETE FROM idempotency_keys WHERE run = ?1",
        "DELETE FROM replay_groups WHERE run = ?1",
        "DELETE FROM regression_guards WHERE run = ?1",
        "DELETE FROM eval_baselines WHERE run = ?1",
        "DELETE FROM run_events WHERE run = ?1",
        "DELETE FROM queue_counts WHERE run = ?1",
        "DELETE FROM evals WHERE run = ?1",
        "DELETE FROM dead_letters WHERE run = ?1",
        "DELETE FROM worker_stats WHERE run = ?1",
        "DELETE FROM env_workers WHERE run = ?1",
        "DELETE FROM runs WHERE name = ?1",
      ].map((sql) => this.db.prepare(sql).bind(run));
      await this.db.batch(statements);
      // Awaited: "Reset successful" means the payloads are gone too.
      await deletePayloadPrefix(this.env.PAYLOADS, `runs/${run}/`);
    });
  }
}
