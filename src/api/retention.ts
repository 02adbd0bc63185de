/**
 * Retention: groups a trainer has acknowledged (status 'delivered', their batch acked) are removed
 * RETENTION_HOURS after the ack, with their payloads. Queued, buffered and leased groups, groups
 * in the replay buffer and groups replayed in a batch still leased are never touched. Group
 * commit stores several groups in one R2 object, so an object is deleted only when no row
 * references it any more.
 * A removed group's trajectories and token texts go with it. Unset (or 0) keeps everything forever.
 */
import type { BaseBindings } from "./base-bindings";
import { settingsOf } from "./settings";
import { deleteInlinePayloads } from "./storage/payloads";
import { deleteExpiredGroups, firstExpiringAck, referencedPayloadKeys } from "./storage/retention";
import { deleteGroupTokenTexts } from "./storage/token-texts";
import { deleteGroupTrajectories } from "./storage/trajectories";

/** Retention in ms, or null to keep delivered groups forever. */
export function retentionMs(env: BaseBindings): number | null {
  const hours = settingsOf(env).RETENTION_HOURS;
  return hours > 0 ? hours * 3_600_000 : null;
}

export interface CollectedGarbage {
  groups: number;
  bytes: number;
  /** R2 objects deleted (an object shared with kept groups stays). */
  objects: number;
  /** More expired groups remain than one pass removes. */
  more: boolean;
}

/** Removes up to `limit` groups of `run` delivered before `now - retention`, and orphaned payloads. */
export async function collectGarbage(
  env: BaseBindings,
  run: string,
  retention: number,
  now = Date.now(),
  limit = 500,
): Promise<CollectedGarbage> {
  const results = await deleteExpiredGroups(env.DB, run, now - retention, limit);
  if (results.length > 0) {
    const ids = results.map((r) => r.id);
    await deleteGroupTrajectories(env.DB, run, ids).run();
    await deleteGroupTokenTexts(env.DB, run, ids).run();
    await deleteInlinePayloads(env.DB, ids).run();
  }
  // Inline payloads (key "") are gone with them; R2 objects may be shared with kept groups.
  const keys = [...new Set(results.map((r) => r.payloadKey))].filter((k) => k !== "");
  let orphans: string[] = [];
  if (keys.length > 0) {
    const referenced = new Set(await referencedPayloadKeys(env.DB, keys));
    orphans = keys.filter((k) => !referenced.has(k));
    // R2 deletes up to 1000 keys per call.
    for (let i = 0; i < orphans.length; i += 1000) {
      await env.PAYLOADS.delete(orphans.slice(i, i + 1000));
    }
  }
  return {
    groups: results.length,
    bytes: results.reduce((sum, r) => sum + r.payloadBytes, 0),
    objects: orphans.length,
    more: results.length >= limit,
  };
}

/** When the next delivered group of the run expires (ms since the epoch), or null if none. */
export async function nextExpiry(
  env: BaseBindings,
  run: string,
  retention: number,
): Promise<number | null> {
  const at = await firstExpiringAck(env.DB, run);
  return at === null ? null : at + retention;
}
