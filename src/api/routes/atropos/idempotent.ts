import { z } from "zod";
import type { AppContext } from "../../context";
import { submitterOf } from "../../middleware/auth";
import { rawJson } from "../../request";
import { findAnswer, storeAnswer } from "../../storage/idempotency";

/**
 * Runs a JSON-answering POST under its Idempotency-Key (`key`, when the request has one). Keys are
 * per token: another token's key of the same name is another request (API_TOKEN and open local
 * development share the unscoped keys they always had).
 */
export async function idempotent(
  c: AppContext,
  run: string,
  route: string,
  hash: string,
  key: string | undefined,
  handler: () => Promise<unknown>,
): Promise<Response> {
  if (key === undefined) return c.json(await handler());
  const tokenId = submitterOf(c);
  const stored = tokenId === null ? key : `token:${tokenId}/${key}`;
  const prior = await findAnswer(c.env.DB, run, stored, route, hash, key);
  if (prior) {
    const replay = rawJson(prior.response, prior.statusCode);
    replay.headers.set("Idempotent-Replayed", "true");
    return replay;
  }
  const response = JSON.stringify(await handler());
  await storeAnswer(c.env.DB, run, stored, route, hash, { statusCode: 200, response });
  return rawJson(response);
}

export const idempotencyKeyHeader = z.object({
  "idempotency-key": z
    .string()
    .optional()
    .describe(
      "The first answer is replayed (`Idempotent-Replayed: true`); the same key with another body is refused with 422.",
    ),
});
