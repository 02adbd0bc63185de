/**
 * Queue message shapes. Messages carry item descriptors, never payloads (128 KB limit).
 */
import type { EnvWorkerRef } from "./server-config";

export interface RolloutItemMessage {
  /** Unique per item: dedupes duplicate queue deliveries (keys the group's idempotency key). */
  itemId: string;
  run: string;
  /** Name of the EnvFeeder Durable Object that issued the item (receives the outcome). */
  feeder: string;
  envId: number;
  /** Never carries an API key: servers listed without keys, or "run" (the run's stored servers). */
  spec: EnvWorkerRef;
  /** The env's item (JSON-serialisable, small). */
  item: unknown;
  /** Policy version current when the item was issued. */
  policyVersion: number;
  issuedAt: number;
}

/** Bytes a message occupies on the queue; Cloudflare's limit is 128 KB including metadata. */
export function messageBytes(message: RolloutItemMessage): number {
  return new TextEncoder().encode(JSON.stringify(message)).byteLength;
}

export const MAX_MESSAGE_BYTES = 120_000;
