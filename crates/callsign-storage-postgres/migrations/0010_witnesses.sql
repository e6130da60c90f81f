-- Devices bring back their keys after a rollback (docs/RECOVERY.md), as SQLite's
-- migrations/0015_witnesses.sql.
-- When each token last reached the server (hour grain), and last brought back its keys: a
-- recovery ends once every device active before the backup is back.
ALTER TABLE tokens ADD COLUMN last_seen_at bigint;
ALTER TABLE tokens ADD COLUMN witnessed_at bigint;
-- A key a witness bound: its place among the keys the commit bound (the device's order, oldest
-- first). Keys bound together share assigned_at; this orders them as SQLite's rowid does. NULL
-- for every key numbered here.
ALTER TABLE keys ADD COLUMN bound_rank integer;
-- A key a device brought back that another task holds: the held key stays with its task; the
-- report names both.
CREATE TABLE clashes (
    account_id  bigint NOT NULL REFERENCES accounts(id),
    key         text NOT NULL,
    held_by     uuid NOT NULL,
    claimed_by  uuid NOT NULL,
    at          bigint NOT NULL,
    PRIMARY KEY (account_id, key, claimed_by)
);
-- A rollback the server found by itself ('detected'): a device's cursor, or a node's own
-- commits, past the end of the change feed.
ALTER TABLE recovering DROP CONSTRAINT recovering_reason_check,
    ADD CONSTRAINT recovering_reason_check CHECK (reason IN ('restore', 'declared', 'detected'));
ALTER TABLE rollbacks DROP CONSTRAINT rollbacks_reason_check,
    ADD CONSTRAINT rollbacks_reason_check CHECK (reason IN ('restore', 'declared', 'detected'));
