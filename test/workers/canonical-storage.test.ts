/**
 * Groups are stored in their served (canonical) form once, at ingest: small ones in D1 beside
 * their row (group_payloads), larger ones in R2; delivery sends the stored bytes as they are. Rows stored before
 * canonical storage (the env's own JSON) are still served canonicalised.
 */
import { env } from "cloudflare:workers";
import { Buffer } from "node:buffer";
import { crc32, gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import type { Bindings } from "../../src/api/bindings";
import { batchBody } from "../../src/api/delivery";
import {
  GROUP_PAYLOAD_JOIN,
  GROUP_REF_COLUMNS,
  groupRef,
  groupRefRowSchema,
} from "../../src/api/storage/payloads";
import { inflatePiece } from "../../src/core/codecs/gzip-pieces";
import { canonicalGroupJson } from "../../src/core/wire/canonical-group";
import { call, group, json, post, setupRun, uniqueRun } from "./helpers";

const bindings = env as unknown as Bindings;

interface StoredRow {
  id: number;
  payload_key: string;
  payload_encoding: string;
  payload_inline: string | null;
  payload_bytes: number;
  raw_bytes: number | null;
  raw_crc32: number | null;
}

async function storedRows(run: string): Promise<StoredRow[]> {
  const { results } = await bindings.DB.prepare(
    `SELECT g.id, g.payload_key, g.payload_encoding, p.body AS payload_inline, g.payload_bytes,
       g.raw_bytes, g.raw_crc32
     FROM groups g LEFT JOIN group_payloads p ON p.group_id = g.id WHERE g.run = ?1 ORDER BY g.id`,
  )
    .bind(run)
    .all<StoredRow>();
  return results;
}

describe("canonical storage", () => {
  it("stores each group's canonical JSON once: small as text, larger compressed, in D1 or R2", async () => {
    const run = uniqueRun("canon");
    const { base, envIds } = await setupRun(run, 6, [2], { maxTokenLen: 32_768 });
    const envId = envIds[0]!;
    const small = { ...group(1, 2, envId), scores: [1, 0], seed: 7 };
    const medium = group(2, 2, envId, 4000);
    const large = group(3, 2, envId, 20_000);
    for (const g of [small, medium, large]) {
      expect((await post(`${base}/scored_data`, g)).status).toBe(200);
    }
    const [plain, inD1, inR2] = await storedRows(run);

    expect(plain).toMatchObject({
      payload_key: "",
      payload_encoding: "canonical",
      raw_bytes: null,
    });
    const { seed: _dropped, ...expected } = small;
    expect(plain!.payload_inline).toBe(canonicalGroupJson(expected, envId));
    expect(plain!.payload_inline).toContain('"scores":[1.0,0.0]');
    expect(plain!.payload_bytes).toBe(new TextEncoder().encode(plain!.payload_inline!).length);

    // Larger JSON: one raw-deflate piece with the JSON's length and CRC-32 in the row; in D1
    // (base64) while it fits, else in R2.
    const mediumJson = canonicalGroupJson(medium, envId);
    expect(inD1).toMatchObject({ payload_key: "", payload_encoding: "deflate" });
    const pieceInD1 = Uint8Array.from(Buffer.from(inD1!.payload_inline!, "base64"));
    expect(pieceInD1.byteLength).toBe(inD1!.payload_bytes);
    expect(new TextDecoder().decode(inflatePiece(pieceInD1))).toBe(mediumJson);
    expect(inD1!.raw_bytes).toBe(new TextEncoder().encode(mediumJson).length);
    expect(inD1!.raw_crc32).toBe(crc32(mediumJson));

    expect(inR2!.payload_inline).toBeNull();
    expect(inR2!.payload_encoding).toBe("deflate");
    const object = await bindings.PAYLOADS.get(inR2!.payload_key);
    const stored = new Uint8Array(await object!.arrayBuffer());
    expect(stored.byteLength).toBe(inR2!.payload_bytes);
    const largeJson = canonicalGroupJson(large, envId);
    expect(new TextDecoder().decode(inflatePiece(stored))).toBe(largeJson);
    expect(inR2!.raw_crc32).toBe(crc32(largeJson));

    // A client without gzip gets the JSON itself, in batch order.
    const leased = await post(`/v1/runs/${run}/batches/lease`, {});
    expect(leased.status).toBe(200);
    const text = await leased.text();
    expect(text).toContain(
      `"batch":[${canonicalGroupJson(expected, envId)},${mediumJson},${largeJson}]`,
    );
  });

  it("sends a gzip client one gzip member of the stored pieces: whole when they came with the lease, else streamed", async () => {
    const run = uniqueRun("canon-gzip");
    const { base, envIds } = await setupRun(run, 2, [2], { maxTokenLen: 32_768 });
    const envId = envIds[0]!;
    const groups = [group(1, 2, envId, 4000), group(2, 2, envId, 4100), group(3, 2, envId, 20_000)];
    for (const g of groups) expect((await post(`${base}/scored_data`, g)).status).toBe(200);
    const { results } = await bindings.DB.prepare(
      `SELECT ${GROUP_REF_COLUMNS} FROM groups g ${GROUP_PAYLOAD_JOIN} WHERE g.run = ?1 ORDER BY g.id`,
    )
      .bind(run)
      .all();
    const refs = results.map((row) => groupRef(groupRefRowSchema.parse(row)));
    const canonical = groups.map((g) => canonicalGroupJson(g, envId));
    const gunzipped = async (body: ReturnType<typeof batchBody>) =>
      gunzipSync(new Uint8Array(await new Response(body).arrayBuffer())).toString("utf8");

    // Both pieces are in D1, read with the lease: one body, no stream.
    const whole = batchBody(bindings, refs.slice(0, 2), '{"batch":[', "]}", true);
    expect(whole).toBeInstanceOf(Uint8Array);
    expect(await gunzipped(whole)).toBe(`{"batch":[${canonical[0]},${canonical[1]}]}`);
    // One in R2: the same member, streamed as the pieces are read.
    const streamed = batchBody(bindings, refs, '{"batch":[', "]}", true);
    expect(streamed).toBeInstanceOf(ReadableStream);
    expect(await gunzipped(streamed)).toBe(`{"batch":[${canonical.join(",")}]}`);
  });

  it("stores one payload row per group: a retried submission adds none", async () => {
    const run = uniqueRun("canon-retry");
    const { base, envIds } = await setupRun(run, 4, [2]);
    const body = group(1, 2, envIds[0]!);
    expect((await post(`${base}/scored_data`, body)).status).toBe(200);
    expect(await json(post(`${base}/scored_data`, body))).toEqual({
      status: "received",
      duplicate: true,
    });
    expect((await post(`${base}/scored_data`, group(2, 2, envIds[0]!))).status).toBe(200);
    const rows = await storedRows(run);
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.payload_inline !== null)).toBe(true);
    const count = await bindings.DB.prepare(
      "SELECT COUNT(*) AS n FROM group_payloads WHERE run = ?1",
    )
      .bind(run)
      .first<{ n: number }>();
    expect(count!.n).toBe(2);
  });

  it("serves the stored bytes as they are, without parsing them again", async () => {
    const run = uniqueRun("canon-raw");
    const { base, envIds } = await setupRun(run, 2, [2]);
    expect((await post(`${base}/scored_data`, group(1, 2, envIds[0]!))).status).toBe(200);
    const [row] = await storedRows(run);
    // A marker no parse-and-canonicalise step would keep shows the bytes went out untouched.
    const marked = row!.payload_inline!.replace('"tokens":', '"tokens" :');
    await bindings.DB.prepare("UPDATE group_payloads SET body = ?2 WHERE group_id = ?1")
      .bind(row!.id, marked)
      .run();
    expect(await (await call(`/runs/${run}/latest_example`)).text()).toBe(marked);
    const detail = await (await call(`/v1/runs/${run}/groups/${row!.id}`)).text();
    expect(detail).toContain(`"payload":${marked}`);
    const batch = await (await call(`/runs/${run}/batch`)).text();
    expect(batch).toContain(marked);
  });

  it("still canonicalises rows stored as the env sent them", async () => {
    const run = uniqueRun("canon-legacy");
    const { base, envIds } = await setupRun(run, 2, [2]);
    expect((await post(`${base}/scored_data`, group(1, 2, envIds[0]!))).status).toBe(200);
    const [row] = await storedRows(run);
    const asSent = JSON.stringify({
      tokens: [
        [1, 2],
        [3, 4],
      ],
      masks: [
        [-100, 2],
        [-100, 4],
      ],
      scores: [1, 0],
    });
    const key = `runs/${run}/groups/legacy`;
    await bindings.PAYLOADS.put(key, asSent);
    await bindings.DB.batch([
      bindings.DB.prepare(
        `UPDATE groups SET payload_encoding = 'identity', payload_key = ?2, payload_offset = 0,
           payload_bytes = ?3 WHERE id = ?1`,
      ).bind(row!.id, key, asSent.length),
      bindings.DB.prepare("DELETE FROM group_payloads WHERE group_id = ?1").bind(row!.id),
    ]);
    const served = await json<{ scores: number[]; advantages: unknown; env_id: number }>(
      call(`/runs/${run}/latest_example`),
    );
    expect(served).toMatchObject({ scores: [1, 0], advantages: null, env_id: envIds[0] });
    expect(await (await call(`/runs/${run}/latest_example`)).text()).toContain(
      '"scores":[1.0,0.0]',
    );
  });
});
