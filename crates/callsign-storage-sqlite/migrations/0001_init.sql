-- Allocation database: who may talk to us, which numbers are taken, and what each
-- idempotency key has answered. Task content lives in TaskChampion.
CREATE TABLE accounts (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

-- Bearer tokens, one per device, stored as SHA-256 of the token.
CREATE TABLE tokens (
    id          INTEGER PRIMARY KEY,
    account_id  INTEGER NOT NULL REFERENCES accounts(id),
    token_hash  BLOB NOT NULL UNIQUE,
    device      TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

CREATE TABLE projects (
    id          INTEGER PRIMARY KEY,
    account_id  INTEGER NOT NULL REFERENCES accounts(id),
    name        TEXT NOT NULL,
    prefix      TEXT NOT NULL CHECK (prefix = upper(prefix) AND length(prefix) BETWEEN 2 AND 10),
    created_at  INTEGER NOT NULL,
    UNIQUE (account_id, prefix)
);

-- One counter per (project, scope). Scope '' numbers a project's tasks; another scope
-- (e.g. 'sub:<parent uuid>') can number subtasks later without a schema change.
-- `last` is bumped with INSERT .. ON CONFLICT DO UPDATE SET last = last + 1 RETURNING last.
CREATE TABLE counters (
    project_id  INTEGER NOT NULL REFERENCES projects(id),
    scope       TEXT NOT NULL,
    last        INTEGER NOT NULL CHECK (last >= 1),
    PRIMARY KEY (project_id, scope)
) WITHOUT ROWID;

-- A task UUID this account asked to create: reserved in phase 1 with the fingerprint of the
-- creating request, before any number exists.
CREATE TABLE tasks (
    account_id  INTEGER NOT NULL REFERENCES accounts(id),
    uuid        TEXT NOT NULL,
    project_id  INTEGER NOT NULL REFERENCES projects(id),
    fingerprint BLOB NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (account_id, uuid)
) WITHOUT ROWID;

-- Every number ever handed out. Rows are never deleted, so a number is never reused (G1).
-- `current` marks the task's one current key; `in_store` records that the key was written
-- onto the TaskChampion task as the property `key`.
CREATE TABLE keys (
    account_id  INTEGER NOT NULL,
    project_id  INTEGER NOT NULL REFERENCES projects(id),
    scope       TEXT NOT NULL DEFAULT '',
    number      INTEGER NOT NULL CHECK (number >= 1),
    task_uuid   TEXT NOT NULL,
    current     INTEGER NOT NULL DEFAULT 1 CHECK (current IN (0, 1)),
    in_store    INTEGER NOT NULL DEFAULT 0 CHECK (in_store IN (0, 1)),
    assigned_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, project_id, scope, number),
    FOREIGN KEY (account_id, task_uuid) REFERENCES tasks(account_id, uuid)
);
CREATE UNIQUE INDEX keys_one_current ON keys(account_id, task_uuid) WHERE current = 1;
CREATE INDEX keys_not_in_store ON keys(assigned_at) WHERE in_store = 0;

-- Idempotency slots. Pending slots have no number and no response (phase 1); a slot becomes
-- committed in the same transaction that assigns its number (phase 2) or settles it (reaper).
CREATE TABLE slots (
    account_id      INTEGER NOT NULL REFERENCES accounts(id),
    idem_key        TEXT NOT NULL,
    fingerprint     BLOB NOT NULL,
    op              TEXT NOT NULL CHECK (op IN ('create', 'update')),
    task_uuid       TEXT NOT NULL,
    request         TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'committed', 'failed')),
    number          INTEGER,
    response_status INTEGER,
    response_body   TEXT,
    attempts        INTEGER NOT NULL DEFAULT 1,
    created_at      INTEGER NOT NULL,
    last_seen_at    INTEGER NOT NULL,
    settled_at      INTEGER,
    PRIMARY KEY (account_id, idem_key),
    CHECK (state <> 'pending' OR (number IS NULL AND response_status IS NULL)),
    CHECK (state <> 'committed' OR response_status IS NOT NULL)
) WITHOUT ROWID;
CREATE INDEX slots_pending ON slots(created_at) WHERE state = 'pending';
CREATE INDEX slots_by_task ON slots(account_id, task_uuid);

-- Change feed: one row per committed create or update, in commit order.
CREATE TABLE changes (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id  INTEGER NOT NULL,
    task_uuid   TEXT NOT NULL,
    at          INTEGER NOT NULL
);
CREATE INDEX changes_by_account ON changes(account_id, seq);
