//! The sync status as stored: the loop (or a CLI `sync`) records each pass's outcome in the
//! store's `kv` table, so any process on the data dir (`callsign status` beside the app) reads
//! the same facts the loop's events carry.
//!
//! One truth for the counts: `Store::counts` counts tasks (pending, in flight, failed, local
//! inbox) from the same outbox facts each row's marker comes from, so the indicator and the
//! list never disagree. A status event follows every local write, and during a pass at most
//! every 250 ms while answers are recorded, and at its end. `crate::reason::sync_problem` words
//! the last error for people; the raw message stays as its detail.
use chrono::{DateTime, Utc};

use crate::clock::from_ms;
use crate::error::{Error, Result};
use crate::events::SyncStatus;
use crate::reason::sync_problem;
use crate::store::Store;

const ONLINE: &str = "sync.online";
const LAST_ERROR: &str = "sync.last_error";
const LAST_ERROR_CODE: &str = "sync.last_error_code";
const LAST_SYNC_AT: &str = "sync.last_sync_at";

pub fn record_success(store: &Store, now: DateTime<Utc>) -> Result<()> {
    store.set(ONLINE, Some("1"))?;
    store.set(LAST_ERROR, None)?;
    store.set(LAST_ERROR_CODE, None)?;
    store.set(LAST_SYNC_AT, Some(&now.to_rfc3339()))
}

/// The server answered a request mid-pass: it is reachable, and the error the last pass
/// recorded no longer holds (the indicator says so at once, not when the pass ends).
/// Writes only when that changes something: it runs once per batch, and each write is a
/// synced transaction of its own.
pub fn record_answered(store: &Store) -> Result<()> {
    if store.get(ONLINE)?.as_deref() == Some("1") && store.get(LAST_ERROR)?.is_none() {
        return Ok(());
    }
    store.set(ONLINE, Some("1"))?;
    store.set(LAST_ERROR, None)?;
    store.set(LAST_ERROR_CODE, None)
}

/// A pass that failed: offline if the server could not be reached; the message either way.
pub fn record_failure(store: &Store, e: &Error) -> Result<()> {
    let online = !matches!(e, Error::Unreachable { .. });
    store.set(ONLINE, Some(if online { "1" } else { "0" }))?;
    store.set(LAST_ERROR, Some(&e.to_string()))?;
    store.set(LAST_ERROR_CODE, Some(e.code()))
}

pub fn read(store: &Store) -> Result<SyncStatus> {
    let counts = store.counts()?;
    Ok(SyncStatus {
        pending: counts.pending,
        in_flight: counts.in_flight,
        failed: counts.failed,
        local: counts.local,
        recovering: counts.recovering,
        next_attempt_at: store.next_attempt_at()?.map(from_ms),
        ..read_connection(store)?
    })
}

/// The recorded facts of the last pass (online, its error, when it last succeeded) without the
/// counts and the next attempt, which read the outbox.
pub fn read_connection(store: &Store) -> Result<SyncStatus> {
    let last_error = store.get(LAST_ERROR)?;
    let problem = match &last_error {
        Some(detail) => {
            let code = store.get(LAST_ERROR_CODE)?;
            Some(sync_problem(code.as_deref(), detail))
        }
        None => None,
    };
    Ok(SyncStatus {
        online: store.get(ONLINE)?.map(|v| v == "1"),
        last_error,
        problem,
        last_sync_at: store
            .get(LAST_SYNC_AT)?
            .and_then(|s| DateTime::parse_from_rfc3339(&s).ok())
            .map(|t| t.with_timezone(&Utc)),
        ..SyncStatus::default()
    })
}
