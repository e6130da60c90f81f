//! The local SQLite store: one file per data dir, WAL, migrations embedded at compile time.
//!
//! Every write that must survive together happens in one transaction (a local create writes the
//! task row and its outbox row at once), with `synchronous = FULL`, so a task the user has seen
//! is on disk. Several processes may open the same store (the app and the CLI); SQLite's locking
//! and a busy timeout serialise them.
//!
//! A local edit's transaction is opened in `edit`, which calls the others inside it (`tasks`,
//! `outbox`, `undo`, `fix`); none of them imports `edit`. An import's transaction is opened in
//! `import`, which writes each task as `edit` writes a capture. The types callers see are in `types`,
//! which imports nothing of the store.
mod edit;
mod fix;
mod import;
mod listing;
mod outbox;
mod reconcile;
mod tasks;
mod types;
mod undo;

use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension};
use rusqlite_migration::{Migrations, M};

use crate::error::Result;

pub use types::{Counts, Discarded, ImportQueued, ImportTask, SentInbox, TaskFilter, TaskQuery};

static MIGRATIONS: LazyLock<Migrations<'static>> = LazyLock::new(|| {
    Migrations::new(vec![
        M::up(include_str!("migrations/001_init.sql")),
        M::up(include_str!("migrations/002_tasks_by_created.sql")),
        M::up(include_str!("migrations/003_failures_and_inbox.sql")),
        M::up(include_str!("migrations/004_due_priority.sql")),
        M::up(include_str!("migrations/005_subtasks.sql")),
        M::up(include_str!("migrations/006_previous_keys.sql")),
        M::up(include_str!("migrations/007_conflicts.sql")),
        M::up(include_str!("migrations/008_undo.sql")),
        M::up(include_str!("migrations/009_team.sql")),
        M::up(include_str!("migrations/010_origin.sql")),
        M::up(include_str!("migrations/011_commits.sql")),
    ])
});

pub const DB_FILE: &str = "callsign.sqlite3";

/// The cursor of the server's change feed.
pub const CURSOR: &str = "sync.cursor";

/// [`Store::write_stamp`]: (`data_version`, `total_changes`).
pub type WriteStamp = (i64, u64);

pub struct Store {
    conn: Connection,
}

impl Store {
    pub fn open(data_dir: &Path) -> Result<Store> {
        let conn = Connection::open(data_dir.join(DB_FILE))?;
        Self::init(conn)
    }

    #[cfg(test)]
    pub fn in_memory() -> Result<Store> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(mut conn: Connection) -> Result<Store> {
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", true)?;
        MIGRATIONS.to_latest(&mut conn)?;
        Ok(Store { conn })
    }

    /// Changes whenever another connection (another process) commits to the database.
    pub fn data_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .pragma_query_value(None, "data_version", |r| r.get(0))?)
    }

    /// Changes whenever the database may have: after a write through this connection (the
    /// engine's, the sync loop's) or a commit by another. Equal stamps: nothing was written in
    /// between, so what was read from the tables still holds.
    pub fn write_stamp(&self) -> Result<WriteStamp> {
        Ok((self.data_version()?, self.conn.total_changes()))
    }

    pub fn get(&self, name: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM kv WHERE name = ?1", [name], |r| r.get(0))
            .optional()?)
    }

    pub fn set(&self, name: &str, value: Option<&str>) -> Result<()> {
        match value {
            Some(v) => self.conn.execute(
                "INSERT INTO kv (name, value) VALUES (?1, ?2)
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                [name, v],
            )?,
            None => self
                .conn
                .execute("DELETE FROM kv WHERE name = ?1", [name])?,
        };
        Ok(())
    }
}

#[cfg(test)]
mod origin_tests;
#[cfg(test)]
mod outbox_model;
#[cfg(test)]
mod tests;
