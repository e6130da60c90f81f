-- Slots past the idempotency window are purged by the reaper (issue 27). What a retry of a
-- purged key still needs stays here for the window's evidence period (issue 28): when the slot
-- was made, and its retry span if it was retried, so a late retry is still seen as evidence and
-- the p99 still counts the purged slot.
CREATE TABLE purged_slots (
    account_id  INTEGER NOT NULL,
    idem_key    TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    span_ms     INTEGER,
    purged_at   INTEGER NOT NULL,
    PRIMARY KEY (account_id, idem_key)
) WITHOUT ROWID;
CREATE INDEX purged_slots_by_time ON purged_slots (purged_at);
