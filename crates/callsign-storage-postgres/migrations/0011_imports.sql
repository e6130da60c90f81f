-- Imported tasks (`callsign import`, issue 42), as SQLite's migrations/0016_imports.sql: the key
-- each had in its tracker keeps naming it. `key` is the origin key as the resolver looks it up
-- (Callsign's spelling of a key in its grammar, else upper-cased: `#12`); `prefix` is its prefix
-- when it is in the grammar, which no new project may then take. Rows are never deleted (G1);
-- a key another task holds stays with it (`ON CONFLICT DO NOTHING`).
CREATE TABLE origins (
    account_id  bigint NOT NULL REFERENCES accounts(id),
    key         text NOT NULL CHECK (length(key) >= 1),
    task_uuid   uuid NOT NULL,
    prefix      text CHECK (prefix = upper(prefix) AND length(prefix) BETWEEN 2 AND 10),
    PRIMARY KEY (account_id, key),
    -- Recorded in the commit that keys the task, so its reservation stays.
    FOREIGN KEY (account_id, task_uuid) REFERENCES tasks(account_id, uuid)
);
CREATE INDEX origins_by_prefix ON origins (account_id, prefix) WHERE prefix IS NOT NULL;
-- Numbers an import with kept numbers passed over (its tracker never had them, or they are yet
-- to come in the same import): below the counter, held by no task, and not lost to a rollback.
-- A number bound later leaves this table.
CREATE TABLE skipped (
    project_id  bigint NOT NULL REFERENCES projects(id),
    scope       text NOT NULL,
    number      bigint NOT NULL CHECK (number >= 1),
    PRIMARY KEY (project_id, scope, number)
);
