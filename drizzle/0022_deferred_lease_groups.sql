-- A lease can answer before its groups are marked leased: the batch row (with its group list) is
-- the lease, written before the answer; the groups' status follows in a second transaction of the
-- RunCoordinator, which runs before any other transition of the run and, after a restart, before
-- its first lease or ack (src/api/storage/lease-writes.ts, settleLeasedGroups). A lease then
-- writes a few pages instead of every index its groups are in, so few leases pay a WAL
-- checkpoint. Rows inserted with groups_deferred = 0 (the default: code from before this
-- migration, GET /batch) still lease their groups in the insert's own transaction.
ALTER TABLE `batches` ADD `groups_deferred` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
DROP TRIGGER batch_leases_groups;
--> statement-breakpoint
CREATE TRIGGER batch_leases_groups AFTER INSERT ON batches
WHEN NEW.groups_deferred = 0
BEGIN
  UPDATE groups SET status = 'leased', batch_id = NEW.id
  WHERE run = NEW.run AND status = 'queued'
    AND id IN (SELECT value FROM json_each(NEW.group_ids))
    AND id NOT IN (SELECT value FROM json_each(COALESCE(NEW.replay_ids, '[]')));
END;
