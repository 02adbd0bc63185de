import { z } from "zod";
import { sha256Hex } from "../../core/codecs/sha256";
/**
 * API tokens in D1 (api_tokens): created with a random secret that is returned once and stored
 * only as its SHA-256, looked up by that hash, revoked by id.
 */
import {
  type CreatedToken,
  type CreateTokenRequest,
  type Scope,
  scopeSchema,
  type TokenInfo,
} from "../../core/wire/tokens";
import { allRows, firstRow } from "./rows";

/** What authentication knows about a presented token. */
export interface StoredToken {
  id: string;
  name: string;
  scopes: Scope[];
  run: string | null;
  rpsLimit: number | null;
  bytesPerDay: number | null;
  proxyTokensPerDay: number | null;
}

const tokenRow = z.object({
  id: z.string(),
  name: z.string(),
  scopes: z.string(),
  bound_run: z.string().nullable(),
  rps_limit: z.number().nullable(),
  bytes_per_day: z.number().nullable(),
  proxy_tokens_per_day: z.number().nullable(),
  created_at: z.number(),
  revoked_at: z.number().nullable(),
});
type TokenRow = z.infer<typeof tokenRow>;

const COLUMNS =
  "id, name, scopes, bound_run, rps_limit, bytes_per_day, proxy_tokens_per_day, created_at, revoked_at";

function hex(bytes: Uint8Array): string {
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function randomHex(bytes: number): string {
  return hex(crypto.getRandomValues(new Uint8Array(bytes)));
}

function parseScopes(json: string): Scope[] {
  return scopeSchema.array().parse(JSON.parse(json));
}

function infoOf(row: TokenRow): TokenInfo {
  return {
    id: row.id,
    name: row.name,
    scopes: parseScopes(row.scopes),
    run: row.bound_run,
    rps_limit: row.rps_limit,
    bytes_per_day: row.bytes_per_day,
    proxy_tokens_per_day: row.proxy_tokens_per_day,
    created_at: row.created_at,
    revoked_at: row.revoked_at,
  };
}

export async function createToken(
  db: D1Database,
  request: CreateTokenRequest,
): Promise<CreatedToken> {
  const id = `tok_${randomHex(8)}`;
  // The prefix makes a leaked secret recognisable (secret scanners, logs).
  const secret = `aet_${randomHex(32)}`;
  const row = await firstRow(
    db
      .prepare(
        `INSERT INTO api_tokens (id, name, secret_hash, scopes, bound_run, rps_limit, bytes_per_day, proxy_tokens_per_day, created_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING ${COLUMNS}`,
      )
      .bind(
        id,
        request.name,
        sha256Hex(secret),
        JSON.stringify([...new Set(request.scopes)]),
        request.run ?? null,
        request.rps_limit ?? null,
        request.bytes_per_day ?? null,
        request.proxy_tokens_per_day ?? null,
        Date.now(),
      ),
    tokenRow,
  );
  return { ...infoOf(row!), secret };
}

export async function listTokens(db: D1Database): Promise<TokenInfo[]> {
  const results = await allRows(
    db.prepare(`SELECT ${COLUMNS} FROM api_tokens ORDER BY created_at, id`),
    tokenRow,
  );
  return results.map(infoOf);
}

/** Revokes a token (idempotent); null when there is no such token. */
export async function revokeToken(db: D1Database, id: string): Promise<TokenInfo | null> {
  const row = await firstRow(
    db
      .prepare(
        `UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1 RETURNING ${COLUMNS}`,
      )
      .bind(id, Date.now()),
    tokenRow,
  );
  return row ? infoOf(row) : null;
}

/** The live (not revoked) token whose secret this is, if any. */
export async function findToken(db: D1Database, secret: string): Promise<StoredToken | null> {
  const row = await firstRow(
    db
      .prepare(`SELECT ${COLUMNS} FROM api_tokens WHERE secret_hash = ?1 AND revoked_at IS NULL`)
      .bind(sha256Hex(secret)),
    tokenRow,
  );
  if (!row) return null;
  return {
    id: row.id,
    name: row.name,
    scopes: parseScopes(row.scopes),
    run: row.bound_run,
    rpsLimit: row.rps_limit,
    bytesPerDay: row.bytes_per_day,
    proxyTokensPerDay: row.proxy_tokens_per_day,
  };
}
