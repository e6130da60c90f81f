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
