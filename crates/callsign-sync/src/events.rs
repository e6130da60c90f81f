//! What the engine tells its subscribers (the desktop app forwards these to the UI).
//!
//! Delivered over a `tokio::sync::broadcast` channel: a slow subscriber may miss events
//! (`RecvError::Lagged`) and should then re-read the list and [`crate::Engine::status`], which
//! are always current.
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A task was created or edited here, or the server's answer or change feed changed it
    /// (its key may have arrived).
    TaskChanged {
        uuid: Uuid,
    },
    /// A task is gone from this device: the user discarded it before the server ever had it.
    TaskRemoved {
        uuid: Uuid,
    },
    SyncStatus(SyncStatus),
}

/// The sync indicator's facts. The counts are of tasks, each counted once (see
/// [`crate::store::Counts`]), so they agree with what the task rows say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SyncStatus {
    /// `None` until a sync has been attempted; then whether the server answered the last time.
    pub online: Option<bool>,
    /// Tasks with a change waiting to be sent (none of it on the wire).
    pub pending: u64,
    /// Tasks with a request on the wire.
    pub in_flight: u64,
    /// Tasks with a request the server refused (they wait for the user to fix or discard).
    pub failed: u64,
    /// Tasks in the local inbox, kept on this device until sent to a server project.
    pub local: u64,
    /// Of the pending, those a server recovering from a rollback keeps unnumbered for now
    /// (docs/RECOVERY.md).
    pub recovering: u64,
    /// When the loop will try again, if it is waiting.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The last pass's error, as the engine worded it (the technical detail).
    pub last_error: Option<String>,
    /// The same error in plain words, with what it means for the user's tasks.
    pub problem: Option<Plain>,
    pub last_sync_at: Option<DateTime<Utc>>,
}

/// Something to tell a person: a plain sentence, and the technical detail one click away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plain {
    pub summary: String,
    pub detail: String,
}
