-- Callsign client store, version 3. Never edit a shipped migration: add the next file.

-- The server's stable error code of a refused (or waiting) request, beside its message, so the
-- engine can say in plain words what to do about it without reading the message.
ALTER TABLE outbox ADD COLUMN error_code TEXT;

-- Tasks of the local inbox (project INBOX, no key) are held on the device: the queue and the
-- counts look them up by project.
CREATE INDEX tasks_by_project ON tasks (project) WHERE key IS NULL;

-- The sync indicator counts tasks, not rows: each state's rows grouped by task, read from this
-- index alone (no table rows, no sort).
CREATE INDEX outbox_by_state_task ON outbox (state, uuid);
