//! The idempotency window in force and the retries that bear on it (migration 0006); the
//! decision itself is `callsign_storage::window`.
use rusqlite::{params, Connection, OptionalExtension};

use super::Result;
use callsign_storage::window::{is_late, Basis, Evidence, Window};

/// The window in force, if one was stored.
pub fn in_force(conn: &Connection) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT window_ms FROM idempotency_window WHERE id = 1")?
        .query_row([], |r| r.get(0))
        .optional()?)
}

/// Stores the window in force.
pub fn set(conn: &Connection, w: &Window, now: i64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO idempotency_window (id, window_ms, basis, changed_at) VALUES (1, ?1, ?2, ?3)
         ON CONFLICT (id) DO UPDATE SET window_ms = excluded.window_ms, basis = excluded.basis,
             changed_at = excluded.changed_at",
    )?
    .execute(params![w.ms, w.basis.as_str(), now])?;
    Ok(())
}

/// A retry of a slot made at `created_at` arrives `now`: if it came late for the window in
/// force (`expired`: after its slot had failed), it is recorded as evidence.
pub fn note_retry(conn: &Connection, created_at: i64, now: i64, expired: bool) -> Result<()> {
    let span = now.saturating_sub(created_at).max(0);
    let late = expired || in_force(conn)?.is_some_and(|w| is_late(span, w));
    if late {
        conn.prepare_cached("INSERT INTO late_retries (at, span_ms) VALUES (?1, ?2)")?
            .execute(params![now, span])?;
    }
    Ok(())
}

/// What the server has seen since `since` (all in ms), for `callsign_storage::window::derive`.
pub fn evidence(conn: &Connection, since: i64, now: i64) -> Result<Evidence> {
    let spans_ms = super::slots::retry_spans(conn, since)?;
    let mut st = conn.prepare_cached("SELECT span_ms FROM late_retries WHERE at >= ?1")?;
    let late_ms = st
        .query_map([since], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    let oldest: Option<i64> = conn
        .prepare_cached("SELECT MIN(created_at) FROM slots WHERE state = 'pending'")?
        .query_row([], |r| r.get(0))?;
    Ok(Evidence {
        spans_ms,
        late_ms,
        oldest_pending_ms: oldest.map(|at| now.saturating_sub(at).max(0)),
    })
}

/// Drops late retries older than the period (`before`); returns how many.
pub fn forget_late(conn: &Connection, before: i64) -> Result<usize> {
    Ok(conn
        .prepare_cached("DELETE FROM late_retries WHERE at < ?1")?
        .execute([before])?)
}

/// The stored basis, for the log and `/metrics` after a restart.
pub fn basis(conn: &Connection) -> Result<Option<Basis>> {
    let s: Option<String> = conn
        .prepare_cached("SELECT basis FROM idempotency_window WHERE id = 1")?
        .query_row([], |r| r.get(0))
        .optional()?;
    Ok(s.and_then(|s| Basis::parse(&s)))
}
