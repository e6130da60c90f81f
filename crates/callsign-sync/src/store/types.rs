//! The store's public value types: what its callers pass in and get back. A leaf: it imports
//! nothing from the rest of the store, so `store` re-exports these without importing from a
//! module that imports it back.
use serde::Serialize;
use uuid::Uuid;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskFilter {
    /// Include completed and deleted tasks.
    pub all: bool,
}

/// A [`TaskFilter`] narrowed further.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskQuery {
    /// Include completed and deleted tasks.
    pub all: bool,
    /// Only tasks of this project (prefix, any case).
    pub project: Option<String>,
    /// Only tasks whose description, notes, key or origin key contain this text
    /// (case-insensitive).
    pub text: Option<String>,
    /// Only the subtasks of this task.
    pub parent: Option<Uuid>,
}

/// What the sync indicator counts, in tasks (not outbox rows), so the header and the rows say
/// the same thing: each task is counted once, by what its open rows say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Tasks with a change queued to be sent and none on the wire.
    pub pending: u64,
    /// Tasks with a request on the wire.
    pub in_flight: u64,
    /// Tasks with a request the server refused (they wait for the user).
    pub failed: u64,
    /// Tasks in the local inbox (kept on this device until sent to a server project).
    pub local: u64,
    /// Of the pending, those a server recovering from a rollback keeps unnumbered.
    pub recovering: u64,
}

/// What [`Store::discard`](super::Store::discard) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discarded {
    /// The server never accepted anything of the task: it is gone from this device.
    Removed,
    /// The task keeps its key; its refused changes were dropped (the server's values come back
    /// with the next pull, which starts over).
    Changes(usize),
}

/// What [`Store::send_inbox`](super::Store::send_inbox) did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SentInbox {
    /// Tasks now queued for the server project.
    pub moved: Vec<Uuid>,
    /// Deleted inbox tasks, removed instead of being sent.
    pub removed: Vec<Uuid>,
}

/// One task of an import ([`crate::Engine::import`]), as the importer derived it from its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportTask {
    /// Derived from the source (the same item always gets the same UUID), so importing a file
    /// again finds its tasks here and queues none of them twice.
    pub uuid: Uuid,
    /// Derived from the source too: a request lost on the way is replayed, not made twice.
    pub idempotency_key: String,
    /// The create as it is sent. `parent` is the parent's UUID: an earlier task of the same
    /// import, or a task already here.
    pub body: callsign_core::dto::NewTask,
}

/// What an import queued.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ImportQueued {
    /// Tasks saved here and queued for the server.
    pub queued: usize,
    /// Tasks already here (their UUID names a task on this device): left as they are.
    pub present: usize,
}
