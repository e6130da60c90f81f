//! The allocation database (SQLite, WAL, `synchronous=FULL`).
//!
//! Writes go through one writer thread that commits concurrent jobs together (group commit):
//! it takes every job waiting in its queue, runs each inside its own SAVEPOINT of one
//! transaction, commits once, and only then answers the jobs. A job that fails rolls back its
//! savepoint alone; a failed COMMIT fails every job of that batch, and none of their effects
//! (numbers included) survive. So a caller that got `Ok` knows its effects are durable.
pub mod accounts;
pub mod changes;
pub mod slots;

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};
use rusqlite_migration::{Migrations, M};
use tokio::sync::{mpsc, oneshot};

pub use accounts::{AccountId, NewAccount};
pub use changes::ChangeRow;
pub use slots::{KeyRow, Slot, SlotState};

/// The most jobs one group commit takes.
const MAX_GROUP: usize = 512;

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("database migration: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    #[error("database writer stopped")]
    WriterGone,
    #[error("group commit failed: {0}")]
    CommitFailed(String),
}

pub type Result<T> = std::result::Result<T, DbError>;

fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        M::up(include_str!("../../migrations/0001_init.sql")),
        M::up(include_str!(
            "../../migrations/0002_slots_in_arrival_order.sql"
        )),
        M::up(include_str!(
            "../../migrations/0003_pending_slots_by_task.sql"
        )),
    ])
}

fn open_conn(path: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

type Finish = Box<dyn FnOnce(Option<&DbError>) + Send>;
type Job = Box<dyn FnOnce(&Connection) -> Finish + Send>;

/// Handle to the allocation database. Cheap to clone.
#[derive(Clone)]
pub struct Db {
    jobs: mpsc::UnboundedSender<Job>,
    readers: Arc<Mutex<Vec<Connection>>>,
    path: Arc<std::path::PathBuf>,
}

impl Db {
    /// Opens (creating and migrating) `path`, and starts the writer thread.
    pub fn open(path: &Path) -> Result<Db> {
        let mut conn = open_conn(path)?;
        migrations().to_latest(&mut conn)?;
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("alloc-db-writer".into())
            .spawn(move || writer_loop(conn, rx))
            .map_err(|e| DbError::CommitFailed(e.to_string()))?;
        Ok(Db {
            jobs: tx,
            readers: Arc::new(Mutex::new(Vec::new())),
            path: Arc::new(path.to_owned()),
        })
    }

    /// Runs `f` inside the next group commit; answers after the commit is durable.
    pub async fn write<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |conn: &Connection| {
            let outcome = run_in_savepoint(conn, f);
            Box::new(move |commit_err: Option<&DbError>| {
                let res = match (outcome, commit_err) {
                    (Ok(r), None) => Ok(r),
                    (Ok(_), Some(e)) => Err(DbError::CommitFailed(e.to_string())),
                    (Err(e), _) => Err(e),
                };
                let _ = tx.send(res);
            })
        });
        self.jobs.send(job).map_err(|_| DbError::WriterGone)?;
        rx.await.map_err(|_| DbError::WriterGone)?
    }

    /// Runs a read-only `f` on a pooled connection in a blocking thread.
    pub async fn read<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R> + Send + 'static,
    {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.read_blocking(f))
            .await
            .map_err(|e| DbError::CommitFailed(e.to_string()))?
    }

    pub fn read_blocking<R>(&self, f: impl FnOnce(&Connection) -> Result<R>) -> Result<R> {
        let conn = self.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match conn {
            Some(c) => c,
            None => open_conn(&self.path)?,
        };
        let res = f(&conn);
        self.readers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(conn);
        res
    }
}

pub fn run_in_savepoint<R>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<R>,
) -> Result<R> {
    let run = |sql: &str| conn.prepare_cached(sql)?.execute([]);
    run("SAVEPOINT job")?;
    match f(conn) {
        Ok(r) => {
            run("RELEASE job")?;
            Ok(r)
        }
        Err(e) => {
            run("ROLLBACK TO job")?;
            run("RELEASE job")?;
            Err(e)
        }
    }
}

