-- The statistics of each batch move out of `metrics` into one row per (step, env) with every value in
-- a JSON object. `metrics` is keyed by name first, so the 15 or more values of a step were written to
-- as many index pages on every lease; here they land on one. WITHOUT ROWID: the key is the table,
-- with no second b-tree to write.
CREATE TABLE `batch_statistics` (
	`run` text NOT NULL,
	`step` integer NOT NULL,
	`env_id` integer NOT NULL,
	`policy_version` integer,
	`created_at` integer NOT NULL,
	`statistics` text NOT NULL,
	PRIMARY KEY(`run`, `step`, `env_id`)
) WITHOUT ROWID;
--> statement-breakpoint
-- The statistics already stored move over, reals with all 17 significant digits (the JSON of SQLite
-- writes 15); values a trainer reported under other names of kind "train" (its loss, say) stay in
-- `metrics`. (Infinite values, which no chart draws, are dropped.)
INSERT OR REPLACE INTO `batch_statistics` (`run`, `step`, `env_id`, `policy_version`, `created_at`, `statistics`)
SELECT `run`, `step`, `env_id`, MAX(`policy_version`), MAX(`created_at`), json_group_object(`name`,
  iif(typeof(`value`) = 'integer', `value`, json(printf('%!.17g', `value`))))
FROM `metrics`
WHERE `kind` = 'train' AND abs(`value`) <= 1.7976931348623157e308 AND (`name` IN ('train/score_mean', 'train/score_std', 'train/score_min',
    'train/score_max', 'train/percent_correct', 'train/completion_lengths', 'train/groups',
    'train/sequences', 'train/staleness_mean', 'train/staleness_max', 'train/sequences_per_s',
    'train/ingest_groups', 'train/ingest_sequences') OR `name` LIKE 'train/score\_hist/%' ESCAPE '\')
GROUP BY `run`, `step`, `env_id`;
--> statement-breakpoint
DELETE FROM `metrics`
WHERE `kind` = 'train' AND (`name` IN ('train/score_mean', 'train/score_std', 'train/score_min',
    'train/score_max', 'train/percent_correct', 'train/completion_lengths', 'train/groups',
    'train/sequences', 'train/staleness_mean', 'train/staleness_max', 'train/sequences_per_s',
    'train/ingest_groups', 'train/ingest_sequences') OR `name` LIKE 'train/score\_hist/%' ESCAPE '\');
--> statement-breakpoint
-- Every value of the metrics store, one row each, as `metrics` held them before: what the
-- metrics API and the time series read (each arm keeps its own index for the run).
CREATE VIEW `metric_values` AS
SELECT `run`, `name`, `env_id`, `step`, `policy_version`, `value`, `kind`, `created_at` FROM `metrics`
UNION ALL
SELECT b.`run`, j.`key`, b.`env_id`, b.`step`, b.`policy_version`, j.`value`, 'train', b.`created_at`
FROM `batch_statistics` AS b, json_each(b.`statistics`) AS j;
--> statement-breakpoint
-- Only groups in a batch are indexed by it: leasing a queued group adds an entry and no longer
-- removes one from the run of NULLs of the queued groups.
DROP INDEX `groups_by_batch`;
--> statement-breakpoint
CREATE INDEX `groups_by_batch` ON `groups` (`batch_id`) WHERE "groups"."batch_id" IS NOT NULL;
