/**
 * EnvSession: one Durable Object per (run, env). Holds the env's checkpoint state so that envs
 * without a file system (Workers) can save and resume at the trainer's checkpoint interval.
 * Checkpoints are kept in the object's SQLite storage (each ≤ 1 MB; the newest 20 are retained).
 */
import { DurableObject } from "cloudflare:workers";

const KEEP = 20;

export interface CheckpointRecord {
  step: number;
  state: unknown;
  saved_at: number;
}

// It reads no binding: its env is not typed, so its module and the bindings import no ring.
export class EnvSession extends DurableObject<unknown> {
  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS checkpoints (step INTEGER PRIMARY KEY, state TEXT NOT NULL, saved_at INTEGER NOT NULL)",
    );
  }

  async saveCheckpoint(
    step: number,
    stateJson: string,
  ): Promise<{ step: number; saved_at: number }> {
    const savedAt = Date.now();
    const sql = this.ctx.storage.sql;
    sql.exec(
      "INSERT INTO checkpoints (step, state, saved_at) VALUES (?, ?, ?) ON CONFLICT(step) DO UPDATE SET state = excluded.state, saved_at = excluded.saved_at",
      step,
      stateJson,
      savedAt,
    );
    sql.exec(
      "DELETE FROM checkpoints WHERE step NOT IN (SELECT step FROM checkpoints ORDER BY step DESC LIMIT ?)",
      KEEP,
    );
    return { step, saved_at: savedAt };
  }

  /** The checkpoint at `step`, or the newest one at or before it (null step = newest). */
  async loadCheckpoint(step: number | null): Promise<CheckpointRecord | null> {
    const rows =
      step === null
        ? this.ctx.storage.sql.exec(
            "SELECT step, state, saved_at FROM checkpoints ORDER BY step DESC LIMIT 1",
          )
        : this.ctx.storage.sql.exec(
            "SELECT step, state, saved_at FROM checkpoints WHERE step <= ? ORDER BY step DESC LIMIT 1",
            step,
          );
    const row = rows.toArray()[0];
    if (!row) return null;
    return {
      step: Number(row.step),
      state: JSON.parse(String(row.state)),
      saved_at: Number(row.saved_at),
    };
  }

  async listCheckpoints(): Promise<{ step: number; saved_at: number }[]> {
    return this.ctx.storage.sql
      .exec("SELECT step, saved_at FROM checkpoints ORDER BY step DESC")
      .toArray()
      .map((r) => ({ step: Number(r.step), saved_at: Number(r.saved_at) }));
  }

  async clear(): Promise<void> {
    this.ctx.storage.sql.exec("DELETE FROM checkpoints");
  }
}
