CREATE TABLE `lease_plan_checks` (
	`current` integer NOT NULL
);
--> statement-breakpoint
-- A lease formed from queue state the RunCoordinator remembered (read by the previous lease's
-- write) starts its write with `INSERT INTO lease_plan_checks (current) SELECT <still holds>`:
-- when that state changed meanwhile, the insert aborts the whole D1 batch (a transaction), so
-- nothing of the lease is written and the coordinator plans again from a fresh read.
-- When it holds, nothing is stored either.
CREATE TRIGGER lease_plan_check BEFORE INSERT ON lease_plan_checks
BEGIN
  SELECT CASE WHEN NEW.current THEN RAISE(IGNORE) ELSE RAISE(ABORT, 'lease plan is stale') END;
END;
