/**
 * Queue message shapes. Messages carry item descriptors, never payloads (128 KB limit).
 */
export interface RolloutItemMessage {
  /** Unique per item: dedupes duplicate queue deliveries and keys the group's Idempotency-Key. */
  itemId: string;
  run: string;
  envName: string;
  envId: number;
  /** The env's item (JSON-serialisable, small). */
  item: unknown;
  /** Policy version current when the item was issued. */
  policyVersion: number;
  issuedAt: number;
  /** Env config overrides the feeder was started with. */
  config: Record<string, unknown>;
}
