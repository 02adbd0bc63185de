/**
 * API tokens: the scopes a token may hold, what a route's scope lets through, and the shapes of
 * the token routes (POST/GET /v1/tokens, DELETE /v1/tokens/{id}) shared by the API and the CLI.
 */
import { z } from "zod";
import { runNameSchema } from "./schemas";

/**
 * What a route needs and what a token holds: admin (everything: reset, env workers, tokens),
 * trainer (register, lease, ack, policy, batches), env (environments: register-env, status-env,
 * checkpoints, evals), contributor (submissions to one run), read (observability).
 */
export const SCOPES = ["admin", "trainer", "env", "contributor", "read"] as const;
export const scopeSchema = z.enum(SCOPES);
export type Scope = z.infer<typeof scopeSchema>;

/** The route scopes a token scope lets through (admin: all of them). */
const GRANTS: Record<Scope, readonly Scope[]> = {
  admin: SCOPES,
  trainer: ["trainer", "read"],
  env: ["env", "contributor"],
  contributor: ["contributor"],
  read: ["read"],
};

/** Whether a token holding `held` may call a route that needs `needed`. */
export function scopesAllow(held: readonly Scope[], needed: Scope): boolean {
  return held.some((scope) => GRANTS[scope].includes(needed));
}

const limit = z.number().positive().nullable().optional();

export const createTokenRequestSchema = z
  .object({
    name: z.string().min(1).max(100).describe("Who or what holds the token (for the listing)."),
    scopes: z.array(scopeSchema).min(1),
    run: runNameSchema
      .nullable()
      .optional()
      .describe("Binds the token to one run; required for the contributor scope."),
    rps_limit: limit.describe("Requests per second (a burst of twice this is allowed)."),
    bytes_per_day: limit.describe("Submitted body bytes per UTC day."),
    proxy_tokens_per_day: limit.describe(
      "Inference-proxy tokens (prompt + completion) per UTC day; past it the proxy answers 429.",
    ),
  })
  .refine((t) => !t.scopes.includes("contributor") || (t.run ?? null) !== null, {
    message: "a contributor token must be bound to a run: add `run`",
    path: ["run"],
  })
  .refine((t) => !t.scopes.includes("admin") || (t.run ?? null) === null, {
    message: "an admin token cannot be bound to a run",
    path: ["run"],
  });
export type CreateTokenRequest = z.infer<typeof createTokenRequestSchema>;

export const tokenInfoSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    scopes: z.array(scopeSchema),
    run: z.string().nullable(),
    rps_limit: z.number().nullable(),
    bytes_per_day: z.number().nullable(),
    proxy_tokens_per_day: z.number().nullable(),
    created_at: z.number().int(),
    revoked_at: z.number().int().nullable(),
  })
  .meta({ id: "Token" });
export type TokenInfo = z.infer<typeof tokenInfoSchema>;

export const createdTokenSchema = tokenInfoSchema
  .extend({ secret: z.string().describe("Shown once: only its SHA-256 is stored.") })
  .meta({ id: "CreatedToken" });
export type CreatedToken = z.infer<typeof createdTokenSchema>;

export const tokenListSchema = z.object({ tokens: z.array(tokenInfoSchema) });
