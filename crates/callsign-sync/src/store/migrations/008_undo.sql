-- Callsign client store, version 8. Never edit a shipped migration: add the next file.

-- The undo journal (callsign_sync::undo): each local change a person made on this device, written
-- in the transaction of the change itself, with the patch that reverts it (JSON TaskPatch: the
-- previous values of exactly the fields it set, `project` for a move, `status: deleted` for a
-- capture). One command is one `step` (an import: many rows); `undo` applies the newest step's
-- reverts as new local changes and deletes its rows in one transaction. Server changes are never
-- written here. A task removed from this device takes its entries with it.
CREATE TABLE undo_journal (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    step   INTEGER NOT NULL CHECK (step > 0),
    uuid   TEXT NOT NULL REFERENCES tasks (uuid) ON DELETE CASCADE,
    kind   TEXT NOT NULL CHECK (kind IN ('create', 'import', 'edit', 'complete', 'delete',
               'reopen', 'annotate', 'resolve', 'move')),
    at     TEXT NOT NULL,
    revert TEXT NOT NULL CHECK (json_valid(revert) AND revert <> '{}')
) STRICT;
CREATE INDEX undo_journal_by_step ON undo_journal (step, id);
CREATE INDEX undo_journal_by_task ON undo_journal (uuid);
