-- Devices bring back their keys after a rollback (docs/RECOVERY.md).
-- When each token last reached the server (hour grain), and last brought back its keys: a
-- recovery ends once every device active before the backup is back.
ALTER TABLE tokens ADD COLUMN last_seen_at INTEGER;
ALTER TABLE tokens ADD COLUMN witnessed_at INTEGER;
-- A key a device brought back that another task holds: the held key stays with its task; the
-- report names both.
CREATE TABLE clashes (
    account_id  INTEGER NOT NULL,
    key         TEXT NOT NULL,
    held_by     TEXT NOT NULL,
    claimed_by  TEXT NOT NULL,
    at          INTEGER NOT NULL,
    PRIMARY KEY (account_id, key, claimed_by)
) WITHOUT ROWID;
-- A rollback the server found by itself ('detected'): a device's cursor, or a node's own
-- commits, past the end of the change feed.
CREATE TABLE recovering_v2 (
    project_id  INTEGER PRIMARY KEY REFERENCES projects(id),
    since       INTEGER NOT NULL,
    reason      TEXT NOT NULL CHECK (reason IN ('restore', 'declared', 'detected'))
);
INSERT INTO recovering_v2 (project_id, since, reason) SELECT project_id, since, reason FROM recovering;
DROP TABLE recovering;
ALTER TABLE recovering_v2 RENAME TO recovering;
CREATE TABLE rollbacks_v2 (
    id        INTEGER PRIMARY KEY,
    at        INTEGER NOT NULL,
    reason    TEXT NOT NULL CHECK (reason IN ('restore', 'declared', 'detected')),
    taken_at  INTEGER
);
INSERT INTO rollbacks_v2 (id, at, reason, taken_at) SELECT id, at, reason, taken_at FROM rollbacks;
DROP TABLE rollbacks;
ALTER TABLE rollbacks_v2 RENAME TO rollbacks;
