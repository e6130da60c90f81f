-- Teams: who created a task (the server stamps it from the creating token's member; null until
-- the server has answered, and for tasks from before teams) and who it is assigned to.
ALTER TABLE tasks ADD COLUMN created_by TEXT;
ALTER TABLE tasks ADD COLUMN assignee TEXT;
CREATE INDEX tasks_by_assignee ON tasks(assignee) WHERE assignee IS NOT NULL;
