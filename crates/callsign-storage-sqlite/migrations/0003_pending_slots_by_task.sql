-- Only the reaper looks slots up by task, and only pending ones. Indexing every slot by its
-- random task UUID dirtied one more random index page per create in each group commit (13 of
-- 45 WAL frames in a phase-1 commit of 10 creates at 20,000 tasks); the partial index holds
-- only the slots in flight, a page or two.
DROP INDEX slots_by_task;
CREATE INDEX slots_pending_by_task ON slots(account_id, task_uuid) WHERE state = 'pending';
