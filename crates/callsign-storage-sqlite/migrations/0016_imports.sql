-- Imported tasks (`callsign import`, issue 42): the key each had in its tracker keeps naming it.
-- `key` is the origin key as the resolver looks it up (Callsign's spelling of a key in its
-- grammar, else upper-cased: `#12`); `prefix` is its prefix when it is in the grammar, which
-- no new project may then take. Rows are never deleted (G1).
CREATE TABLE origins (
    account_id  INTEGER NOT NULL,
    key         TEXT NOT NULL,
    task_uuid   TEXT NOT NULL,
    prefix      TEXT,
    PRIMARY KEY (account_id, key)
) WITHOUT ROWID;
CREATE INDEX origins_by_prefix ON origins (account_id, prefix) WHERE prefix IS NOT NULL;
-- Numbers an import with kept numbers passed over (its tracker never had them, or they are
-- yet to come in the same import): below the counter, held by no task, and not lost to a
-- rollback. A number bound later leaves this table.
CREATE TABLE skipped (
    project_id  INTEGER NOT NULL REFERENCES projects(id),
    scope       TEXT NOT NULL,
    number      INTEGER NOT NULL,
    PRIMARY KEY (project_id, scope, number)
) WITHOUT ROWID;
