/**
 * The floor (bench:api `--floor`): a bare Worker on the same Miniflare doing only the work no
 * rollout API can skip for a submitted group: read the body, inflate it when gzip, parse it,
 * validate it with the same schema (src/core/wire/schemas.ts), and make it durable with one write (one
 * D1 row, or one R2 object over 1 MiB, as received). No framework, auth, dedupe, canonical form or
 * delivery. The trainer routes answer canned JSON so the same load generator can drive it.
 */
import { gunzipBounded } from "../../src/core/codecs/gzip";
import { scoredDataSchema } from "../../src/core/wire/schemas";

interface FloorEnv {
  DB: D1Database;
  R2: R2Bucket;
}

const decoder = new TextDecoder();
const json = (value: unknown, status = 200) =>
  new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json" } });

let tableReady: Promise<unknown> | null = null;

export default {
  async fetch(request: Request, env: FloorEnv): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path === "/") return json({ message: "floor" });
    if (path === "/register") return json({ uuid: "floor" });
    if (path === "/register-env") {
      return json({ status: "success", env_id: 0, wandb_name: "floor", checkpoint_dir: "c" });
    }
    if (path === "/batch") return json({ batch: null });
    if (path !== "/scored_data") return json({ detail: "not found" }, 404);
    tableReady ??= env.DB.prepare(
      "CREATE TABLE IF NOT EXISTS payloads (id INTEGER PRIMARY KEY, body BLOB NOT NULL)",
    ).run();
    await tableReady;
    const raw = new Uint8Array(await request.arrayBuffer());
    const gzip = (request.headers.get("content-encoding") ?? "").includes("gzip");
    const text = decoder.decode(gzip ? gunzipBounded(raw) : raw);
    const parsed = scoredDataSchema.safeParse(JSON.parse(text));
    if (!parsed.success) return json({ detail: parsed.error.issues }, 422);
    if (raw.byteLength > 2 ** 20) await env.R2.put(crypto.randomUUID(), raw);
    else await env.DB.prepare("INSERT INTO payloads (body) VALUES (?1)").bind(raw).run();
    return json({ status: "received" });
  },
};
