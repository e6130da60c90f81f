-- Callsign client store, version 7. Never edit a shipped migration: add the next file.

-- Values a later edit of the same field replaced on the server while their device had not seen
-- it (a JSON array of callsign_core::merge::Conflict, oldest first), as the server reports them.
ALTER TABLE tasks ADD COLUMN conflicts TEXT NOT NULL DEFAULT '[]';
