/**
 * The floor (bench:api `--floor`): a bare Worker on the same Miniflare doing only the work no
 * rollout API can skip for a submitted group: read the body, inflate it when gzip, parse it,
 * validate it with the same schema (src/core/schemas.ts), and make it durable with one write (one
 * D1 row, or one R2 object over 1 MiB, as received). No framework, auth, dedupe or canonical form.
 * Delivery, for bodies kept in D1 as JSON text (no gzip): GET /batch takes the oldest
 * GROUPS_PER_BATCH undelivered rows and marks them delivered in one statement that returns them,
 * only when that many are there, and answers their JSON as received (no ack, no compression). The
 * other trainer routes answer canned JSON so the same load generator can drive it.
 *
 * The lease floors: `/do` a no-op call to a Durable Object (the hop every lease takes to its
 * run's coordinator), `/do-read` that object reading D1 once (the least an empty lease can do
 * without memory of the queue), `/do-read-write` once more writing, and `/do-lease` the least an
 * exactly-once lease writes in its one round trip: the oldest 8 of 20,000 queued rows marked
 * leased to a new batch row, returned by the same statement; `/do-lease-shaped` that lease with the
 * statement count and rows of this API's lease write.
 */
import { DurableObject } from "cloudflare:workers";
import { gunzipBounded } from "../../src/core/codecs/gzip";
import { scoredDataSchema } from "../../src/core/wire/schemas";

interface FloorEnv {
  DB: D1Database;
  R2: R2Bucket;
  FLOOR_DO: DurableObjectNamespace<FloorObject>;
}

export class FloorObject extends DurableObject<FloorEnv> {
  private ready: Promise<unknown> | null = null;

  noop(): number {
    return 0;
  }

  /** One D1 round trip reading, and with `write` a second one writing (a lease's minimum). */
  async readWrite(write: boolean, statements = 1): Promise<number> {
    const db = this.env.DB;
    this.ready ??= db.prepare("CREATE TABLE IF NOT EXISTS leases (id INTEGER PRIMARY KEY)").run();
    await this.ready;
    const read = await db.batch(
      Array.from({ length: statements }, () =>
        db.prepare("SELECT COUNT(*) AS n FROM leases WHERE id < 0"),
      ),
    );
    if (write) await db.batch([db.prepare("INSERT INTO leases DEFAULT VALUES")]);
    return read.length;
  }

  private queue: Promise<unknown> | null = null;

  /**
   * The 20,000 queued rows the lease floors take from, created once; the payload floor's rows
   * carry a payload each, sized like the bench's groups: 1–16 sequences of about 300 characters
   * (a 32-token sequence's tokens and masks as JSON).
   */
  private queued(): Promise<unknown> {
    const db = this.env.DB;
    this.queue ??= db.batch([
      db.prepare(
        "CREATE TABLE IF NOT EXISTS floor_groups (id INTEGER PRIMARY KEY, status TEXT NOT NULL, batch INTEGER)",
      ),
      db.prepare("CREATE INDEX IF NOT EXISTS floor_queue ON floor_groups (status, id)"),
      db.prepare("CREATE TABLE IF NOT EXISTS floor_batches (id INTEGER PRIMARY KEY, at INTEGER)"),
      db.prepare(
        "INSERT OR IGNORE INTO floor_groups (id, status) WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) SELECT i, 'queued' FROM n",
      ),
      db.prepare(
        "CREATE TABLE IF NOT EXISTS floor_payload_groups (id INTEGER PRIMARY KEY, status TEXT NOT NULL, batch TEXT, body TEXT NOT NULL)",
      ),
      db.prepare(
        "CREATE INDEX IF NOT EXISTS floor_payload_queue ON floor_payload_groups (status, id)",
      ),
      db.prepare("CREATE INDEX IF NOT EXISTS floor_payload_batch ON floor_payload_groups (batch)"),
      db.prepare(
        `INSERT OR IGNORE INTO floor_payload_groups (id, status, body)
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
         SELECT i, 'queued', '{"tokens":"' || hex(zeroblob(150 * json_extract('[1,2,4,8,16,3,5,6]', '$[' || (i % 8) || ']'))) || '"}' FROM n`,
      ),
    ]);
    return this.queue;
  }

