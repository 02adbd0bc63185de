/**
 * A run's inference servers. Keys are kept out of the servers' JSON and, when the Worker has the
 * INFERENCE_KEYS_SECRET secret, sealed with AES-GCM (a key derived from the secret by SHA-256);
 * nothing here ever returns them to a client, only to the proxy that forwards with them.
 */

import { z } from "zod";
import type { APIServerConfig } from "../../core/wire/server-config";
import { firstRow } from "./rows";

const SEALED_PREFIX = "aesgcm:";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

async function aesKey(secret: string): Promise<CryptoKey> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(secret));
  return crypto.subtle.importKey("raw", digest, "AES-GCM", false, ["encrypt", "decrypt"]);
}

function toBase64(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text);
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

async function seal(plain: string, secret: string | undefined): Promise<string> {
  if (!secret) return plain;
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv },
    await aesKey(secret),
    encoder.encode(plain),
  );
  return `${SEALED_PREFIX}${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

async function unseal(stored: string, secret: string | undefined): Promise<string> {
  if (!stored.startsWith(SEALED_PREFIX)) return stored;
  if (!secret) {
    throw new Error(
      "the run's inference keys are encrypted but INFERENCE_KEYS_SECRET is not set; set it again or PUT the servers again",
    );
  }
  const [iv, data] = stored.slice(SEALED_PREFIX.length).split(".");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64(iv ?? "") },
    await aesKey(secret),
    fromBase64(data ?? ""),
  );
  return decoder.decode(plain);
}

export interface StoredInference {
  servers: APIServerConfig[];
  updatedAt: number;
}

/** A server as GET shows it: the key replaced by whether there is one. */
export type RedactedServer = Omit<APIServerConfig, "api_key"> & {
  api_key: null;
  has_api_key: boolean;
};

function redacted(server: APIServerConfig): RedactedServer {
  return {
    ...server,
    api_key: null,
    has_api_key: typeof server.api_key === "string" && server.api_key.length > 0,
  };
}

export async function putRunInference(
  db: D1Database,
  run: string,
  servers: readonly APIServerConfig[],
  secret: string | undefined,
  now: number,
): Promise<RedactedServer[]> {
  const keys = servers.map((server) => server.api_key ?? null);
  const shown = servers.map(redacted);
  await db
    .prepare(
      `INSERT INTO run_inference (run, servers, api_keys, updated_at) VALUES (?1, ?2, ?3, ?4)
       ON CONFLICT (run) DO UPDATE SET servers = excluded.servers, api_keys = excluded.api_keys, updated_at = excluded.updated_at`,
    )
    .bind(run, JSON.stringify(shown), await seal(JSON.stringify(keys), secret), now)
    .run();
  return shown;
}

const inferenceRow = z.object({
  servers: z.string(),
  api_keys: z.string(),
  updated_at: z.number(),
});
type InferenceRow = z.infer<typeof inferenceRow>;

function readRow(db: D1Database, run: string): Promise<InferenceRow | null> {
  return firstRow(
    db.prepare("SELECT servers, api_keys, updated_at FROM run_inference WHERE run = ?1").bind(run),
    inferenceRow,
  );
}

/** The run's servers with their keys, for forwarding; null when none are set. */
export async function getRunInference(
  db: D1Database,
  run: string,
  secret: string | undefined,
): Promise<StoredInference | null> {
  const row = await readRow(db, run);
  if (!row) return null;
  const servers = JSON.parse(row.servers) as RedactedServer[];
  const keys = JSON.parse(await unseal(row.api_keys, secret)) as (string | null)[];
  return {
    servers: servers.map(({ has_api_key: _shown, ...server }, i) => ({
      ...server,
      api_key: keys[i] ?? null,
    })),
    updatedAt: row.updated_at,
  };
}

/** The run's servers as GET shows them (no keys; no secret needed). */
export async function getRunInferenceRedacted(
  db: D1Database,
  run: string,
): Promise<{ servers: RedactedServer[]; updatedAt: number } | null> {
  const row = await readRow(db, run);
  if (!row) return null;
  return { servers: JSON.parse(row.servers) as RedactedServer[], updatedAt: row.updated_at };
}
