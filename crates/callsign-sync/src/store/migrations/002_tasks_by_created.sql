-- Callsign client store, version 2. Never edit a shipped migration: add the next file.

-- A listing is in capture order (`ORDER BY created_at, rowid`); this index gives that order
-- without sorting every task on each listing (the index's entries end in the rowid).
CREATE INDEX tasks_by_created ON tasks (created_at);
