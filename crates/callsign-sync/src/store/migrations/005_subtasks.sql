-- Callsign client store, version 5. Never edit a shipped migration: add the next file.

-- A subtask's parent (its UUID), as captured here or as the server reports it.
ALTER TABLE tasks ADD COLUMN parent TEXT;
CREATE INDEX tasks_by_parent ON tasks (parent) WHERE parent IS NOT NULL;
