//! The engine's one error type. Callers match on variants, never on messages; every message is
//! written for a person (the CLI prints it as is).
use callsign_core::Problem;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A task reference matched no local task.
    #[error("no task matches {0:?}")]
    NotFound(String),
    /// A UUID prefix that matches more than one task.
    #[error("{0:?} matches more than one task; type more of the UUID or use the key")]
    Ambiguous(String),
    /// Input the engine refuses before it ever reaches the outbox.
    #[error("{0}")]
    Invalid(String),
    /// A task with open subtasks cannot be completed; `open` names them (keys, or provisional
    /// short ids).
    #[error("{task} has open subtasks ({}); complete or delete them first", .open.join(", "))]
    Blocked { task: String, open: Vec<String> },
    /// `undo` with nothing journaled on this device (no local change since the data dir was
    /// made, or every one already undone or pruned).
    #[error("nothing to undo on this device")]
    NothingToUndo,
    /// Nothing to sync with: no server URL or token saved.
    #[error("not logged in: run `callsign login --server URL --token TOKEN` first")]
    NotLoggedIn,
    /// The server could not be reached (connection refused, timeout, connection dropped).
    #[error("cannot reach the server at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// The server answered with an error for the request as a whole.
    #[error("the server refused the request: {0}")]
    Server(Problem),
    /// The server answered something that is not the API's JSON.
    #[error("unexpected answer from the server: {0}")]
    Protocol(String),
    /// The server answered, but the answer cannot be taken as true: it does not match the
    /// request, breaks the field rules, or leads somewhere else (a redirect off the origin, a
    /// change feed that never advances). Nothing of it was stored; the requests stay queued.
    #[error("the server's answer was not trusted: {0}")]
    Untrusted(String),
    /// The server's answer was larger than the client reads.
    #[error("the server's answer is larger than {} MiB; it was not read", .limit / (1024 * 1024))]
    AnswerTooLarge { limit: usize },
    #[error("local database: {0}")]
    Db(#[from] rusqlite::Error),
    #[error("local database migration: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// Another live process (the desktop app, or another `callsign sync`) owns the data dir's
    /// sync loop; this process only queues.
    #[error("another process{} is syncing this data dir", .pid.map(|p| format!(" (PID {p})")).unwrap_or_default())]
    Busy { pid: Option<u32> },
    /// Waited for the outbox to drain and it did not.
    #[error("{pending} change(s) still queued: {reason}")]
    StillQueued { pending: u64, reason: String },
    /// The sync loop is not running (it was stopped, or never started).
    #[error("the sync loop is not running")]
    LoopStopped,
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// A stable code for the kind of error, for callers that show it (the desktop app's
    /// `{code, message}`) or explain it ([`crate::reason::sync_problem`]). The server's own code
    /// when it refused the request.
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotFound(_) => "not_found",
            Error::Ambiguous(_) => "ambiguous",
            Error::Invalid(_) => "invalid",
            Error::Blocked { .. } => "task_blocked",
            Error::NothingToUndo => "nothing_to_undo",
            Error::NotLoggedIn => "not_logged_in",
            Error::Unreachable { .. } => "unreachable",
            Error::Server(p) => p.code.as_str(),
            Error::Protocol(_) => "protocol",
            Error::Untrusted(_) => "untrusted",
            Error::AnswerTooLarge { .. } => "answer_too_large",
            Error::Busy { .. } => "busy",
            Error::StillQueued { .. } => "still_queued",
            Error::LoopStopped => "loop_stopped",
            Error::Db(_) | Error::Migration(_) | Error::Io { .. } => "storage",
        }
    }

    /// Worth trying again later without any change by the user.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Unreachable { .. } => true,
            Error::Server(p) => p.code.is_transient() || p.status == 429,
            _ => false,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
