//! The PostgreSQL backend: several stateless server nodes in front of one PostgreSQL.
//!
//! [`alloc::PgAlloc`] is the allocation store, [`tasks::PgTasks`] the task store, both in the
//! same database (the schema of the connection's `search_path`). Migrations are embedded
//! (`migrations/*.sql`) and applied at start by whichever node comes first, under an advisory
//! lock. Transactions run under READ COMMITTED: the per-project counter row and the per-account
//! feed counter are bumped with row locks held to COMMIT, which is all the ordering the key
//! protocol needs.
//!
//! Nodes share nothing but the database. [`alloc`] claims an idempotency key as a lease on its
//! slot row, and phase 2's commit locks the account row first: it numbers the change feed
//! (`accounts.feed_last`, so a cursor never skips an entry that commits later) and orders every
//! lock the commit takes, so commits never deadlock. Phase 1 and the commit are set-based
//! (`alloc/batch.rs`): each statement covers the whole batch (`= ANY`, `UNNEST`), statements
//! that need no answer from each other are pipelined, and a project's counter moves once per
//! batch by the count it numbers, so a batch costs a few dozen statements whatever its size.
//! Moves, renames, members, recovery, the keys devices bring back after a rollback
//! (`alloc/witness.rs`) and imported tasks (`alloc/imports.rs`) have modules of their own.
//!
//! [`tasks`] writes each call in its own transaction under a per-account advisory lock, before
//! phase 2's, as on SQLite, so the reaper still settles a slot whose task was written when a
//! node dies between the two. Nodes hear each other's commits and member removals through
//! `LISTEN`/`NOTIFY` ([`listen`]); [`taskwarrior`] and the replica's TaskChampion `Storage`
//! (`replica.rs`) serve Taskwarrior's sync. With no writer thread to group-commit, a node's
//! concurrent single requests of one account are batched above the seam (`callsign-server`'s
//! `protocol::coalesce`). `callsign_storage_conformance` holds the checks this backend passes
//! as SQLite's does.
#![forbid(unsafe_code)]
pub mod alloc;
pub mod durability;
pub mod error;
pub mod listen;
mod replica;
pub mod tasks;
pub mod taskwarrior;

pub use deadpool_postgres::Pool;
use deadpool_postgres::{Manager, ManagerConfig, RecyclingMethod};
use tokio_postgres::NoTls;

use callsign_storage::now_ms;

use crate::error::{DbError, Result};

/// The migrations, in order; each runs once, in one transaction.
const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_alloc", include_str!("../migrations/0001_alloc.sql")),
    ("0002_tasks", include_str!("../migrations/0002_tasks.sql")),
    (
        "0003_subtasks",
        include_str!("../migrations/0003_subtasks.sql"),
    ),
    ("0004_moves", include_str!("../migrations/0004_moves.sql")),
    (
        "0005_prefix_renames",
        include_str!("../migrations/0005_prefix_renames.sql"),
    ),
    (
        "0006_taskwarrior",
        include_str!("../migrations/0006_taskwarrior.sql"),
    ),
    (
        "0007_members",
        include_str!("../migrations/0007_members.sql"),
    ),
    (
        "0008_invites",
        include_str!("../migrations/0008_invites.sql"),
    ),
    (
        "0009_recovery",
        include_str!("../migrations/0009_recovery.sql"),
    ),
    (
        "0010_witnesses",
        include_str!("../migrations/0010_witnesses.sql"),
    ),
    (
        "0011_imports",
        include_str!("../migrations/0011_imports.sql"),
    ),
];

/// The advisory lock the migrations run under (any fixed number; "CALLSIGN" in ASCII).
const MIGRATION_LOCK: i64 = 0x4341_4c4c_5349_474e;

/// Connects to `url` with a pool of `size` connections, migrates the schema, and returns the
/// two stores on it.
pub async fn open(
    url: &str,
    size: usize,
    lease: std::time::Duration,
) -> Result<(alloc::PgAlloc, tasks::PgTasks)> {
    let pool = pool(url, size)?;
    migrate(&pool).await?;
    Ok((
        alloc::PgAlloc::new(pool.clone(), lease),
        tasks::PgTasks::new(pool),
    ))
}

/// A pool of at most `size` connections to `url` (`postgres://user@host:port/db`, with
/// `?options=-c search_path=…` to use another schema than `public`).
pub fn pool(url: &str, size: usize) -> Result<Pool> {
    let config: tokio_postgres::Config = url
        .parse()
        .map_err(|e: tokio_postgres::Error| DbError::Pool(format!("bad database URL: {e}")))?;
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size)
        .build()
        .map_err(|e| DbError::Pool(e.to_string()))
}

/// Applies the migrations not applied yet, and makes the server's identity row (random
/// instance id and cursor key) if there is none. Safe to run from several nodes at once.
pub async fn migrate(pool: &Pool) -> Result<()> {
    migrate_first(pool, MIGRATIONS.len()).await
}

/// [`migrate`] with only the first `n` migrations (a test of what a later one does to data).
pub async fn migrate_first(pool: &Pool, n: usize) -> Result<()> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS callsign_migrations (
             name       text PRIMARY KEY,
             applied_at bigint NOT NULL
         )",
    )
    .await?;
    for (name, sql) in &MIGRATIONS[..n.min(MIGRATIONS.len())] {
        let done = tx
            .query_opt("SELECT 1 FROM callsign_migrations WHERE name = $1", &[name])
            .await?
            .is_some();
        if !done {
            tx.batch_execute(sql).await?;
            tx.execute(
                "INSERT INTO callsign_migrations (name, applied_at) VALUES ($1, $2)",
                &[name, &now_ms()],
            )
            .await?;
            tracing::info!(migration = name, "database migrated");
        }
    }
    let instance: [u8; 16] = rand::random();
    let cursor: [u8; 32] = rand::random();
    tx.execute(
        "INSERT INTO server_meta (id, instance_id, cursor_key) VALUES (1, $1, $2)
         ON CONFLICT (id) DO NOTHING",
        &[&instance.as_slice(), &cursor.as_slice()],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
