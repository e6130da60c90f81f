-- The change feed keeps one row per task, its latest change (issue 27). A cursor never needs an
-- older one: a page returns each task at its latest change after the cursor, so a row that a
-- later row of the same task supersedes changes no answer. An update now replaces its task's row
-- (a new, higher seq: AUTOINCREMENT never reuses one), so the feed grows with tasks, not edits,
-- and a first pull reads one row per task.
DELETE FROM changes WHERE seq NOT IN (SELECT MAX(seq) FROM changes GROUP BY account_id, task_uuid);
CREATE UNIQUE INDEX changes_one_per_task ON changes (account_id, task_uuid);
