-- Recovery after a rollback (docs/RECOVERY.md): while a project has a row here, nothing takes
-- a number from its counters (a restored backup's counters may be behind keys devices hold).
CREATE TABLE recovering (
    project_id  INTEGER PRIMARY KEY REFERENCES projects(id),
    since       INTEGER NOT NULL,
    reason      TEXT NOT NULL CHECK (reason IN ('restore', 'declared'))
);
-- Every rollback declared or restored, newest last: a device whose token the rolled-back
-- database no longer knows is told why.
CREATE TABLE rollbacks (
    id        INTEGER PRIMARY KEY,
    at        INTEGER NOT NULL,
    reason    TEXT NOT NULL CHECK (reason IN ('restore', 'declared')),
    -- When the restored backup was taken (ms), if known.
    taken_at  INTEGER
);
