-- Slots were a WITHOUT ROWID table keyed by the idempotency key, which is random: the rows
-- (request and answer bodies included, ~1 KB) sat in key order, so a group commit of N new
-- slots dirtied ~N leaf pages spread over the whole table, and the WAL wrote every one of them
-- again in phase 2. As a rowid table the rows are in arrival order (a batch's slots share a
-- few pages) and only the small (account_id, idem_key) index takes random inserts.
CREATE TABLE slots_by_arrival (
    id              INTEGER PRIMARY KEY,
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
    UNIQUE (account_id, idem_key),
    CHECK (state <> 'pending' OR (number IS NULL AND response_status IS NULL)),
    CHECK (state <> 'committed' OR response_status IS NOT NULL)
);
INSERT INTO slots_by_arrival (account_id, idem_key, fingerprint, op, task_uuid, request, state,
                              number, response_status, response_body, attempts, created_at,
                              last_seen_at, settled_at)
    SELECT account_id, idem_key, fingerprint, op, task_uuid, request, state, number,
           response_status, response_body, attempts, created_at, last_seen_at, settled_at
    FROM slots ORDER BY created_at;
DROP TABLE slots;
ALTER TABLE slots_by_arrival RENAME TO slots;
CREATE INDEX slots_pending ON slots(created_at) WHERE state = 'pending';
CREATE INDEX slots_by_task ON slots(account_id, task_uuid);
