-- A batch's own row drives what its transitions change to its groups, in the same transaction:
-- the lease and the ack each send one statement for these instead of two or four (every
-- statement of a D1 batch has a cost of its own, paid on every training step). Both are no-ops
-- after the statements they replace, so a Worker still running the previous code during a deploy
-- changes nothing twice.
--
-- A new batch leases its online groups (replayed ones stay in the replay buffer, delivered).
CREATE TRIGGER batch_leases_groups AFTER INSERT ON batches
BEGIN
  UPDATE groups SET status = 'leased', batch_id = NEW.id
  WHERE run = NEW.run AND status = 'queued'
    AND id IN (SELECT value FROM json_each(NEW.group_ids))
    AND id NOT IN (SELECT value FROM json_each(COALESCE(NEW.replay_ids, '[]')));
END;
--> statement-breakpoint
-- An acknowledged batch delivers its groups; with replay on, those whose mean score reaches the
-- run's threshold join its replay buffer, which is then trimmed to the run's capacity.
CREATE TRIGGER batch_acked_delivers AFTER UPDATE OF status ON batches
WHEN NEW.status = 'acked' AND OLD.status <> 'acked'
BEGIN
  UPDATE groups SET status = 'delivered' WHERE batch_id = NEW.id;
  INSERT OR IGNORE INTO replay_groups (run, group_id, priority, replays, added_at)
  SELECT g.run, g.id, g.score_mean, 0, NEW.acked_at FROM groups g JOIN runs r ON r.name = g.run
  WHERE g.batch_id = NEW.id AND r.replay_enabled = 1 AND r.replay_capacity > 0
    AND g.score_mean IS NOT NULL AND g.score_mean >= r.replay_threshold;
  DELETE FROM replay_groups WHERE run = NEW.run AND group_id IN (
    SELECT group_id FROM replay_groups WHERE run = NEW.run
    ORDER BY priority DESC, group_id DESC
    LIMIT -1 OFFSET COALESCE((SELECT replay_capacity FROM runs WHERE name = NEW.run), 0));
END;
