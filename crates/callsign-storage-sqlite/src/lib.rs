//! The embedded default backend of the Callsign server: SQLite files in a data dir.
//!
//! - [`alloc`]: the allocation database (`callsign.sqlite3`; accounts, tokens, projects,
//!   counters, idempotency slots, keys, the change feed), written by one thread that commits
//!   concurrent jobs together, and [`alloc::backend::SqliteAlloc`], the seam's `AllocStore` on it.
//! - [`tasks`]: the task store, one TaskChampion replica per account
//!   (`accounts/<id>/taskchampion.sqlite3`) in a bounded pool owned by one worker thread.
//! - [`taskwarrior`]: the links to Taskwarrior and their sync chains (`taskwarrior.sqlite3`).
//! - [`datadir`]: what is checked before a data dir is served; [`wal`]: the thread that
//!   checkpoints every file's WAL off the commit path; [`files`]: the process's open files.
//!
//! [`open`] is how the server opens a data dir.
//!
//! In the data dir:
//!
//! ```text
//! callsign.sqlite3                     the allocation database (migrations/*.sql): accounts,
//!                                      members, tokens, invites, projects (and every prefix
//!                                      each had), counters, task reservations, keys, slots
//!                                      (purged past the window), the change feed, the window
//! accounts/<id>/taskchampion.sqlite3   that account's tasks (TaskChampion 3's own file)
//! taskwarrior.sqlite3                  Taskwarrior's links and sync chains
//! server.lock                          held by the serving process: one server per data dir
//! members.revoked                      rewritten by the admin CLI when it removes a member
//! ```
//!
//! Each database has its `-wal` and `-shm` beside it while it is open; a WAL grows to about
//! [`alloc::WAL_CHECKPOINT_PAGES`] pages (≈ 40 MiB) under load and is emptied once its file is
//! at rest ([`wal::AT_REST`]). Tasks carry Taskwarrior's own properties and the UDAs Callsign
//! adds (`callsign_storage::model`), so Taskwarrior reads a replica as its own.
#![forbid(unsafe_code)]

pub mod alloc;
pub mod backup;
pub mod datadir;
pub mod files;
mod inflight;
pub mod tasks;
pub mod taskwarrior;
pub mod wal;

use std::path::PathBuf;

/// Why a data dir could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot create data dir {0}: {1}")]
    DataDir(PathBuf, std::io::Error),
    #[error(transparent)]
    Db(#[from] alloc::DbError),
    #[error(transparent)]
    Refused(#[from] datadir::DataDirError),
    #[error("cannot start the task store: {0}")]
    Store(std::io::Error),
    #[error("cannot start the WAL checkpoint thread: {0}")]
    Checkpointer(std::io::Error),
}

/// A data dir, open: both stores on it, and the allocation database's handle (its group
/// commits for `/metrics`; tests look inside it).
pub struct Opened {
    pub alloc: alloc::backend::SqliteAlloc,
    pub tasks: tasks::TaskStore,
    pub db: alloc::Db,
}

/// Opens the data dir `dir` as the server serves it: creates it if missing (private to its
/// user), starts the WAL checkpoint thread, opens and migrates the allocation database
/// (refusing a data dir whose database does not know its replicas, [`datadir`]) and starts the
/// task store's worker with `settings`.
pub fn open(dir: &std::path::Path, settings: tasks::Settings) -> Result<Opened, OpenError> {
    datadir::create_private_dir(dir).map_err(|e| OpenError::DataDir(dir.to_owned(), e))?;
    let checkpointer = wal::Checkpointer::start().map_err(OpenError::Checkpointer)?;
    let db = datadir::open_allocation_db(dir, Some(checkpointer.clone()))?;
    let instance = db.read_blocking(alloc::meta::instance_id)?;
    let tasks = tasks::TaskStore::start(dir.to_owned(), instance, checkpointer, settings)
        .map_err(OpenError::Store)?;
    Ok(Opened {
        alloc: alloc::backend::SqliteAlloc::new(db.clone()),
        tasks,
        db,
    })
}
