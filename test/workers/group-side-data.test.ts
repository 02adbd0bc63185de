/**
 * Nothing accepted is lost: a group's trajectories and token texts are written in the group's own
 * commit, so a submission interrupted right after its group became durable, then retried (the
 * retry comes back a duplicate), still has them. The interruption is a D1 binding that fails every
 * batch after the first one that inserted a group, as a crash between two transactions would.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { call, callWith, group, json, post, setupRun, trajectory, uniqueRun } from "./helpers";

const bindings = env as unknown as Bindings;

/** The run's D1, failing every `batch` after the first that inserted a group. */
function interruptedAfterGroupCommit(d1: D1Database): {
  db: D1Database;
  interrupted: () => number;
} {
  const sqlOf = new WeakMap<object, string>();
  let committed = false;
  let refused = 0;
  const db = new Proxy(d1, {
    get(target, prop) {
      if (prop === "prepare") {
        return (sql: string) => {
          const statement = target.prepare(sql);
          const bind = statement.bind.bind(statement);
          // Bound statements are new objects: remember the SQL of those too.
          statement.bind = (...values: unknown[]) => {
            const bound = bind(...values);
            sqlOf.set(bound, sql);
            return bound;
          };
          sqlOf.set(statement, sql);
          return statement;
        };
      }
      if (prop === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          if (committed) {
            refused++;
            throw new Error("D1 unavailable (the test interrupts the submission here)");
          }
          const results = await target.batch(statements);
          if (statements.some((s) => sqlOf.get(s)?.includes("INSERT INTO groups"))) {
            committed = true;
          }
          return results;
        };
      }
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db, interrupted: () => refused };
}

describe("side data of a submission", () => {
  it("survives an interruption after the group is stored and a retry that is a duplicate", async () => {
    const run = uniqueRun("side");
    const { base, envIds } = await setupRun(run, 8, [2]);
    const g = group(11, 2, envIds[0]!, 4);
    const sent = {
      ...g,
      token_texts: g.tokens.map((seq) => seq.map((t) => `<${t}>`)),
      trajectories: [trajectory(0), trajectory(1)],
    };
    const init = {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(sent),
    };
    const { db, interrupted } = interruptedAfterGroupCommit(bindings.DB);
    const first = await callWith({ DB: db }, `${base}/scored_data`, init);
    // Whatever the first attempt answered, the client retries the same body.
    const retry = await post(`${base}/scored_data`, sent);
    expect(retry.status).toBe(200);
    expect(interrupted(), `first attempt answered ${first.status}`).toBe(0);

    const { groups } = await json<{ groups: { id: number }[] }>(call(`/v1/runs/${run}/groups`));
    expect(groups).toHaveLength(1);
    const stored = await json<{ trajectories: unknown[] }>(
      call(`/v1/runs/${run}/groups/${groups[0]!.id}/trajectories`),
    );
    expect(stored.trajectories).toEqual([trajectory(0), trajectory(1)]);
    const detail = await json<{ token_texts: string[][] | null }>(
      call(`/v1/runs/${run}/groups/${groups[0]!.id}`),
    );
    expect(detail.token_texts).toEqual(sent.token_texts);
  });
});
