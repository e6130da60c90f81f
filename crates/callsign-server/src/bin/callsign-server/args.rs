//! What several commands take: where the data lives, a member's name and role, a window.
use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use callsign_core::{MemberName, Role};
use callsign_storage::Database;
use clap::Args;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum RoleArg {
    Owner,
    Member,
}

impl From<RoleArg> for Role {
    fn from(r: RoleArg) -> Role {
        match r {
            RoleArg::Owner => Role::Owner,
            RoleArg::Member => Role::Member,
        }
    }
}

pub fn parse_member(s: &str) -> Result<MemberName, String> {
    MemberName::parse(s.trim().trim_start_matches('@')).map_err(|e| e.to_string())
}

/// `--idempotency-window`: `auto` or a duration.
#[derive(Clone, Copy, Debug)]
pub struct WindowArg(pub Option<Duration>);

pub fn parse_window(s: &str) -> Result<WindowArg, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(WindowArg(None));
    }
    humantime::parse_duration(s)
        .map(|d| WindowArg(Some(d)))
        .map_err(|e| format!("{e}: expected `auto` or a duration such as 24h"))
}

/// Where the data lives: `--database` (or `CALLSIGN_DATABASE_URL`), or `--data-dir` for the
/// embedded SQLite default.
#[derive(Args, Clone, Debug)]
pub struct DatabaseArg {
    /// The embedded SQLite database's directory (the same as `--database sqlite:DIR`).
    #[arg(long, env = "CALLSIGN_SERVER_DATA_DIR", conflicts_with = "database")]
    data_dir: Option<PathBuf>,
    /// `sqlite:<data-dir>` or `postgres://user@host:port/db`.
    #[arg(long, env = "CALLSIGN_DATABASE_URL", value_parser = Database::parse)]
    database: Option<Database>,
}

impl DatabaseArg {
    pub fn get(self) -> anyhow::Result<Database> {
        match (self.database, self.data_dir) {
            (Some(d), _) => Ok(d),
            (None, Some(dir)) => Ok(Database::Sqlite(dir)),
            (None, None) => bail!(
                "say where the data lives: --data-dir DIR (embedded SQLite) or --database \
                 postgres://user@host:port/db"
            ),
        }
    }
}
