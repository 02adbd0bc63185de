/**
 * Idempotency-Key support: the first answer to a keyed POST is stored; a retry with the same key
 * and body gets that answer again; the same key with a different body is a client bug (422).
 */

import { z } from "zod";
import { ApiError } from "../errors";
import { firstRow } from "./rows";

export interface StoredAnswer {
  statusCode: number;
  response: string;
}

const answerRow = z.object({
  route: z.string(),
  request_hash: z.string(),
  status_code: z.number(),
  response: z.string(),
});

export async function findAnswer(
  d1: D1Database,
  run: string,
  key: string,
  route: string,
  requestHash: string,
  /** The key as the client sent it (`key` may be scoped to its token). */
  shown = key,
): Promise<StoredAnswer | null> {
  const row = await firstRow(
    d1
      .prepare(
        "SELECT route, request_hash, status_code, response FROM idempotency_keys WHERE run = ?1 AND key = ?2",
      )
      .bind(run, key),
    answerRow,
  );
  if (!row) return null;
  if (row.route !== route || row.request_hash !== requestHash) {
    throw new ApiError(
      "VALIDATION_FAILED",
      `Idempotency-Key '${shown}' was already used for a different request; use a new key for each distinct request`,
      [
        {
          type: "value_error",
          loc: ["header", "idempotency-key"],
          msg: "key reused with a different body",
        },
      ],
    );
  }
  return { statusCode: row.status_code, response: row.response };
}

export async function storeAnswer(
  d1: D1Database,
  run: string,
  key: string,
  route: string,
  requestHash: string,
  answer: StoredAnswer,
): Promise<void> {
  await d1
    .prepare(
      `INSERT INTO idempotency_keys (run, key, route, request_hash, status_code, response, created_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (run, key) DO NOTHING`,
    )
    .bind(run, key, route, requestHash, answer.statusCode, answer.response, Date.now())
    .run();
}

export function validIdempotencyKey(key: string | undefined): string | undefined {
  if (key === undefined) return undefined;
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
    throw new ApiError(
      "BAD_REQUEST",
      "Idempotency-Key must be 1-255 printable ASCII characters without spaces",
    );
  }
  return key;
}
