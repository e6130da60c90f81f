-- Recovery after a rollback (docs/RECOVERY.md): while a project has a row here, nothing takes
-- a number from its counters (a restored backup's counters may be behind keys devices hold).
CREATE TABLE recovering (
    project_id  INTEGER PRIMARY KEY REFERENCES projects(id),
    since       INTEGER NOT NULL,
    reason      TEXT NOT NULL CHECK (reason IN ('restore', 'declared'))
);
