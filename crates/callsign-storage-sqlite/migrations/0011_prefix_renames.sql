-- Renaming a project's prefix (docs/STRUCTURE.md): a move of the prefix. Numbers stay; every
-- key the project's tasks had under an earlier prefix keeps naming its task.
--
-- `prefixes` holds every prefix a project of the account ever had, each for one project only:
-- a key names at most one task, ever (G1), so a prefix once used is never another project's,
-- though a project may take back one of its own.
CREATE TABLE prefixes (
    account_id  INTEGER NOT NULL REFERENCES accounts(id),
    prefix      TEXT NOT NULL CHECK (prefix = upper(prefix) AND length(prefix) BETWEEN 2 AND 10),
    project_id  INTEGER NOT NULL REFERENCES projects(id),
    PRIMARY KEY (account_id, prefix),
    UNIQUE (account_id, prefix, project_id)
) WITHOUT ROWID;
INSERT INTO prefixes (account_id, prefix, project_id) SELECT account_id, prefix, id FROM projects;

-- A project's prefix by epoch: 0 is the one it was made with, each rename adds the next
-- (`projects.epoch` is the latest, whose prefix is `projects.prefix`).
ALTER TABLE projects ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0 CHECK (epoch >= 0);
CREATE TABLE prefix_epochs (
    project_id  INTEGER NOT NULL REFERENCES projects(id),
    epoch       INTEGER NOT NULL CHECK (epoch >= 0),
    account_id  INTEGER NOT NULL,
    prefix      TEXT NOT NULL,
    at          INTEGER NOT NULL,
    PRIMARY KEY (project_id, epoch),
    FOREIGN KEY (account_id, prefix, project_id) REFERENCES prefixes (account_id, prefix, project_id)
) WITHOUT ROWID;
INSERT INTO prefix_epochs (project_id, epoch, account_id, prefix, at)
SELECT id, 0, account_id, prefix, created_at FROM projects;

-- The epochs a key row was in force: from `epoch` (its project's when it was assigned) to
-- `until_epoch` (its project's when a move retired it; NULL while current). Its names are the
-- project's prefixes of those epochs: SYN-42 and, after SYN became SYX, SYX-42; a task numbered
-- after the rename was never SYN-anything, and a task moved away before it never SYX-anything.
ALTER TABLE keys ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE keys ADD COLUMN until_epoch INTEGER CHECK (until_epoch IS NULL OR until_epoch >= epoch);
UPDATE keys SET until_epoch = 0 WHERE current = 0;
