//! Callsign's domain types. Pure: no I/O, no clocks, no randomness.
//!
//! - [`Prefix`] and [`TaskKey`]: the short, speakable key `SYN-42`.
//! - [`alike`]: prefixes a person would mishear (`SIN` beside `SYN`), said or spelled.
//! - [`TaskRef`]: what a user may type to name a task (a UUID or a key, leniently).
//! - [`dto`]: the JSON bodies of the HTTP API v1, shared by server and client.
//! - [`when`]: due dates as people type them, and [`Priority`].
//! - [`grammar`], [`filter`] and [`modify`]: Taskwarrior's words (`+tag`, `#PFX`, `due:fri`), the
//!   filter the CLI and the app share, and `modify`'s changes.
//! - [`git`]: keys where the work happens: the commit-message grammar (`Fixes SYN-42`), branch
//!   names from keys and keys from branch names.
//! - [`merge`]: concurrent edits merged field by field, with conflicts kept.
//! - [`ErrorCode`] and [`Problem`]: stable machine codes and RFC 9457 problem bodies.
#![forbid(unsafe_code)]

pub mod alike;
pub mod dto;
mod error;
pub mod filter;
pub mod git;
pub mod grammar;
pub mod invite;
mod key;
mod member;
pub mod merge;
pub mod modify;
mod prefix;
mod task_ref;
pub mod validate;
pub mod when;

pub use error::{ErrorCode, Problem};
pub use key::{scope_of, KeyError, TaskKey, MAX_DEPTH};
pub use member::{mention, MemberName, MemberNameError, Role};
pub use prefix::{Prefix, PrefixError};
pub use task_ref::{RefError, TaskRef};
pub use when::{Priority, WhenError};

/// The largest task number a key may carry (SQLite's INTEGER is a signed 64-bit value).
pub const MAX_NUMBER: u64 = i64::MAX as u64;

/// The local inbox's prefix. A task captured with no project and no default (no server yet)
/// goes here and stays on the device until the user sends it to a server project; a server
/// never has a project with this prefix (it refuses to create one).
pub const LOCAL_PROJECT: &str = "INBOX";
