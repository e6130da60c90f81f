-- The allocation store on PostgreSQL: the same tables as the SQLite allocation database
-- (migrations/0001-0008), plus what several nodes need: a lease on each slot (claimed_by,
-- claimed_until) and a per-account feed counter (accounts.feed_last), bumped inside the
-- transaction that writes a change, so feed entries commit in the order of their numbers.
-- Times are milliseconds since the Unix epoch, as on SQLite.

CREATE TABLE server_meta (
    id          integer PRIMARY KEY CHECK (id = 1),
    instance_id bytea NOT NULL CHECK (length(instance_id) = 16),
    cursor_key  bytea NOT NULL CHECK (length(cursor_key) = 32),
    ready_probe bigint NOT NULL DEFAULT 0
);

CREATE TABLE accounts (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL,
    created_at  bigint NOT NULL,
    -- The last change-feed number given in this account.
    feed_last   bigint NOT NULL DEFAULT 0
);

CREATE TABLE tokens (
    id          bigserial PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts(id),
    token_hash  bytea NOT NULL UNIQUE,
    device      text NOT NULL,
    created_at  bigint NOT NULL
);

CREATE TABLE projects (
    id          bigserial PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts(id),
    -- The project's id on the wire: 1, 2, ... within its account.
    number      bigint NOT NULL CHECK (number >= 1),
    name        text NOT NULL,
    prefix      text NOT NULL CHECK (prefix = upper(prefix) AND length(prefix) BETWEEN 2 AND 10),
    created_at  bigint NOT NULL,
    UNIQUE (account_id, prefix),
    UNIQUE (account_id, number)
);

-- Counters are rows, never sequences: nextval is not rolled back, so an abort would leave a gap.
CREATE TABLE counters (
    project_id  bigint NOT NULL REFERENCES projects(id),
    scope       text NOT NULL,
    last        bigint NOT NULL CHECK (last >= 1),
    PRIMARY KEY (project_id, scope)
);

CREATE TABLE tasks (
    account_id  bigint NOT NULL REFERENCES accounts(id),
    uuid        uuid NOT NULL,
    project_id  bigint NOT NULL REFERENCES projects(id),
    fingerprint bytea NOT NULL,
    created_at  bigint NOT NULL,
    PRIMARY KEY (account_id, uuid)
);

CREATE TABLE keys (
    account_id  bigint NOT NULL,
    project_id  bigint NOT NULL REFERENCES projects(id),
    scope       text NOT NULL DEFAULT '',
    number      bigint NOT NULL CHECK (number >= 1),
    task_uuid   uuid NOT NULL,
    current     boolean NOT NULL DEFAULT true,
    in_store    boolean NOT NULL DEFAULT false,
    assigned_at bigint NOT NULL,
    PRIMARY KEY (account_id, project_id, scope, number),
    FOREIGN KEY (account_id, task_uuid) REFERENCES tasks(account_id, uuid)
);
CREATE UNIQUE INDEX keys_one_current ON keys (account_id, task_uuid) WHERE current;
CREATE INDEX keys_not_in_store ON keys (assigned_at) WHERE NOT in_store;

CREATE TABLE slots (
    id              bigserial PRIMARY KEY,
    account_id      bigint NOT NULL REFERENCES accounts(id),
    idem_key        text NOT NULL,
    fingerprint     bytea NOT NULL,
    op              text NOT NULL CHECK (op IN ('create', 'update')),
    task_uuid       uuid NOT NULL,
    request         text NOT NULL,
    state           text NOT NULL CHECK (state IN ('pending', 'committed', 'failed')),
    number          bigint,
    response_status integer,
    response_body   text,
    attempts        bigint NOT NULL DEFAULT 1,
    created_at      bigint NOT NULL,
    last_seen_at    bigint NOT NULL,
    settled_at      bigint,
    -- The node working on this slot, and until when its lease holds.
    claimed_by      text,
    claimed_until   bigint,
    UNIQUE (account_id, idem_key),
    CHECK (state <> 'pending' OR (number IS NULL AND response_status IS NULL)),
    CHECK (state <> 'committed' OR response_status IS NOT NULL)
);
CREATE INDEX slots_pending ON slots (created_at) WHERE state = 'pending';
CREATE INDEX slots_pending_by_task ON slots (account_id, task_uuid) WHERE state = 'pending';
CREATE INDEX slots_settled ON slots (created_at) WHERE state <> 'pending';
CREATE INDEX slots_retried ON slots (created_at) WHERE attempts > 1;

-- One row per task at its latest change; seq is numbered per account in the writing
-- transaction (accounts.feed_last), so a reader never sees a number before a smaller one.
CREATE TABLE changes (
    account_id  bigint NOT NULL,
    task_uuid   uuid NOT NULL,
    seq         bigint NOT NULL,
    at          bigint NOT NULL,
    PRIMARY KEY (account_id, task_uuid)
);
CREATE UNIQUE INDEX changes_by_seq ON changes (account_id, seq);

CREATE TABLE idempotency_window (
    id          integer PRIMARY KEY CHECK (id = 1),
    window_ms   bigint NOT NULL CHECK (window_ms >= 0),
    basis       text NOT NULL,
    changed_at  bigint NOT NULL
);

CREATE TABLE late_retries (
    id          bigserial PRIMARY KEY,
    at          bigint NOT NULL,
    span_ms     bigint NOT NULL
);
CREATE INDEX late_retries_by_time ON late_retries (at);

CREATE TABLE purged_slots (
    account_id  bigint NOT NULL,
    idem_key    text NOT NULL,
    created_at  bigint NOT NULL,
    span_ms     bigint,
    purged_at   bigint NOT NULL,
    PRIMARY KEY (account_id, idem_key)
);
CREATE INDEX purged_slots_by_time ON purged_slots (purged_at);
