-- The idempotency window in force (issue 28), derived by the reaper from the retries the server
-- observes and stored here, so every node and every restart uses the same one.
CREATE TABLE idempotency_window (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    window_ms   INTEGER NOT NULL CHECK (window_ms >= 0),
    basis       TEXT NOT NULL,
    changed_at  INTEGER NOT NULL
);

-- Retries that came late for the window in force when they arrived (in its second half, or
-- after their slot had failed): the evidence a too-short window hides from the p99.
CREATE TABLE late_retries (
    id          INTEGER PRIMARY KEY,
    at          INTEGER NOT NULL,
    span_ms     INTEGER NOT NULL
);
CREATE INDEX late_retries_by_time ON late_retries (at);
