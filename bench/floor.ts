/**
 * The local runtime's own floor, measured beside the API in `npm run bench:api`: a bare Miniflare
 * Worker (no framework, no API code) answering a no-op, storing a POST body as one D1 row, and
 * putting it in R2, each called sequentially over HTTP by the same load generator. What the API
 * cannot go below on this machine whatever its code does.
 */
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { Miniflare } from "miniflare";

const SCRIPT = `
export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    if (path === "/noop") return new Response("ok");
    const body = await request.text();
    if (path === "/d1") {
      await env.DB.prepare("INSERT INTO payloads (body) VALUES (?1)").bind(body).run();
    } else if (path === "/r2") {
      await env.R2.put(crypto.randomUUID(), body);
    }
    return new Response("ok");
  },
};`;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Median ms of `count` sequential requests for each case, with a body of `bodyBytes`. */
export async function measureFloor(stateRoot: string, bodyBytes: number, count = 100) {
  const persist = mkdtempSync(join(stateRoot, "bench-floor-"));
  const mf = new Miniflare({
    modules: true,
    script: SCRIPT,
    compatibilityDate: "2026-04-01",
    d1Databases: ["DB"],
    r2Buckets: ["R2"],
    d1Persist: join(persist, "d1"),
    r2Persist: join(persist, "r2"),
    port: 0,
  });
  try {
    const url = await mf.ready;
    const db = await mf.getD1Database("DB");
    await db.exec("CREATE TABLE payloads (id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
    const body = "7".repeat(bodyBytes);
    const time = async (path: string, withBody: boolean) => {
      const samples: number[] = [];
      for (let i = 0; i < count; i++) {
        const t0 = performance.now();
        const res = await fetch(new URL(path, url), {
          method: withBody ? "POST" : "GET",
          body: withBody ? body : undefined,
        });
        await res.text();
        samples.push(performance.now() - t0);
      }
      return median(samples);
    };
    return {
      body_bytes: bodyBytes,
      noop_ms: await time("/noop", false),
      post_d1_row_ms: await time("/d1", true),
      post_r2_put_ms: await time("/r2", true),
    };
  } finally {
    await mf.dispose();
  }
}
