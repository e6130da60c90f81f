-- Callsign client store, version 11. Never edit a shipped migration: add the next file.

-- The git commits linked to a task (`callsign_core::dto::CommitLink` as a JSON list, oldest
-- `at` first, ties by hash): the server's list, or this device's while its edits wait (a local
-- link shows at once). Empty for a task with none and for every task stored before.
ALTER TABLE tasks ADD COLUMN commits TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(commits));
