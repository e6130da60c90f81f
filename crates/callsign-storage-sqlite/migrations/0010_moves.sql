-- Moves (issue 22): a moved task's old keys stay in `keys` with current = 0 and still name it;
-- a task's previous keys are read by task.
CREATE INDEX keys_by_task ON keys (account_id, task_uuid);
