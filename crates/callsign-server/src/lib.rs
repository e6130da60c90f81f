//! Callsign's sync server: hands out `PREFIX-N` keys that are never duplicated, never skipped
//! by a failure and never lost (DESIGN.md sections 1-4).
//!
//! Layout: the server stores through the seam `callsign_storage` (backends:
//! `callsign_storage_sqlite`, the embedded default, and `callsign_storage_postgres`; the one
//! place that picks one is [`AppState::open`]); [`protocol`] runs the two-phase create and
//! update on it, [`reaper`] settles what crashes left pending, [`api`] is the HTTP surface,
//! [`feed`] holds change requests until a change, [`taskwarrior`] serves Taskwarrior's sync.
//! [`commands`] are the command line's admin commands; `main.rs` only parses and dispatches.
#![forbid(unsafe_code)]

pub mod api;
pub mod checkins;
pub mod crash;
pub mod cursor;
pub mod error;
pub mod feed;
pub mod metrics;
pub mod protocol;
pub mod reaper;
pub mod recovery;
pub mod serve;
pub mod state;
pub mod taskwarrior;
pub mod throttle;
pub mod tokens;

pub use api::router;
pub use state::{
    open_alloc, open_taskwarrior, AppState, Config, Inner, StartError, DEFAULT_COALESCE_BATCHES,
};
