-- Keep queue_counts in step with groups, inside the same transaction as every status change,
-- so /status, /status-env and stats read a few rows instead of scanning the queue.
CREATE TRIGGER groups_count_on_insert AFTER INSERT ON groups
WHEN NEW.status IN ('queued', 'buffered')
BEGIN
  INSERT INTO queue_counts (run, env_id, size, status, n)
  VALUES (NEW.run, COALESCE(NEW.env_id, -1), NEW.num_seqs, NEW.status, 1)
  ON CONFLICT (run, env_id, size, status) DO UPDATE SET n = n + 1;
END;
--> statement-breakpoint
CREATE TRIGGER groups_count_on_status AFTER UPDATE OF status ON groups
WHEN OLD.status <> NEW.status
BEGIN
  UPDATE queue_counts SET n = n - 1
  WHERE OLD.status IN ('queued', 'buffered')
    AND run = OLD.run AND env_id = COALESCE(OLD.env_id, -1) AND size = OLD.num_seqs
    AND status = OLD.status;
  INSERT INTO queue_counts (run, env_id, size, status, n)
  SELECT NEW.run, COALESCE(NEW.env_id, -1), NEW.num_seqs, NEW.status, 1
  WHERE NEW.status IN ('queued', 'buffered')
  ON CONFLICT (run, env_id, size, status) DO UPDATE SET n = n + 1;
END;
--> statement-breakpoint
CREATE TRIGGER groups_count_on_delete AFTER DELETE ON groups
WHEN OLD.status IN ('queued', 'buffered')
BEGIN
  UPDATE queue_counts SET n = n - 1
  WHERE run = OLD.run AND env_id = COALESCE(OLD.env_id, -1) AND size = OLD.num_seqs
    AND status = OLD.status;
END;
