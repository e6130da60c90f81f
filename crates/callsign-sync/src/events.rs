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
    SyncStatus(SyncStatus),
}

/// The sync indicator's facts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SyncStatus {
    /// `None` until a sync has been attempted; then whether the server answered the last time.
    pub online: Option<bool>,
    /// Outbox rows waiting to be sent.
    pub pending: u64,
    /// Outbox rows sent and awaiting an answer.
    pub in_flight: u64,
    /// Outbox rows the server refused (they wait for the user).
    pub failed: u64,
    /// When the loop will try again, if it is waiting.
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub last_sync_at: Option<DateTime<Utc>>,
}
