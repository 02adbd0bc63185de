/**
 * Answers of Atropos' trainer routes that the clients read (the env routes' are in
 * env-workers.ts).
 */
import { z } from "zod";

/** POST /register. */
export const registerResponseSchema = z.object({ uuid: z.number() });
export type RegisterAnswer = z.infer<typeof registerResponseSchema>;

/** GET /info: both -1 before a trainer has registered. */
export const infoResponseSchema = z.object({
  batch_size: z.number().int(),
  max_token_len: z.number().int(),
});
export type InfoAnswer = z.infer<typeof infoResponseSchema>;
