//! The allocation database (SQLite, WAL, `synchronous=FULL`).
//!
//! Writes go through one writer thread that commits concurrent jobs together (group commit):
//! [`Db::write`] sends a closure to it, and it takes every job waiting in its queue, runs them
//! in one transaction, commits once, and only then answers the jobs. A job that arrives while
//! the group's jobs run joins it (until none is waiting, at most 512 jobs), so it waits for the
//! commit under way rather than the next group; under load many requests share one fsync. A job
//! that fails takes back its own effects alone; a failed COMMIT fails every job of that group,
//! and none of their effects (numbers included) survive. So a caller that got `Ok` knows its
//! effects are durable. Reads run on pooled connections of their own ([`Db::read`]).
//!
//! Jobs run optimistically, with no savepoint each: they fail only on real database errors
//! (outcomes such as "refused" are values), and a savepoint per job, or per item of a batch
//! job ([`each_item`]), made SQLite copy every page each one touched into its sub-journal. If a
//! job does fail, the whole transaction is rolled back and the group runs again *isolated*: each
//! job in its own savepoint and each item in its own, so the failure takes back only its own
//! effects, exactly as if the savepoints had been there all along. Jobs are therefore `Fn`: the
//! writer may run one twice, and only the effects of the run that commits remain.
//!
//! The writer lets the WAL grow to [`WAL_CHECKPOINT_PAGES`] before SQLite checkpoints it, and
//! hands each commit to the checkpoint thread ([`crate::wal`]). It counts its group commits and
//! the jobs in them ([`Db::group_commits`]), which the server publishes on `/metrics`.
pub mod accounts;
pub mod backend;
pub mod changes;
pub mod imports;
pub mod members;
pub mod meta;
pub mod protocol;
pub mod recovery;
pub mod renames;
pub mod slots;
pub mod window;
pub mod witness;

use std::cell::Cell;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};
use rusqlite_migration::{Migrations, M};
use tokio::sync::{mpsc, oneshot};

use crate::wal::Checkpointer;
use callsign_storage::stats::GroupCommits;

pub use accounts::{AccountId, NewAccount};
pub use changes::ChangeRow;
pub use members::{AddMember, Caller, MemberRow, NewInvite, NewMember, Redeem, RemoveMember};
pub use slots::{KeyRow, Slot, SlotState};

/// The most jobs one group commit takes.
const MAX_GROUP: usize = 512;

/// WAL pages a commit may leave before the writer checkpoints them (SQLite's default is 1,000).
/// Each create rewrites a few random index pages; the larger the WAL, the more of those
/// rewrites a checkpoint copies once instead of once each (docs/PERFORMANCE.md, change 9).
/// The WAL grows to about this many pages × 4 KiB (40 MiB).
pub const WAL_CHECKPOINT_PAGES: u32 = 10_000;

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
    #[error(
        "the database failed SQLite's integrity check (PRAGMA quick_check): {0}; the server \
         will not use it. Restore it from a backup (docs/OPERATIONS.md, \"When the server \
         refuses to start\")"
    )]
    Corrupt(String),
    #[error("project {0} is recovering from a backup: it numbers no task until recovery ends")]
    Recovering(String),
}

pub type Result<T> = std::result::Result<T, DbError>;

impl From<DbError> for callsign_storage::Error {
    fn from(e: DbError) -> Self {
        use callsign_storage::Error;
        match e {
            DbError::Sqlite(e) => Error::Database(format!("database: {e}")),
            DbError::Migration(e) => Error::Migration(e.to_string()),
            DbError::WriterGone => Error::WriterGone,
            DbError::CommitFailed(s) => Error::CommitFailed(s),
            DbError::Corrupt(s) => Error::Corrupt(s),
            DbError::Recovering(prefix) => Error::Recovering { prefix },
        }
    }
}

fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        M::up(include_str!("../../migrations/0001_init.sql")),
        M::up(include_str!(
            "../../migrations/0002_slots_in_arrival_order.sql"
        )),
        M::up(include_str!(
            "../../migrations/0003_pending_slots_by_task.sql"
        )),
        M::up(include_str!("../../migrations/0004_server_instance.sql")),
        M::up(include_str!(
            "../../migrations/0005_per_account_numbers.sql"
        )),
        M::up(include_str!("../../migrations/0006_idempotency_window.sql")),
        M::up(include_str!("../../migrations/0007_slot_purge.sql")),
        M::up(include_str!(
            "../../migrations/0008_one_change_per_task.sql"
        )),
        M::up(include_str!("../../migrations/0009_subtasks.sql")),
        M::up(include_str!("../../migrations/0010_moves.sql")),
        M::up(include_str!("../../migrations/0011_prefix_renames.sql")),
        M::up(include_str!("../../migrations/0012_members.sql")),
        M::up(include_str!("../../migrations/0013_invites.sql")),
        M::up(include_str!("../../migrations/0014_recovery.sql")),
        M::up(include_str!("../../migrations/0015_witnesses.sql")),
        M::up(include_str!("../../migrations/0016_imports.sql")),
    ])
}

