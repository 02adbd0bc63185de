/**
 * The regression guard's SQL: the run's settings, baselines per env and metric, and run events.
 */
import { and, desc, eq } from "drizzle-orm";
import { DEFAULT_GUARD_FACTOR, type GuardAction } from "../../core/closed-loop/regression-guard";
import type {
  GuardConfig,
  GuardConfigRequest,
  GuardStatus,
  RunEvent,
} from "../../core/wire/api-schemas";
import { db } from "./runs";
import { evalBaselines, regressionGuards, runEvents } from "./schema";

const DEFAULT_GUARD: GuardConfig = {
  enabled: true,
  factor: DEFAULT_GUARD_FACTOR,
  lower_is_better: [],
  action: { type: "alert" },
  webhook_url: null,
};

export async function getGuard(d1: D1Database, run: string): Promise<GuardConfig> {
  const rows = await db(d1)
    .select()
    .from(regressionGuards)
    .where(eq(regressionGuards.run, run))
    .limit(1);
  const row = rows[0];
  if (!row) return DEFAULT_GUARD;
  return {
    enabled: row.enabled,
    factor: row.factor,
    lower_is_better: JSON.parse(row.lowerIsBetter) as string[],
    action: JSON.parse(row.action) as GuardAction,
    webhook_url: row.webhookUrl,
  };
}

export async function setGuard(
  d1: D1Database,
  run: string,
  change: GuardConfigRequest,
): Promise<GuardConfig> {
  const next = { ...(await getGuard(d1, run)), ...change } as GuardConfig;
  const values = {
    enabled: next.enabled,
    factor: next.factor,
    lowerIsBetter: JSON.stringify(next.lower_is_better),
    action: JSON.stringify(next.action),
    webhookUrl: next.webhook_url ?? null,
    updatedAt: Date.now(),
  };
  await db(d1)
    .insert(regressionGuards)
    .values({ run, ...values })
    .onConflictDoUpdate({ target: regressionGuards.run, set: values });
  return next;
}

export async function envBaselines(
  d1: D1Database,
  run: string,
  envId: number,
): Promise<Map<string, number>> {
  const rows = await db(d1)
    .select({ metric: evalBaselines.metric, value: evalBaselines.value })
    .from(evalBaselines)
    .where(and(eq(evalBaselines.run, run), eq(evalBaselines.envId, envId)));
  return new Map(rows.map((r) => [r.metric, r.value]));
}

/** Sets baselines: "first" ones only where none exists, "api" ones always. */
export async function putBaselines(
  d1: D1Database,
  run: string,
  baselines: readonly { env_id: number; metric: string; value: number }[],
  source: "first" | "api",
): Promise<void> {
  if (baselines.length === 0) return;
  const now = Date.now();
  const rows = baselines.map((b) => ({
    run,
    envId: b.env_id,
    metric: b.metric,
    value: b.value,
    source,
    setAt: now,
  }));
  const insert = db(d1).insert(evalBaselines).values(rows);
  if (source === "first") await insert.onConflictDoNothing();
  else {
    // why: drizzle's excluded.* needs raw SQL; one upsert per row keeps it typed instead.
    for (const row of rows) {
      await db(d1)
        .insert(evalBaselines)
        .values(row)
        .onConflictDoUpdate({
          target: [evalBaselines.run, evalBaselines.envId, evalBaselines.metric],
          set: { value: row.value, source: "api", setAt: now },
        });
    }
  }
}

export async function guardStatus(d1: D1Database, run: string): Promise<GuardStatus> {
  const [config, rows] = await Promise.all([
    getGuard(d1, run),
    db(d1)
      .select()
      .from(evalBaselines)
      .where(eq(evalBaselines.run, run))
      .orderBy(evalBaselines.envId, evalBaselines.metric),
  ]);
  return {
    ...config,
    baselines: rows.map((r) => ({
      env_id: r.envId,
      metric: r.metric,
      value: r.value,
      source: r.source,
      set_at: r.setAt,
    })),
  };
}

export async function addRunEvent(
  d1: D1Database,
  run: string,
  kind: string,
  message: string,
  data: Record<string, unknown>,
): Promise<RunEvent> {
  const createdAt = Date.now();
  const rows = await db(d1)
    .insert(runEvents)
    .values({ run, kind, message, data: JSON.stringify(data), createdAt })
    .returning({ id: runEvents.id });
  return { id: rows[0]!.id, kind, message, data, created_at: createdAt };
}

export async function listRunEvents(
  d1: D1Database,
  run: string,
  limit: number,
): Promise<RunEvent[]> {
  const rows = await db(d1)
    .select()
    .from(runEvents)
    .where(eq(runEvents.run, run))
    .orderBy(desc(runEvents.id))
    .limit(limit);
  return rows.map((r) => ({
    id: r.id,
    kind: r.kind,
    message: r.message,
    data: JSON.parse(r.data) as Record<string, unknown>,
    created_at: r.createdAt,
  }));
}
