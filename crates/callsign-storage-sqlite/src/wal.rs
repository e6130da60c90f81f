//! Background WAL checkpoints: one thread copies committed WAL frames into their database files
//! while the writers go on, and empties a file's WAL once it is at rest.
//!
//! Both writers (the allocation database's and the task store's) keep SQLite's automatic
//! checkpoint, but at [`crate::alloc::WAL_CHECKPOINT_PAGES`] pages (≈ 40 MiB) instead of
//! SQLite's 1,000: each create rewrites a few random index pages, and a larger WAL copies each
//! of them into the database once per checkpoint rather than once per 1,000 pages
//! (docs/PERFORMANCE.md, change 9). Without this thread, that checkpoint copied every page of
//! the WAL into the database and synced it on the writer's thread, inside a request's commit:
//! the longest group and the top of the p99 (docs/PERFORMANCE.md, change 11). With it, the
//! frames are mostly copied already when the writer's checkpoint runs, so that one is short,
//! and it is still what lets the WAL start over from its beginning (SQLite restarts a WAL at a
//! write once every frame is copied). A checkpoint only copies frames that are already durable
//! in the WAL; it changes nothing about what a commit guarantees.
//!
//! The thread ([`Checkpointer`], named "wal-checkpoint") runs `wal_checkpoint(PASSIVE)` on each
//! file a writer has committed to, at most every 50 ms, on a connection of its own: a passive
//! checkpoint never waits for, and never blocks, a reader or a writer. The writers tell it of
//! every commit and of every file they open, so a WAL a crash left behind is emptied too.
//!
//! A file with no commit for [`AT_REST`] is checkpointed whole and its WAL truncated to nothing
//! (`wal_checkpoint(TRUNCATE)`), so a database at rest (the allocation database, every
//! account's replica) does not keep ≈ 40 MiB of WAL beside it. That never waits for another
//! connection's reader (Taskwarrior, say): while one holds the WAL, it is tried again after
//! another [`AT_REST`]. A writer that starts while it runs waits the few milliseconds it takes
//! (SQLite's busy handler).
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

/// The least time between two rounds of background checkpoints.
const INTERVAL: Duration = Duration::from_millis(50);

/// How long a file goes without a commit before its WAL is emptied.
pub const AT_REST: Duration = Duration::from_secs(1);

#[derive(Default)]
struct State {
    /// Files committed to since their last background checkpoint.
    written: HashSet<PathBuf>,
    /// Files whose writer has closed them since the thread last looked: it closes its own
    /// connection to them too (see [`Checkpointer::closed`]).
    closed: HashSet<PathBuf>,
    stop: bool,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

/// Handle to the checkpoint thread; cheap to clone. The thread stops when the last handle is
/// dropped.
#[derive(Clone)]
pub struct Checkpointer {
    inner: Arc<Handle>,
}

struct Handle {
    shared: Shared,
}

impl Checkpointer {
    pub fn start() -> std::io::Result<Checkpointer> {
        let shared: Shared = Arc::default();
        let theirs = shared.clone();
        std::thread::Builder::new()
            .name("wal-checkpoint".into())
            .spawn(move || Thread::default().run(&theirs))?;
        Ok(Checkpointer {
            inner: Arc::new(Handle { shared }),
        })
    }

    /// Tells the thread that `path` has frames in its WAL: a commit went into it, or a writer
    /// has just opened it (a crash may have left a WAL behind). A set insert under a lock.
    pub fn committed(&self, path: &Path) {
        let (m, cv) = &*self.inner.shared;
        let mut s = m.lock().expect("checkpoint state");
        s.closed.remove(path);
        if !s.written.contains(path) {
            s.written.insert(path.to_owned());
            cv.notify_one();
        }
    }