/// Brings the allocation database at `path` (a restored copy, not yet in place) up to this
/// build's schema, marks every project recovering since `now` and records the restore of the
/// backup taken at `taken_at` (docs/RECOVERY.md), in one transaction, before the file is put
/// where a server would serve it.
pub fn mark_restored(
    path: &Path,
    now: i64,
    taken_at: i64,
) -> Result<Vec<callsign_storage::RecoveringRow>> {
    let mut conn = open_conn(path)?;
    quick_check(&conn)?;
    migrations().to_latest(&mut conn)?;
    let tx = conn.transaction()?;
    let reason = callsign_storage::RecoveryReason::Restore;
    let out = recovery::start(&tx, None, reason, now)?;
    recovery::record_rollback(&tx, reason, now, Some(taken_at))?;
    tx.commit()?;
    // Back to a plain file, so nothing of it stays in a -wal beside the old name.
    conn.pragma_update(None, "journal_mode", "DELETE")?;
    drop(conn);
    Ok(out)
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

/// `PRAGMA quick_check`: every page and index entry well-formed (without the slower
/// cross-check of index contents that `integrity_check` adds).
pub fn quick_check(conn: &Connection) -> Result<()> {
    let mut st = conn.prepare("PRAGMA quick_check(5)")?;
    let found: Vec<String> = st
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if found == ["ok"] {
        Ok(())
    } else {
        Err(DbError::Corrupt(found.join("; ")))
    }
}

/// A write waiting for the writer thread: its closure, the outcome of its last run, and where
/// the answer goes.
struct WriteJob<F, R> {
    f: F,
    outcome: Option<Result<R>>,
    answer: oneshot::Sender<Result<R>>,
}

trait Job: Send {
    /// Runs the closure (in a savepoint of its own when `isolated`); `false` if it failed.
    fn run(&mut self, conn: &Connection, isolated: bool) -> bool;
    /// Answers the caller once the group's COMMIT is known.
    fn finish(self: Box<Self>, commit_err: Option<&DbError>);
}

impl<F, R> Job for WriteJob<F, R>
where
    F: Fn(&Connection) -> Result<R> + Send,
    R: Send,
{
    fn run(&mut self, conn: &Connection, isolated: bool) -> bool {
        let outcome = if isolated {
            run_in_savepoint(conn, &self.f)
        } else {
            (self.f)(conn)
        };
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn finish(self: Box<Self>, commit_err: Option<&DbError>) {
        let res = match (self.outcome, commit_err) {
            (Some(Ok(r)), None) => Ok(r),
            (Some(Ok(_)), Some(e)) | (None, Some(e)) => Err(DbError::CommitFailed(e.to_string())),
            (Some(Err(e)), _) => Err(e),
            (None, None) => Err(DbError::WriterGone),
        };
        let _ = self.answer.send(res);
    }
}

thread_local! {
    /// Set on the writer thread while a group runs isolated (see the module docs).
    static ISOLATED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `one` for every item of a batch job. Optimistically the items run one after another with
/// no savepoint, and the first failure fails the job (so the group runs again isolated); when
/// the group runs isolated, each item runs in its own savepoint and a failure is that item's
/// alone. Either way the job's answer is one result per item.
pub fn each_item<T, R>(
    conn: &Connection,
    items: &[T],
    one: impl Fn(&Connection, &T) -> Result<R>,
) -> Result<Vec<Result<R>>> {
    if ISOLATED.get() {
        return Ok(items
            .iter()
            .map(|it| run_in_savepoint(conn, |c| one(c, it)))
            .collect());
    }
    items.iter().map(|it| one(conn, it).map(Ok)).collect()
}

/// Handle to the allocation database. Cheap to clone.
#[derive(Clone)]
pub struct Db {
    jobs: mpsc::UnboundedSender<Box<dyn Job>>,
    readers: Arc<Mutex<Vec<Connection>>>,
    path: Arc<std::path::PathBuf>,
    group_commits: GroupCommits,
}

impl Db {
    /// Opens (creating and migrating) `path`, and starts the writer thread.
    pub fn open(path: &Path) -> Result<Db> {
        Db::open_with(path, None)
    }

    /// [`Db::open`], with the writer's commits handed to `checkpointer` (the server's).
    ///
    /// A file that fails `PRAGMA quick_check` is refused ([`DbError::Corrupt`]): serving from
    /// damaged pages could hand out a number twice.
    pub fn open_with(path: &Path, checkpointer: Option<Checkpointer>) -> Result<Db> {
        let mut conn = open_conn(path)?;
        quick_check(&conn)?;
        migrations().to_latest(&mut conn)?;
        conn.pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)?;
        hand_off(checkpointer.as_ref(), &conn);
        let (tx, rx) = mpsc::unbounded_channel();
        let group_commits = GroupCommits::default();
        let counted = group_commits.clone();
        std::thread::Builder::new()
            .name("alloc-db-writer".into())
            .spawn(move || writer_loop(conn, rx, &counted, checkpointer))
            .map_err(|e| DbError::CommitFailed(e.to_string()))?;
        Ok(Db {
            jobs: tx,
            readers: Arc::new(Mutex::new(Vec::new())),
            path: Arc::new(path.to_owned()),
            group_commits,
        })
    }

    /// The writer's group commits so far, and the jobs they carried.
    pub fn group_commits(&self) -> &GroupCommits {
        &self.group_commits
    }

    /// Runs `f` inside the next group commit; answers after the commit is durable. `f` may run
    /// twice (see the module docs); only the run that commits leaves effects.
    pub async fn write<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: Fn(&Connection) -> Result<R> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job = Box::new(WriteJob {
            f,
            outcome: None,
            answer: tx,
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

/// Tells the checkpoint thread, if any, that `conn`'s file has frames in its WAL.
fn hand_off(checkpointer: Option<&Checkpointer>, conn: &Connection) {
    if let (Some(c), Some(path)) = (checkpointer, conn.path()) {
        c.committed(Path::new(path));
    }
}

fn writer_loop(
    conn: Connection,
    mut rx: mpsc::UnboundedReceiver<Box<dyn Job>>,
    counted: &GroupCommits,
    checkpointer: Option<Checkpointer>,
) {
    while let Some(first) = rx.blocking_recv() {
        let mut batch = vec![first];
        let commit = run_group(&conn, &mut batch, || rx.try_recv().ok());
        if commit.is_ok() {
            counted.commits.inc();
            counted.jobs.inc_by(batch.len() as u64);
            hand_off(checkpointer.as_ref(), &conn);
        }
        let err = commit.err();
        for job in batch {
            job.finish(err.as_ref());
        }
    }
}

/// One transaction for the group: optimistically, then isolated if a job failed.
///
/// Jobs that arrive while the group runs join it (up to [`MAX_GROUP`]) until none is waiting,
/// and only then does it commit: a job that comes in while the writer works waits for the
/// commit under way instead of the whole next group.
fn run_group(
    conn: &Connection,
    batch: &mut Vec<Box<dyn Job>>,
    mut waiting: impl FnMut() -> Option<Box<dyn Job>>,
) -> Result<()> {
    let begin = |jobs: usize| {
        conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| {
            tracing::error!(error = %e, jobs, "could not begin a write transaction");
            DbError::from(e)
        })
    };
    begin(batch.len())?;
    let mut ran = 0;
    let mut ok = true;
    while ok && ran < batch.len() {
        ok = batch[ran].run(conn, false);
        ran += 1;
        if ran == batch.len() && batch.len() < MAX_GROUP {
            batch.extend(waiting());
        }
    }
    if !ok {
        conn.execute_batch("ROLLBACK")?;
        begin(batch.len())?;
        ISOLATED.set(true);
        for job in batch.iter_mut() {
            job.run(conn, true);
        }
        ISOLATED.set(false);
    }
    let commit = conn.execute_batch("COMMIT").map_err(DbError::from);
    if commit.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    commit
}

pub use callsign_storage::now_ms;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::testing::{wait_until, wal_len};

    /// A WAL left beside the database (by a crash, or here by another connection) is emptied
    /// once the server's writer has opened the file, though nothing is committed through it.
    #[test]
    fn a_wal_found_at_open_is_emptied_without_a_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.sqlite3");
        let wal_len = || wal_len(&path);
        drop(Db::open(&path).unwrap());
        let other = Connection::open(&path).unwrap();
        other.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        other
            .execute(
                "INSERT INTO accounts (name, created_at) VALUES ('a', 0)",
                [],
            )
            .unwrap();
        assert!(wal_len() > 0);

        let db = Db::open_with(&path, Some(Checkpointer::start().unwrap())).unwrap();
        drop(other);
        assert!(wal_len() > 0, "the WAL outlives the other connection");
        wait_until(std::time::Duration::from_secs(10), || wal_len() == 0);
        assert_eq!(wal_len(), 0, "the WAL found at open");
        drop(db);
        let n: i64 = Connection::open(&path)
            .unwrap()
            .query_row("SELECT count(*) FROM accounts", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
    }

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

    fn names(db: &Db) -> Vec<String> {
        db.read_blocking(|c| {
            let mut st = c.prepare("SELECT name FROM accounts ORDER BY id")?;
            let rows = st.query_map([], |r| r.get(0))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .unwrap()
    }

    fn add(c: &Connection, name: &str) -> Result<()> {
        c.execute(
            "INSERT INTO accounts (name, created_at) VALUES (?1, 0)",
            [name],
        )?;
        Ok(())
    }

    /// Jobs queued while the writer is busy form one group; one item of a batch job fails
    /// part-way. The group runs again isolated: the failing item's own effects are undone, its
    /// siblings' and the other jobs' effects commit once, and each job answers as if it had
    /// run in savepoints from the start.
    #[tokio::test]
    async fn a_failure_in_a_group_undoes_only_its_own_effects() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("a.sqlite3")).unwrap();
        let hold = db.write(|_| {
            std::thread::sleep(std::time::Duration::from_millis(200));
            Ok(())
        });
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        let first = db.write(move |c| {
            counted.fetch_add(1, SeqCst);
            add(c, "first")
        });
        let batch = db.write(|c| {
            each_item(c, &["one", "two", "three"], |c, name| {
                add(c, name)?;
                if *name == "two" {
                    // Fails after the insert above: that insert must not survive.
                    c.execute(
                        "INSERT INTO accounts (id, name, created_at) VALUES (1, 'dup', 0)",
                        [],
                    )?;
                }
                Ok(name.len())
            })
        });
        let last = db.write(|c| add(c, "last"));
        let (hold, first, batch, last) = tokio::join!(hold, first, batch, last);
        hold.unwrap();
        first.unwrap();
        last.unwrap();
        let batch = batch.unwrap();
        assert_eq!(batch.len(), 3);
        assert_eq!(batch[0].as_ref().ok(), Some(&3));
        assert!(batch[1].is_err(), "{:?}", batch[1]);
        assert_eq!(batch[2].as_ref().ok(), Some(&5));
        assert_eq!(names(&db), ["first", "one", "three", "last"]);
        assert_eq!(
            runs.load(SeqCst),
            2,
            "the group ran optimistically, then isolated"
        );

        // Without a failure a job runs once.
        let counted = runs.clone();
        db.write(move |c| {
            counted.fetch_add(1, SeqCst);
            add(c, "again")
        })
        .await
        .unwrap();
        assert_eq!(runs.load(SeqCst), 3);
    }

    /// A job sent while a group runs joins that group: one commit for both, not a second
    /// group after it. A job sent once the group has stopped taking jobs gets a commit of its
    /// own.
    #[tokio::test]
    async fn a_job_sent_while_a_group_runs_joins_its_commit() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("a.sqlite3")).unwrap();
        let (started, running) = std::sync::mpsc::channel::<()>();
        let writer = db.clone();
        let hold = tokio::spawn(async move {
            writer
                .write(move |c| {
                    let _ = started.send(());
                    std::thread::sleep(std::time::Duration::from_millis(500));
                    add(c, "held")
                })
                .await
        });
        tokio::task::spawn_blocking(move || running.recv().unwrap())
            .await
            .unwrap();
        db.write(|c| add(c, "joined")).await.unwrap();
        hold.await.unwrap().unwrap();
        assert_eq!(db.group_commits().commits.get(), 1);
        assert_eq!(db.group_commits().jobs.get(), 2);
        db.write(|c| add(c, "alone")).await.unwrap();
        assert_eq!(db.group_commits().commits.get(), 2);
        assert_eq!(names(&db), ["held", "joined", "alone"]);
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
