-- Ingest tells a run's coordinator about a queued group only while the coordinator may answer
-- empty leases from memory: the coordinator draws a new empty_epoch (in a write that holds only while
-- the run has no queued group) before it keeps an empty answer, and ingest reads it in its own
-- commit (src/api/storage/empty-epoch.ts). Code from before this migration always told it.
ALTER TABLE `runs` ADD `empty_epoch` integer DEFAULT 0 NOT NULL;
