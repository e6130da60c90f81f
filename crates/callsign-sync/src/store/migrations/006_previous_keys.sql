-- Callsign client store, version 6. Never edit a shipped migration: add the next file.

-- The keys a task had before its current one (a JSON array, oldest first), as the server
-- reports them: each still names the task here.
ALTER TABLE tasks ADD COLUMN previous_keys TEXT NOT NULL DEFAULT '[]';
