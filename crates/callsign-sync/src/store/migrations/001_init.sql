-- Callsign client store, version 1. Never edit a shipped migration: add the next file.

-- Tasks as this device knows them. `key`/`number` are NULL while the task is provisional; only a
-- server answer ever sets them, and a key names at most one task here too.
CREATE TABLE tasks (
    uuid        TEXT PRIMARY KEY NOT NULL,
    key         TEXT UNIQUE,
    project     TEXT NOT NULL,
    number      INTEGER CHECK (number IS NULL OR number > 0),
    description TEXT NOT NULL,
    notes       TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL CHECK (status IN ('pending', 'completed', 'deleted')),
    tags        TEXT NOT NULL DEFAULT '[]',
    created_at  TEXT NOT NULL,
    modified_at TEXT NOT NULL,
    CHECK ((key IS NULL) = (number IS NULL))
) STRICT;

-- Requests waiting for (or done with) the server, in capture order (id). Times are Unix ms.
CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    uuid            TEXT NOT NULL REFERENCES tasks (uuid),
    op              TEXT NOT NULL CHECK (op IN ('create', 'update')),
    idempotency_key TEXT NOT NULL UNIQUE,
    body            TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'in_progress', 'failed', 'done')),
    sent            INTEGER NOT NULL DEFAULT 0 CHECK (sent IN (0, 1)),
    try_count       INTEGER NOT NULL DEFAULT 0 CHECK (try_count >= 0),
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    last_touch      INTEGER NOT NULL,
    next_attempt_at INTEGER
) STRICT;
CREATE INDEX outbox_by_state ON outbox (state, id);
CREATE INDEX outbox_by_task ON outbox (uuid, id);

-- A sent request is frozen: same body, same idempotency key, until it fails and the user retries.
CREATE TRIGGER outbox_frozen
BEFORE UPDATE OF uuid, op, body, idempotency_key ON outbox
WHEN OLD.sent = 1 AND OLD.state <> 'failed'
BEGIN
    SELECT RAISE(ABORT, 'outbox row is frozen: its request has been sent');
END;

-- A failed row goes back to pending only under a new idempotency key.
CREATE TRIGGER outbox_retry_needs_new_key
BEFORE UPDATE OF state ON outbox
WHEN OLD.state = 'failed' AND NEW.state = 'pending' AND NEW.idempotency_key = OLD.idempotency_key
BEGIN
    SELECT RAISE(ABORT, 'a failed request is retried under a new idempotency key');
END;

-- Nothing leaves done.
CREATE TRIGGER outbox_done_is_final
BEFORE UPDATE OF state ON outbox
WHEN OLD.state = 'done' AND NEW.state <> 'done'
BEGIN
    SELECT RAISE(ABORT, 'a done outbox row is final');
END;

-- Settings (server URL, device name, default project) and sync state (change cursor, last sync).
CREATE TABLE kv (
    name  TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) STRICT;
