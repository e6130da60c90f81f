-- Subtasks (issue 22): a task reserved with a parent takes its number from the counter whose
-- scope is the parent's key path (`42` for SYN-42.1), when it is committed. The parent is
-- kept on the reservation; children are found by it.
ALTER TABLE tasks ADD COLUMN parent_uuid uuid;
CREATE INDEX tasks_by_parent ON tasks (account_id, parent_uuid) WHERE parent_uuid IS NOT NULL;
