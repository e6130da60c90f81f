-- Recovery after a rollback (docs/RECOVERY.md): while a project has a row here, nothing takes
-- a number from its counters (a restored database's counters may be behind keys devices hold).
CREATE TABLE recovering (
    project_id  BIGINT PRIMARY KEY REFERENCES projects(id),
    since       BIGINT NOT NULL,
    reason      TEXT NOT NULL CHECK (reason IN ('restore', 'declared'))
);
-- Every rollback declared or restored, newest last: a device whose token the rolled-back
-- database no longer knows is told why.
CREATE TABLE rollbacks (
    id        BIGSERIAL PRIMARY KEY,
    at        BIGINT NOT NULL,
    reason    TEXT NOT NULL CHECK (reason IN ('restore', 'declared')),
    taken_at  BIGINT
);
