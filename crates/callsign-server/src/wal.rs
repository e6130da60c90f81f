//! Background WAL checkpoints: one thread copies committed WAL frames into their database files
//! while the writers go on.
//!
//! Each writer keeps SQLite's automatic checkpoint (every [`crate::db::WAL_CHECKPOINT_PAGES`]
//! pages). Without this thread, that checkpoint copied every page of the WAL into the database
//! and synced it on the writer's thread, inside a request's commit: the longest group (≈ 25-30
//! ms for the task store under 64 clients) and the top of the p99. With it, the frames are
//! mostly copied already when the writer's checkpoint runs, so that one is short, and it is
//! still what lets the WAL start over from its beginning (SQLite restarts a WAL at a write
//! once every frame is copied). A checkpoint only copies frames that are already durable in
//! the WAL; it changes nothing about what a commit guarantees.
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// The least time between two rounds of background checkpoints.
const INTERVAL: Duration = Duration::from_millis(50);

#[derive(Default)]
struct State {
    /// Files committed to since their last background checkpoint.
    written: HashSet<PathBuf>,
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
            .spawn(move || run(&theirs))?;
        Ok(Checkpointer {
            inner: Arc::new(Handle { shared }),
        })
    }

    /// Tells the thread that a commit went into `path` (a set insert under a lock).
    pub fn committed(&self, path: &Path) {
        let (m, cv) = &*self.inner.shared;
        let mut s = m.lock().expect("checkpoint state");
        if !s.written.contains(path) {
            s.written.insert(path.to_owned());
            cv.notify_one();
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let (m, cv) = &*self.shared;
        m.lock().expect("checkpoint state").stop = true;
        cv.notify_one();
    }
}

fn run(shared: &Shared) {
    let (m, cv) = &**shared;
    let mut conns: HashMap<PathBuf, Connection> = HashMap::new();
    loop {
        let written = {
            let mut s = m.lock().expect("checkpoint state");
            while s.written.is_empty() && !s.stop {
                s = cv.wait(s).expect("checkpoint state");
            }
            if s.stop {
                return;
            }
            std::mem::take(&mut s.written)
        };
        for path in written {
            if let Err(e) = checkpoint(&mut conns, &path) {
                // The writer's own checkpoint still runs; the WAL keeps every commit.
                tracing::warn!(error = %e, path = %path.display(), "background checkpoint");
                conns.remove(&path);
            }
        }
        std::thread::sleep(INTERVAL);
    }
}

/// `wal_checkpoint(PASSIVE)` on `path`: copies what it can without waiting for any reader or
/// writer, and never blocks one.
fn checkpoint(conns: &mut HashMap<PathBuf, Connection>, path: &Path) -> rusqlite::Result<()> {
    if !conns.contains_key(path) {
        let c = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conns.insert(path.to_owned(), c);
    }
    conns[path].query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

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
        let deadline = Instant::now() + Duration::from_secs(10);
        while size() < 256 * 1024 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(size() >= 256 * 1024, "checkpointed: {} bytes", size());
        let n: i64 = c
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2000);
    }
}
