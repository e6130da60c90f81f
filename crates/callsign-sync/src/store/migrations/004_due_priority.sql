-- Callsign client store, version 4. Never edit a shipped migration: add the next file.

-- Due date (RFC 3339 UTC, as created_at) and priority (H, M or L), as the server reports them.
ALTER TABLE tasks ADD COLUMN due TEXT;
ALTER TABLE tasks ADD COLUMN priority TEXT CHECK (priority IS NULL OR priority IN ('H', 'M', 'L'));
