//! The sync lock: one sync loop per data dir.
//!
//! `<data-dir>/sync.lock` holds `PID HEARTBEAT_MS` of the loop that owns the data dir, rewritten
//! every heartbeat. Mutual exclusion comes from an OS file lock on that file (`flock`/`LockFileEx`),
//! which the kernel drops when the process dies, even by SIGKILL: a lock whose holder is dead is
//! therefore free to take, and whoever takes it over sees the dead holder's PID in the file and
//! resets that process's `in_progress` outbox rows (see [`Acquired::stale`]). A clean release
//! empties the file, so a non-empty file found by a new holder always means a dead one.
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub const LOCK_FILE: &str = "sync.lock";

/// What the lock file says about its (last) holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub heartbeat_ms: i64,
}

impl Holder {
    fn parse(s: &str) -> Option<Holder> {
        let mut it = s.split_whitespace();
        Some(Holder {
            pid: it.next()?.parse().ok()?,
            heartbeat_ms: it.next()?.parse().ok()?,
        })
    }
}

/// The held lock. Dropping it releases it (and empties the file).
#[derive(Debug)]
pub struct SyncLock {
    file: File,
    path: PathBuf,
}

#[derive(Debug)]
pub struct Acquired {
    pub lock: SyncLock,
    /// The previous holder, if it died holding the lock.
    pub stale: Option<Holder>,
}

impl SyncLock {
    /// Takes the lock if no live process holds it; `None` if one does.
    pub fn try_acquire(data_dir: &Path, now_ms: i64) -> Result<Option<Acquired>> {
        let path = data_dir.join(LOCK_FILE);
        let ctx = |e| Error::io(format!("sync lock {}", path.display()), e);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(ctx)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(e)) => return Err(ctx(e)),
        }
        let mut old = String::new();
        file.read_to_string(&mut old).map_err(ctx)?;
        let stale = Holder::parse(&old);
        let mut lock = SyncLock { file, path };
        lock.heartbeat(now_ms)?;
        Ok(Some(Acquired { lock, stale }))
    }

    /// Rewrites `PID HEARTBEAT_MS`.
    pub fn heartbeat(&mut self, now_ms: i64) -> Result<()> {
        let line = format!("{} {now_ms}\n", std::process::id());
        let f = &mut self.file;
        // Overwrite in place, then trim: a reader never sees an empty file while we hold it.
        let r = f
            .seek(SeekFrom::Start(0))
            .and_then(|_| f.write_all(line.as_bytes()))
            .and_then(|()| f.set_len(line.len() as u64));
        r.map_err(|e| Error::io(format!("sync lock {}", self.path.display()), e))
    }

    /// The live holder of the lock: `None` when no process holds it (the file may still name
    /// one that died). Probes with a non-blocking OS lock that it drops at once.
    pub fn live_holder(data_dir: &Path) -> Option<Holder> {
        let file = File::open(data_dir.join(LOCK_FILE)).ok()?;
        match file.try_lock() {
            Ok(()) => {
                let _ = file.unlock();
                None
            }
            Err(TryLockError::WouldBlock) => Some(Self::holder(data_dir).unwrap_or(Holder {
                pid: 0,
                heartbeat_ms: 0,
            })),
            Err(TryLockError::Error(_)) => Self::holder(data_dir),
        }
    }

    /// Reads who holds (or last held) the lock, without taking it.
    pub fn holder(data_dir: &Path) -> Option<Holder> {
        let s = std::fs::read_to_string(data_dir.join(LOCK_FILE)).ok()?;
        Holder::parse(&s)
    }
}

impl Drop for SyncLock {
    fn drop(&mut self) {
        // Empty file = released cleanly; the OS lock goes with the handle.
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_then_clean_release_then_stale_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = SyncLock::try_acquire(dir.path(), 1).unwrap().unwrap();
        assert_eq!(a.stale, None);
        assert!(SyncLock::try_acquire(dir.path(), 2).unwrap().is_none());
        let h = SyncLock::holder(dir.path()).unwrap();
        assert_eq!((h.pid, h.heartbeat_ms), (std::process::id(), 1));
        drop(a);
        let b = SyncLock::try_acquire(dir.path(), 3).unwrap().unwrap();
        assert_eq!(b.stale, None, "a clean release leaves no stale holder");
        drop(b);
        // A holder that died leaves its line behind but not its OS lock.
        std::fs::write(dir.path().join(LOCK_FILE), "4242 7\n").unwrap();
        assert_eq!(
            SyncLock::live_holder(dir.path()),
            None,
            "its holder is dead"
        );
        let c = SyncLock::try_acquire(dir.path(), 9).unwrap().unwrap();
        assert_eq!(
            SyncLock::live_holder(dir.path()).map(|h| h.heartbeat_ms),
            Some(9)
        );
        assert_eq!(
            c.stale,
            Some(Holder {
                pid: 4242,
                heartbeat_ms: 7
            })
        );
    }
}
