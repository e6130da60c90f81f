//! Callsign's client engine: offline-first, never loses a task, ends up with the server's key.
//!
//! - [`store`]: the local SQLite store (tasks with `key` NULL while provisional, the outbox, the
//!   change cursor, settings). A local create is one transaction: task row + outbox row.
//! - [`plan`], [`fold`], [`outbox_state`], [`backoff`]: the pure decisions (what to send, where an
//!   edit goes, how a row moves, how long to wait), table-tested.
//! - [`pass`] and [`sync_loop`]: the I/O that executes them; one loop per data dir, guarded by
//!   the [`lock`].
//! - [`Engine`]: the API the desktop app and the CLI call.
//!
//! **Local inbox.** With no project and no default (no server yet) a capture goes to the
//! reserved project `INBOX` (`callsign_core::LOCAL_PROJECT`; the server refuses it as a
//! prefix). Its rows are held: `Store::open_rows` never offers them and the plan skips them,
//! until `Engine::send_inbox` or `Engine::set_project` rewrites the unsent create to a server
//! project.
//!
//! The rest of the engine is documented where it lives: what an answer must be to be believed
//! ([`verify`], [`client`]), getting a refused task unstuck (`store::fix`, [`reason`]), the
//! undo journal ([`undo`]), the counts and status (`status.rs`), and reconnecting
//! ([`sync_loop`], [`netwatch`]).
#![forbid(unsafe_code)]

pub mod backoff;
pub mod client;
pub mod clock;
mod engine;
mod error;
pub mod events;
pub mod fold;
pub mod lock;
pub mod model;
pub mod netwatch;
pub mod outbox_state;
pub mod pass;
pub mod paths;
pub mod plan;
pub mod projects;
pub mod reason;
pub mod settings;
pub mod standup;
mod status;
pub mod store;
pub mod sync_loop;
pub mod undo;
pub mod verify;
pub mod witness;

// Straight from the engine's modules: re-exported by `engine`, they would have it import the
// modules that import it.
pub use callsign_import::plan::Report as ImportReport;
pub use callsign_import::Format as ImportFormat;
pub use engine::drain::LoginReport;
pub use engine::git::{Commit, CommitReport, KnownPrefixes};
pub use engine::grammar::matches_filter;
pub use engine::import_file::{Clash as ImportClash, ImportOutcome, ImportProgress, ImportRequest};
pub use engine::team::JoinReport;
pub use engine::{Engine, NewTaskInput, Options};
pub use error::{Error, Result};
pub use events::{Event, SyncStatus};
pub use model::{LocalTask, Sort, SyncState};
pub use settings::{Settings, Token};
pub use store::{ImportQueued, ImportTask, TaskFilter, TaskQuery};
pub use undo::{UndoKind, Undone, UndoneChange};
