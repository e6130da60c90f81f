//! The one error type of the storage seam. It carries no database driver's types: a backend
//! turns its driver's errors into these variants (their message kept as text) at the seam, so
//! the server above can log them and answer `503` without knowing which database it runs on.
use crate::AccountId;

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The database refused or failed a statement, or could not be reached (the driver's
    /// message, naming the backend).
    #[error("{0}")]
    Database(String),
    /// The schema could not be brought up to date.
    #[error("database migration: {0}")]
    Migration(String),
    /// The thread that writes the allocation database has stopped.
    #[error("database writer stopped")]
    WriterGone,
    /// A write transaction did not commit; none of its effects (numbers included) remain.
    #[error("group commit failed: {0}")]
    CommitFailed(String),
    /// The database file is damaged; the server will not serve from it.
    #[error(
        "the database failed SQLite's integrity check (PRAGMA quick_check): {0}; the server \
         will not use it. Restore it from a backup (docs/OPERATIONS.md, \"When the server \
         refuses to start\")"
    )]
    Corrupt(String),
    /// The task store failed (the backend's message).
    #[error("task store: {0}")]
    Backend(String),
    /// The task store's worker has stopped.
    #[error("task store worker stopped")]
    Gone,
    /// The replica records another allocation database or account.
    #[error(
        "{path} belongs to account {found_account} of another allocation database (or to \
         another account), not to account {account} of this one; refusing to serve it \
         (docs/OPERATIONS.md, \"When the server refuses to start\")"
    )]
    Foreign {
        path: String,
        account: AccountId,
        found_account: AccountId,
    },
    /// A replica could not be opened because the process has no file descriptor left.
    #[error(
        "cannot open the replica of account {account}: the server is out of open files \
         ({open} of {limit} in use; {replicas} replicas open, {closed} others just closed \
         to free some). It answers 503 until descriptors free up. Raise the open-file limit \
         (LimitNOFILE=) or lower --max-connections / --max-open-replicas \
         (docs/OPERATIONS.md, \"Open files and replicas\")"
    )]
    OutOfFiles {
        account: AccountId,
        open: String,
        limit: String,
        replicas: usize,
        closed: usize,
    },
    /// The backend does not offer this.
    #[error("{0}")]
    Unsupported(&'static str),
    /// The project is recovering from a rollback (a restored backup): it numbers nothing until
    /// its recovery ends. Nothing was numbered; the slot stays pending (retry later).
    #[error(
        "project {prefix} is recovering from a backup: it numbers no task until recovery ends"
    )]
    Recovering { prefix: String },
}

impl Error {
    /// Whether the error is the task store's (else the allocation store's).
    pub fn is_task_store(&self) -> bool {
        matches!(
            self,
            Error::Backend(_)
                | Error::Gone
                | Error::Foreign { .. }
                | Error::OutOfFiles { .. }
                | Error::Unsupported(_)
        )
    }
}

pub type Result<T> = std::result::Result<T, Error>;