  /** Puts every leased row back in the queue (between rounds, untimed). */
  async requeue(): Promise<number> {
    await this.queued();
    const db = this.env.DB;
    const results = await db.batch([
      db.prepare(
        "UPDATE floor_groups SET status = 'queued', batch = NULL WHERE status <> 'queued'",
      ),
      db.prepare(
        "UPDATE floor_payload_groups SET status = 'queued', batch = NULL WHERE status <> 'queued'",
      ),
    ]);
    return results.reduce((n, r) => n + r.meta.changes, 0);
  }

  /** One D1 batch: a new batch row, and the oldest 8 queued of 20,000 rows leased to it. */
  async lease(): Promise<number> {
    const db = this.env.DB;
    await this.queued();
    const [, leased] = await db.batch([
      db.prepare("INSERT INTO floor_batches (at) VALUES (?1)").bind(Date.now()),
      db.prepare(
        `UPDATE floor_groups SET status = 'leased', batch = last_insert_rowid()
         WHERE id IN (SELECT id FROM floor_groups WHERE status = 'queued' ORDER BY id LIMIT 8)
         RETURNING id`,
      ),
    ]);
    return leased?.results.length ?? 0;
  }

  /**
   * A lease's unavoidable work: one D1 batch that leases the oldest 12 queued rows (about 64
   * sequences) to a new batch and returns their payloads, which go back as one JSON body.
   */
  async leasePayload(): Promise<{ batch: string; body: string }> {
    const db = this.env.DB;
    await this.queued();
    const batch = crypto.randomUUID();
    const [, leased] = await db.batch([
      db.prepare("INSERT INTO floor_batches (at) VALUES (?1)").bind(Date.now()),
      db
        .prepare(
          `UPDATE floor_payload_groups SET status = 'leased', batch = ?1
           WHERE id IN (SELECT id FROM floor_payload_groups WHERE status = 'queued' ORDER BY id LIMIT 12)
           RETURNING id, body`,
        )
        .bind(batch),
    ]);
    const bodies = (leased?.results ?? []) as { body: string }[];
    return {
      batch,
      body: `{"batch_id":"${batch}","batch":[${bodies.map((r) => r.body).join(",")}]}`,
    };
  }

  /** An ack's unavoidable work: one D1 batch marking the batch's rows delivered. */
  async ack(batch: string): Promise<number> {
    const result = await this.env.DB.prepare(
      "UPDATE floor_payload_groups SET status = 'delivered' WHERE batch = ?1",
    )
      .bind(batch)
      .run();
    return result.meta.changes;
  }

  private shaped: Promise<unknown> | null = null;

  /**
   * `lease()` in the shape of this API's lease write until 2026-11-28: nine statements in one D1
   * batch (a guard, the lease, 15 statistic rows as the bench's one-env leases write, the batch
   * row, a counter, then reading back the 8 leased rows, the run row, the new batch row and the
   * next 64-row queue head), about 75 rows back.
   */
  async leaseShaped(): Promise<number> {
    const db = this.env.DB;
    await this.queued();
    this.shaped ??= db.batch([
      db.prepare(
        "CREATE TABLE IF NOT EXISTS floor_stats (step INTEGER, name TEXT, value REAL, PRIMARY KEY (name, step))",
      ),
      db.prepare("CREATE TABLE IF NOT EXISTS floor_runs (name TEXT PRIMARY KEY, step INTEGER)"),
      db.prepare("INSERT OR IGNORE INTO floor_runs VALUES ('floor', 0)"),
    ]);
    await this.shaped;
    const results = await db.batch([
      db.prepare("SELECT COUNT(*) AS n FROM floor_groups WHERE status = 'queued' AND id < 0"),
      db.prepare(
        `UPDATE floor_groups SET status = 'leased', batch = -1
         WHERE id IN (SELECT id FROM floor_groups WHERE status = 'queued' ORDER BY id LIMIT 8)`,
      ),
      db.prepare(
        `INSERT INTO floor_stats SELECT (SELECT step FROM floor_runs), 'stat/' || value, random()
         FROM json_each('[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14]')`,
      ),
      db.prepare("INSERT INTO floor_batches (at) VALUES (?1)").bind(Date.now()),
      db.prepare("UPDATE floor_runs SET step = step + 1"),
      db.prepare(
        "SELECT * FROM floor_groups WHERE status = 'leased' AND batch = -1 ORDER BY id DESC LIMIT 8",
      ),
      db.prepare("SELECT * FROM floor_runs"),
      db.prepare("SELECT * FROM floor_batches ORDER BY id DESC LIMIT 1"),
      db.prepare("SELECT * FROM floor_groups WHERE status = 'queued' ORDER BY id LIMIT 64"),
    ]);
    return results.reduce((rows, r) => rows + r.results.length, 0);
  }
}

