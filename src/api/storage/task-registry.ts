/** A run's registered tasks (table tasks) and the groups contributed for them (task_groups). */

import { z } from "zod";
import type { RegisterTaskRequest, TaskInfo } from "../../core/wire/task-registry";
import { rowsOf } from "./rows";

const taskRow = z.object({
  name: z.string(),
  difficulty: z.number().nullable(),
  required_tools: z.string(),
  description: z.string(),
  token_id: z.string().nullable(),
  token_name: z.string().nullable(),
  created_at: z.number(),
  updated_at: z.number(),
});

const tallyRow = z.object({
  task: z.string(),
  token_id: z.string().nullable(),
  token_name: z.string().nullable(),
  groups: z.number(),
  score_sum: z.number().nullable(),
  scored: z.number(),
});
type TallyRow = z.infer<typeof tallyRow>;

const TASK_COLUMNS = `t.name, t.difficulty, t.required_tools, t.description, t.token_id,
  k.name AS token_name, t.created_at, t.updated_at`;

/** The run's tasks (all, or the one named) with their tallies, oldest first. */
export async function listTasks(
  db: D1Database,
  run: string,
  options: { name?: string; tallyToken?: string | null } = {},
): Promise<TaskInfo[]> {
  const name = options.name ?? null;
  const [tasks, tallies] = await db.batch([
    db
      .prepare(
        `SELECT ${TASK_COLUMNS} FROM tasks t LEFT JOIN api_tokens k ON k.id = t.token_id
         WHERE t.run = ?1 AND (?2 IS NULL OR t.name = ?2) ORDER BY t.created_at, t.name`,
      )
      .bind(run, name),
    db
      .prepare(
        `SELECT g.task, g.token_id, k.name AS token_name, COUNT(*) AS groups,
           SUM(g.score_mean) AS score_sum, COUNT(g.score_mean) AS scored
         FROM task_groups g LEFT JOIN api_tokens k ON k.id = g.token_id
         WHERE g.run = ?1 AND (?2 IS NULL OR g.task = ?2)
         GROUP BY g.task, g.token_id ORDER BY g.task, groups DESC, g.token_id`,
      )
      .bind(run, name),
  ]);
  const byTask = new Map<string, TallyRow[]>();
  for (const row of rowsOf(tallies!, tallyRow)) {
    byTask.set(row.task, [...(byTask.get(row.task) ?? []), row]);
  }
  const mean = (sum: number | null, n: number) => (n > 0 && sum !== null ? sum / n : null);
  return rowsOf(tasks!, taskRow).map((row) => {
    const all = byTask.get(row.name) ?? [];
    // A contributor token sees the task's totals but only its own line of them.
    const shown =
      options.tallyToken === undefined || options.tallyToken === null
        ? all
        : all.filter((t) => t.token_id === options.tallyToken);
    const scored = all.reduce((n, t) => n + t.scored, 0);
    const sum = all.reduce((s, t) => s + (t.score_sum ?? 0), 0);
    return {
      name: row.name,
      difficulty: row.difficulty,
      required_tools: JSON.parse(row.required_tools) as string[],
      description: row.description,
      registered_by: row.token_id,
      registered_by_name: row.token_name,
      created_at: row.created_at,
      updated_at: row.updated_at,
      groups: all.reduce((n, t) => n + t.groups, 0),
      mean_score: mean(sum, scored),
      contributors: shown.map((t) => ({
        token_id: t.token_id,
        token_name: t.token_name,
        groups: t.groups,
        mean_score: mean(t.score_sum, t.scored),
      })),
    };
  });
}

export type RegisterOutcome =
  | { status: "created" | "updated" | "unchanged"; task: TaskInfo }
  | { status: "taken"; task: TaskInfo };

/**
 * Records a task type. Registering it again (a contributor's script runs register_task on every
 * start) changes nothing when the definition is the same and updates it when its registrant
 * changed it; a task another token registered is "taken" and left alone.
 */
export async function registerTask(
  db: D1Database,
  run: string,
  request: RegisterTaskRequest,
  tokenId: string | null,
  now: number,
): Promise<RegisterOutcome> {
  const tools = JSON.stringify(request.required_tools ?? []);
  const difficulty = request.difficulty ?? null;
  const description = request.description ?? "";
  const [existing] = await listTasks(db, run, { name: request.name });
  if (existing) {
    if (existing.registered_by !== tokenId) return { status: "taken", task: existing };
    const same =
      existing.difficulty === difficulty &&
      JSON.stringify(existing.required_tools) === tools &&
      existing.description === description;
    if (same) return { status: "unchanged", task: existing };
  }
  await db
    .prepare(
      `INSERT INTO tasks (run, name, difficulty, required_tools, description, token_id, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
       ON CONFLICT (run, name) DO UPDATE SET difficulty = ?3, required_tools = ?4, description = ?5,
         updated_at = ?7 WHERE token_id IS ?6`,
    )
    .bind(run, request.name, difficulty, tools, description, tokenId, now)
    .run();
  const [stored] = await listTasks(db, run, { name: request.name });
  // Another token registered it between the read and the write: its definition stands.
  if (stored!.registered_by !== tokenId) return { status: "taken", task: stored! };
  return { status: existing ? "updated" : "created", task: stored! };
}

export async function taskExists(db: D1Database, run: string, name: string): Promise<boolean> {
  const row = await db
    .prepare("SELECT 1 AS found FROM tasks WHERE run = ?1 AND name = ?2")
    .bind(run, name)
    .first();
  return row !== null;
}

/** Records a group contributed for a task (a retried finish records it once). */
export function taskGroupInsert(
  db: D1Database,
  run: string,
  groupId: number,
  task: string,
  tokenId: string | null,
  scoreMean: number | null,
  now: number,
): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO task_groups (run, group_id, task, token_id, score_mean, created_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (run, group_id) DO NOTHING`,
    )
    .bind(run, groupId, task, tokenId, scoreMean, now);
}