    /// Tells the thread that the writer of `path` has closed it: the thread closes its own
    /// connection to it too (SQLite checkpoints a WAL database when its last connection in the
    /// process closes, and removes the WAL), so a file no writer holds open holds no descriptor
    /// here either. A later [`Checkpointer::committed`] for the file takes it up again.
    pub fn closed(&self, path: &Path) {
        let (m, cv) = &*self.inner.shared;
        let mut s = m.lock().expect("checkpoint state");
        s.written.remove(path);
        s.closed.insert(path.to_owned());
        cv.notify_one();
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let (m, cv) = &*self.shared;
        m.lock().expect("checkpoint state").stop = true;
        cv.notify_one();
    }
}

/// How often the WAL of a file at rest may fail to be emptied (an error, not a reader in the
/// way) before the thread leaves it until the file's next commit.
const MAX_FAILURES: u32 = 3;

/// When a file's WAL is next to be emptied, if nothing is committed to it before then.
struct Due {
    at: Instant,
    failures: u32,
}

/// The thread's own state: a connection per file it works on, and the files whose WAL is not
/// known to be empty.
#[derive(Default)]
struct Thread {
    conns: HashMap<PathBuf, Connection>,
    due: HashMap<PathBuf, Due>,
}

impl Thread {
    fn run(mut self, shared: &Shared) {
        let (m, cv) = &**shared;
        loop {
            let (written, closed) = {
                let mut s = m.lock().expect("checkpoint state");
                loop {
                    if s.stop {
                        return;
                    }
                    if !s.written.is_empty() || !s.closed.is_empty() {
                        break;
                    }
                    let Some(next) = self.due.values().map(|d| d.at).min() else {
                        s = cv.wait(s).expect("checkpoint state");
                        continue;
                    };
                    let now = Instant::now();
                    if next <= now {
                        break;
                    }
                    s = cv.wait_timeout(s, next - now).expect("checkpoint state").0;
                }
                (
                    std::mem::take(&mut s.written),
                    std::mem::take(&mut s.closed),
                )
            };
            for path in closed {
                self.due.remove(&path);
                self.conns.remove(&path);
            }
            let busy = !written.is_empty();
            for path in written {
                let at = Instant::now() + AT_REST;
                self.due.insert(path.clone(), Due { at, failures: 0 });
                self.checkpoint(&path, Mode::Passive);
            }
            self.empty_files_at_rest(shared);
            if busy {
                std::thread::sleep(INTERVAL);
            }
        }
    }

    /// Truncates the WAL of every file due, unless a commit to it has just come in. One a
    /// reader holds up is due again after [`AT_REST`]; so is one that failed, up to
    /// [`MAX_FAILURES`] times. The thread's connection to an emptied file is closed: the file
    /// is at rest.
    fn empty_files_at_rest(&mut self, shared: &Shared) {
        let now = Instant::now();
        let due: Vec<PathBuf> = {
            let s = shared.0.lock().expect("checkpoint state");
            self.due
                .iter()
                .filter(|(p, d)| d.at <= now && !s.written.contains(*p))
                .map(|(p, _)| p.clone())
                .collect()
        };
        for path in due {
            let done = self.checkpoint(&path, Mode::Truncate);
            let Some(d) = self.due.get_mut(&path) else {
                continue;
            };
            d.at = now + AT_REST;
            match done {
                Some(true) => {
                    self.due.remove(&path);
                    self.conns.remove(&path);
                }
                Some(false) => {}
                None => {
                    d.failures += 1;
                    if d.failures >= MAX_FAILURES {
                        self.due.remove(&path);
                    }
                }
            }
        }
    }

