-- Renaming a project's prefix (docs/STRUCTURE.md): a move of the prefix, as SQLite's
-- migrations/0011. Numbers stay; every key the project's tasks had under an earlier prefix
-- keeps naming its task.
--
-- Every prefix a project of the account ever had, each for one project only (G1); a project
-- may take back one of its own.
CREATE TABLE prefixes (
    account_id  bigint NOT NULL REFERENCES accounts(id),
    prefix      text NOT NULL CHECK (prefix = upper(prefix) AND length(prefix) BETWEEN 2 AND 10),
    project_id  bigint NOT NULL REFERENCES projects(id),
    PRIMARY KEY (account_id, prefix),
    UNIQUE (account_id, prefix, project_id)
);
INSERT INTO prefixes (account_id, prefix, project_id) SELECT account_id, prefix, id FROM projects;

-- A project's prefix by epoch: 0 is the one it was made with, each rename adds the next.
ALTER TABLE projects ADD COLUMN epoch bigint NOT NULL DEFAULT 0 CHECK (epoch >= 0);
CREATE TABLE prefix_epochs (
    project_id  bigint NOT NULL REFERENCES projects(id),
    epoch       bigint NOT NULL CHECK (epoch >= 0),
    account_id  bigint NOT NULL,
    prefix      text NOT NULL,
    at          bigint NOT NULL,
    PRIMARY KEY (project_id, epoch),
    FOREIGN KEY (account_id, prefix, project_id) REFERENCES prefixes (account_id, prefix, project_id)
);
INSERT INTO prefix_epochs (project_id, epoch, account_id, prefix, at)
SELECT id, 0, account_id, prefix, created_at FROM projects;

-- The epochs a key row was in force: from `epoch` (its project's when assigned) to
-- `until_epoch` (its project's when a move retired it; NULL while current). Its names are the
-- project's prefixes of those epochs.
ALTER TABLE keys ADD COLUMN epoch bigint NOT NULL DEFAULT 0;
ALTER TABLE keys ADD COLUMN until_epoch bigint CHECK (until_epoch IS NULL OR until_epoch >= epoch);
UPDATE keys SET until_epoch = 0 WHERE NOT current;
-- Every insert names the epoch (a forgotten one would give a new key old names).
ALTER TABLE keys ALTER COLUMN epoch DROP DEFAULT;