const decoder = new TextDecoder();
const json = (value: unknown, status = 200) =>
  new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json" } });

let tableReady: Promise<unknown> | null = null;

/** bench:api's batch: 64 sequences, in groups of 16. */
const GROUPS_PER_BATCH = 4;

function payloadsTable(db: D1Database): Promise<unknown> {
  tableReady ??= db.batch([
    db.prepare(
      "CREATE TABLE IF NOT EXISTS payloads (id INTEGER PRIMARY KEY, body NOT NULL, delivered INTEGER NOT NULL DEFAULT 0)",
    ),
    db.prepare("CREATE INDEX IF NOT EXISTS payloads_queued ON payloads (id) WHERE delivered = 0"),
  ]);
  return tableReady;
}

export default {
  async fetch(request: Request, env: FloorEnv): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path === "/") return json({ message: "floor" });
    if (path === "/register") return json({ uuid: "floor" });
    if (path === "/register-env") {
      return json({ status: "success", env_id: 0, wandb_name: "floor", checkpoint_dir: "c" });
    }
    if (path === "/batch") {
      await payloadsTable(env.DB);
      // Exactly GROUPS_PER_BATCH or nothing, and never a row twice: one statement decides both.
      const leased = await env.DB.prepare(
        `UPDATE payloads SET delivered = 1
         WHERE id IN (SELECT id FROM payloads WHERE delivered = 0 ORDER BY id LIMIT ?1)
           AND (SELECT COUNT(*) FROM (SELECT 1 FROM payloads WHERE delivered = 0 LIMIT ?1)) = ?1
         RETURNING body`,
      )
        .bind(GROUPS_PER_BATCH)
        .all<{ body: string }>();
      if (leased.results.length === 0) return json({ batch: null });
      return new Response(`{"batch":[${leased.results.map((r) => r.body).join(",")}]}`, {
        headers: { "content-type": "application/json" },
      });
    }
    if (path.startsWith("/do")) {
      const object = env.FLOOR_DO.get(env.FLOOR_DO.idFromName("floor"));
      if (path === "/do") return json({ n: await object.noop() });
      if (path === "/do-lease") return json({ n: await object.lease() });
      if (path === "/do-lease-shaped") return json({ n: await object.leaseShaped() });
      if (path === "/do-lease-payload") {
        const { batch, body } = await object.leasePayload();
        return new Response(body, {
          headers: { "content-type": "application/json", "x-batch-id": batch },
        });
      }
      if (path.startsWith("/do-ack/")) {
        return json({ n: await object.ack(path.slice("/do-ack/".length)) });
      }
      if (path === "/do-requeue") return json({ n: await object.requeue() });
      const statements = path === "/do-read5" ? 5 : 1;
      return json({ n: await object.readWrite(path === "/do-read-write", statements) });
    }
    if (path !== "/scored_data") return json({ detail: "not found" }, 404);
    await payloadsTable(env.DB);
    const raw = new Uint8Array(await request.arrayBuffer());
    const gzip = (request.headers.get("content-encoding") ?? "").includes("gzip");
    const text = decoder.decode(gzip ? gunzipBounded(raw) : raw);
    const parsed = scoredDataSchema.safeParse(JSON.parse(text));
    if (!parsed.success) return json({ detail: parsed.error.issues }, 422);
    if (raw.byteLength > 2 ** 20) {
      await env.R2.put(crypto.randomUUID(), raw);
    } else {
      // Text, as this API stores payloads in D1: the D1 binding sends a bound BLOB as a JSON
      // array of its byte values (workerd's d1-api), which cost more than parsing the body.
      const body = gzip ? Buffer.from(raw).toString("base64") : text;
      await env.DB.prepare("INSERT INTO payloads (body) VALUES (?1)").bind(body).run();
    }
    return json({ status: "received" });
  },
};