    /// Checkpoints `path` on the thread's own connection, never waiting for another
    /// connection: `Some(false)` if one kept it from finishing (a reader, or another
    /// checkpoint), `None` (logged) if it failed. A failure costs nothing but time: the WAL
    /// keeps every commit, the writer's own checkpoint still runs, and a failed truncation is
    /// tried again.
    fn checkpoint(&mut self, path: &Path, mode: Mode) -> Option<bool> {
        match checkpoint(&mut self.conns, path, mode) {
            Ok(done) => Some(done),
            Err(e) => {
                tracing::warn!(error = %e, path = %path.display(), "background checkpoint");
                self.conns.remove(path);
                None
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Mode {
    /// Copies what it can without waiting for any reader or writer, and never blocks one.
    Passive,
    /// Copies everything and truncates the WAL to nothing, if no reader or writer is in the way.
    Truncate,
}

fn checkpoint(
    conns: &mut HashMap<PathBuf, Connection>,
    path: &Path,
    mode: Mode,
) -> rusqlite::Result<bool> {
    if !conns.contains_key(path) {
        let c = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        c.busy_timeout(Duration::ZERO)?;
        conns.insert(path.to_owned(), c);
    }
    let sql = match mode {
        Mode::Passive => "PRAGMA wal_checkpoint(PASSIVE)",
        Mode::Truncate => "PRAGMA wal_checkpoint(TRUNCATE)",
    };
    let busy: i64 = conns[path].query_row(sql, [], |r| r.get(0))?;
    Ok(busy == 0)
}

/// What the tests of this module and of the writers need to watch a WAL.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;
    use std::time::{Duration, Instant};

    /// The length of the WAL beside `db` (0 if there is none).
    pub fn wal_len(db: &Path) -> u64 {
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
    }

    /// Polls `done` every 20 ms for up to `limit`; whether it came true.
    pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + limit;
        while !done() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{wait_until, wal_len};
    use super::*;

    /// A database whose writer never checkpoints: its rows stay in the WAL until the thread
    /// copies them into the database file, which then grows.
    #[test]
    fn committed_frames_reach_the_database_file_without_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.sqlite3");
        let c = Connection::open(&path).unwrap();
        c.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
            .unwrap();
        c.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        c.execute_batch(
            "CREATE TABLE t (v TEXT);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
             INSERT INTO t SELECT hex(randomblob(100)) FROM n;",
        )
        .unwrap();
        let size = || std::fs::metadata(&path).unwrap().len();
        let before = size();
        assert!(
            before < 64 * 1024,
            "the rows are in the WAL: {before} bytes"
        );

        let cp = Checkpointer::start().unwrap();
        cp.committed(&path);
        wait_until(Duration::from_secs(10), || size() >= 256 * 1024);
        assert!(size() >= 256 * 1024, "checkpointed: {} bytes", size());
        let n: i64 = c
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2000);
    }

    /// A file with no commit for a while has its WAL emptied, but not while another
    /// connection's reader holds it, and without holding up the file's writer meanwhile.
    #[test]
    fn a_file_at_rest_has_its_wal_emptied_once_no_reader_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.sqlite3");
        let wal_len = || wal_len(&path);
        let w = Connection::open(&path).unwrap();
        w.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
            .unwrap();
        w.execute_batch("CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1);")
            .unwrap();
        assert!(wal_len() > 0);

        // Taskwarrior, say, in the middle of a read.
        let reader = Connection::open(&path).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let n: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);

        let cp = Checkpointer::start().unwrap();
        cp.committed(&path);
        std::thread::sleep(AT_REST * 2 + INTERVAL);
        assert!(wal_len() > 0, "emptied under a reader");
        // The writer goes on meanwhile (held up, it would wait out a busy timeout of seconds).
        let started = Instant::now();
        w.execute("INSERT INTO t VALUES (2)", []).unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the writer waited {:?}",
            started.elapsed()
        );
        cp.committed(&path);
        // Its last commit's truncation comes due and finds the reader too: only the retry,
        // with no commit after it, is left to empty the WAL.
        std::thread::sleep(AT_REST * 2 + INTERVAL);
        assert!(wal_len() > 0, "emptied under a reader");

        reader.execute_batch("COMMIT").unwrap();
        wait_until(AT_REST * 5, || wal_len() == 0);
        assert_eq!(wal_len(), 0, "the WAL of a file at rest");
        let n: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
    }
}