fn writer_loop(conn: Connection, mut rx: mpsc::UnboundedReceiver<Job>) {
    while let Some(first) = rx.blocking_recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            // The jobs never ran; dropping them answers each caller with an error.
            tracing::error!(error = %e, jobs = batch.len(), "could not begin a write transaction");
            drop(batch);
            continue;
        }
        let finishers: Vec<Finish> = batch.into_iter().map(|job| job(&conn)).collect();
        let commit = conn.execute_batch("COMMIT").map_err(DbError::from);
        if commit.is_err() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        let err = commit.err();
        for finish in finishers {
            finish(err.as_ref());
        }
    }
}

/// Milliseconds since the Unix epoch, the time unit of every column.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn failed_job_rolls_back_alone_and_others_commit() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("a.sqlite3")).unwrap();
        let ok = db.write(|c| {
            c.execute(
                "INSERT INTO accounts (name, created_at) VALUES ('a', 0)",
                [],
            )?;
            Ok(())
        });
        let bad = db.write(|c| {
            c.execute(
                "INSERT INTO accounts (name, created_at) VALUES ('b', 0)",
                [],
            )?;
            c.execute(
                "INSERT INTO accounts (id, name, created_at) VALUES (1, 'dup', 0)",
                [],
            )?;
            Ok(())
        });
        let (ok, bad) = tokio::join!(ok, bad);
        ok.unwrap();
        assert!(bad.is_err());
        let names: Vec<String> = db
            .read(|c| {
                let mut st = c.prepare("SELECT name FROM accounts ORDER BY id")?;
                let rows = st.query_map([], |r| r.get(0))?;
                Ok(rows.collect::<rusqlite::Result<_>>()?)
            })
            .await
            .unwrap();
        assert_eq!(names, vec!["a".to_string()]);
    }

    #[test]
    fn slots_keep_every_row_through_the_arrival_order_migration() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = open_conn(&dir.path().join("a.sqlite3")).unwrap();
        migrations().to_version(&mut c, 1).unwrap();
        c.execute_batch(
            "INSERT INTO accounts (id, name, created_at) VALUES (1, 'a', 0);
             INSERT INTO slots (account_id, idem_key, fingerprint, op, task_uuid, request, state,
                                number, response_status, response_body, created_at, last_seen_at)
             VALUES (1, 'k2', x'01', 'create', 'u2', '{}', 'committed', 7, 201, '{\"n\":7}', 2, 2),
                    (1, 'k1', x'02', 'update', 'u1', '{}', 'pending', NULL, NULL, NULL, 1, 1);",
        )
        .unwrap();
        let before = dump_slots(&c);
        migrations().to_latest(&mut c).unwrap();
        assert_eq!(dump_slots(&c), before);
        let dup = c.execute(
            "INSERT INTO slots (account_id, idem_key, fingerprint, op, task_uuid, request, state,
                                created_at, last_seen_at)
             VALUES (1, 'k1', x'03', 'create', 'u3', '{}', 'pending', 3, 3)",
            [],
        );
        assert!(
            dup.is_err(),
            "an idempotency key is still unique per account"
        );
        let pending: i64 = c
            .query_row(
                "SELECT count(*) FROM slots WHERE state = 'pending'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(pending, 1);
    }

    fn dump_slots(c: &Connection) -> Vec<String> {
        let mut st = c
            .prepare(
                "SELECT account_id, idem_key, hex(fingerprint), op, task_uuid, request, state,
                        number, response_status, response_body, attempts, created_at,
                        last_seen_at, settled_at
                 FROM slots ORDER BY idem_key",
            )
            .unwrap();
        let rows = st
            .query_map([], |r| {
                (0..14)
                    .map(|i| {
                        r.get::<_, rusqlite::types::Value>(i)
                            .map(|v| format!("{v:?}"))
                    })
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .map(|v| v.join("|"))
            })
            .unwrap();
        rows.collect::<rusqlite::Result<_>>().unwrap()
    }
}
