//! SQLite's own VFS, except that a WAL file's writes are gathered and reach the kernel as one
//! `pwrite` per commit.
//!
//! SQLite writes each WAL frame as two `pwrite`s (its 24-byte header, then the page), so a
//! commit of 40 pages is 80 system calls, each taking the file's lock, updating its timestamps
//! and walking ext4's write path; under 64 clients those calls were a sixth of each writer
//! thread (`docs/PERFORMANCE.md`). This VFS is the platform's default VFS (`unix`) for every
//! file but a WAL, and for a WAL it keeps the writes that follow one another in a buffer and
//! hands them to the default VFS as one write:
//! - when the frame that commits a transaction has been written (the frame header's "database
//!   size after commit" field is not zero; the WAL format is SQLite's documented file format),
//!   so a commit's frames are in the file before SQLite syncs it or publishes them to readers,
//!   whatever the `synchronous` setting; what SQLite still writes for that commit after its
//!   commit frame (the rest of a frame split at the sync when it pads a commit to a sector,
//!   checksums rewritten after a spill) goes straight to the file, until the next
//!   transaction's first frame;
//! - before anything that looks at the file: a read, a sync, a truncate, its size, a file
//!   control, closing it;
//! - when a write does not continue (or overwrite) what is buffered, or the buffer reaches
//!   [`MAX_BUFFER`].
//!
//! So nothing SQLite has synced, or published as committed, is only in memory, and a crash
//! loses at most frames of a transaction that had not committed, which SQLite's recovery
//! ignores anyway (their checksums and salts chain from the last commit). Everything else
//! (locks, shared memory, the database file, journals) is the default VFS's, untouched.
//!
//! [`open`] also turns `cache_spill` off, so SQLite writes no frame before the commit that
//! carries it. With spilling on, a transaction rolled back after SQLite spilled pages into the
//! WAL would leave those uncommitted frames in the buffer until the connection's next use of
//! the file, and writing them then is harmless only if no other connection wrote the WAL since
//! (the spill tests below cover the one-writer case).
use std::ffi::{c_char, c_int, c_void, CStr};
use std::mem::size_of;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

use rusqlite::{ffi, Connection, OpenFlags};

/// The name the VFS is registered under.
pub const NAME: &CStr = c"callsign-wal";

/// The most a WAL file's buffer holds before it is written out (a larger commit is written in
/// pieces of at most this size): the default VFS writes less than 128 KiB in one call (it
/// masks a write's length with `0x1ffff`).
pub const MAX_BUFFER: usize = 120 << 10;

/// Size of a WAL frame header (SQLite's file format, section 4.1).
const FRAME_HEADER: usize = 24;

/// The default VFS this one hands everything to.
static BASE: AtomicPtr<ffi::sqlite3_vfs> = AtomicPtr::new(ptr::null_mut());

#[cfg(test)]
thread_local! {
    /// `pwrite`s this VFS has made to WAL files on this thread (what the tests count).
    static WAL_WRITES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// SQLite's result code when registering the VFS failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegisterError(pub c_int);

impl std::fmt::Display for RegisterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "registering the SQLite VFS {NAME:?} failed (SQLite code {})",
            self.0
        )
    }
}

impl std::error::Error for RegisterError {}

/// Registers the VFS (once per process; later calls return the first result). It is not made
/// the default: connections ask for it by [`NAME`], as [`open`] does.
pub fn register() -> Result<(), RegisterError> {
    static DONE: OnceLock<c_int> = OnceLock::new();
    // SAFETY: runs once; `register_once` only reads SQLite's default VFS and registers a copy.
    let rc = *DONE.get_or_init(|| unsafe { register_once() });
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(RegisterError(rc))
    }
}

/// Opens `path` with this VFS and `cache_spill` off (see the module's documentation).
pub fn open(path: &Path, flags: OpenFlags) -> rusqlite::Result<Connection> {
    register()
        .map_err(|e| rusqlite::Error::SqliteFailure(ffi::Error::new(e.0), Some(e.to_string())))?;
    let name = NAME.to_str().expect("the VFS name is ASCII");
    let conn = Connection::open_with_flags_and_vfs(path, flags, name)?;
    conn.pragma_update(None, "cache_spill", false)?;
    Ok(conn)
}

/// How many `pwrite`s this VFS has made to WAL files on the calling thread so far.
#[cfg(test)]
fn wal_writes() -> u64 {
    WAL_WRITES.get()
}

/// Counts a write for the tests; nothing outside them.
fn count_write() {
    #[cfg(test)]
    WAL_WRITES.set(WAL_WRITES.get() + 1);
}

unsafe fn register_once() -> c_int {
    // SAFETY (whole function): SQLite is initialised by `sqlite3_vfs_find`; the default VFS
    // lives for the whole process; the copy is leaked, as a registered VFS must outlive every
    // connection using it.
    unsafe {
        let base = ffi::sqlite3_vfs_find(ptr::null());
        if base.is_null() {
            return ffi::SQLITE_ERROR;
        }
        BASE.store(base, Ordering::Release);
        let mut vfs: ffi::sqlite3_vfs = *base;
        vfs.szOsFile = (size_of::<WalFile>() as c_int) + (*base).szOsFile;
        vfs.zName = NAME.as_ptr();
        vfs.pNext = ptr::null_mut();
        vfs.xOpen = Some(x_open);
        ffi::sqlite3_vfs_register(Box::leak(Box::new(vfs)), 0)
    }
}

/// A WAL file: SQLite's file object, the default VFS's file right after it, and the buffer.
/// Every other file is the default VFS's file itself, at the start of the same allocation.
#[repr(C)]
struct WalFile {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    /// File offset of `buf[0]`.
    start: i64,
    buf: Vec<u8>,
    /// The last write was the header of a commit frame: flush once its page is written.
    commit_frame: bool,
    /// `Some(end)` from a commit frame's flush until the next transaction's first frame:
    /// writes go straight to the file meanwhile, `end` being where the commit (and anything
    /// written after it) ends. See [`buffer_or_write`].
    after_commit: Option<i64>,
}

// `real` is placed right after the `WalFile`, so that must keep it aligned.
const _: () = assert!(size_of::<WalFile>().is_multiple_of(8));

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite gives `file` `szOsFile` bytes, room for a `WalFile` and the default VFS's
    // file after it; `BASE` was set before the VFS was registered.
    unsafe {
        let base = BASE.load(Ordering::Acquire);
        let Some(open) = (*base).xOpen else {
            return ffi::SQLITE_ERROR;
        };
        if flags & ffi::SQLITE_OPEN_WAL == 0 {
            return open(base, name, file, flags, out_flags);
        }
        let real = file.cast::<u8>().add(size_of::<WalFile>()).cast();
        let rc = open(base, name, real, flags, out_flags);
        if rc != ffi::SQLITE_OK || (*real).pMethods.is_null() {
            (*file).pMethods = ptr::null();
            return if rc == ffi::SQLITE_OK {
                ffi::SQLITE_CANTOPEN
            } else {
                rc
            };
        }
        ptr::write(
            file.cast::<WalFile>(),
            WalFile {
                base: ffi::sqlite3_file {
                    pMethods: &WAL_METHODS,
                },
                real,
                start: 0,
                buf: Vec::new(),
                commit_frame: false,
                after_commit: None,
            },
        );
        rc
    }
}

static WAL_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

/// The `WalFile` behind a file SQLite opened through [`x_open`] with `SQLITE_OPEN_WAL`.
///
/// # Safety
/// `file` must be such a file, not yet closed, used by one thread at a time (SQLite's rule).
unsafe fn wal<'a>(file: *mut ffi::sqlite3_file) -> &'a mut WalFile {
    // SAFETY: the caller's contract.
    unsafe { &mut *file.cast::<WalFile>() }
}

/// The default VFS's methods of the file.
fn methods(w: &WalFile) -> &'static ffi::sqlite3_io_methods {
    // SAFETY: `real` was opened by the default VFS and stays open until `x_close`.
    unsafe { &*(*w.real).pMethods }
}

/// Writes the buffer out as one write and empties it (also when the write fails: SQLite fails
/// the transaction then, and those frames are not part of any commit).
fn flush(w: &mut WalFile) -> c_int {
    if w.buf.is_empty() {
        return ffi::SQLITE_OK;
    }
    // SAFETY: `buf` is valid for its length, which `MAX_BUFFER` keeps within `c_int`.
    let rc = unsafe { write_through(w, w.buf.as_ptr().cast(), w.buf.len() as c_int, w.start) };
    w.buf.clear();
    w.commit_frame = false;
    rc
}

/// One write to the default VFS's file.
///
/// # Safety
/// `data` must be valid for `amount` bytes.
unsafe fn write_through(w: &WalFile, data: *const c_void, amount: c_int, offset: i64) -> c_int {
    let Some(write) = methods(w).xWrite else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    count_write();
    // SAFETY: the caller's contract; `real` is open.
    unsafe { write(w.real, data, amount, offset) }
}

/// A frame header with its "database size after commit" field (SQLite's file format, 4.1):
/// `Some(true)` for a commit frame's, `Some(false)` for another frame's, `None` if `bytes`
/// is not a frame header.
fn frame_header(bytes: &[u8]) -> Option<bool> {
    (bytes.len() == FRAME_HEADER).then(|| bytes[4..8] != [0; 4])
}

/// A write, once a commit frame has been written out: SQLite may still write to the WAL for
/// that commit (the rest of a frame split at the sync point when it pads the commit to a
/// sector, headers rewritten with new checksums after it spilled pages), and those writes must
/// reach the file before SQLite publishes the commit, so they go straight to it. Buffering
/// starts again with the next transaction: its first frame header (not a commit's) appended
/// past the commit, or a new WAL header at offset 0. A transaction of a single frame stays
/// unbuffered (its header is a commit's), as SQLite alone writes it.
fn buffer_or_write(w: &mut WalFile, bytes: &[u8], offset: i64) -> c_int {
    if let Some(end) = w.after_commit {
        let next_transaction = offset == 0 || (offset >= end && frame_header(bytes) == Some(false));
        if !next_transaction {
            w.after_commit = Some(end.max(offset + bytes.len() as i64));
            // SAFETY: `bytes` is valid for its length.
            return unsafe {
                write_through(w, bytes.as_ptr().cast(), bytes.len() as c_int, offset)
            };
        }
        w.after_commit = None;
    }
    buffer(w, bytes, offset)
}

/// Adds a write to the buffer: in place where it overlaps or continues what is buffered,
/// otherwise after writing the buffer out; written out at once when it completes a commit
/// frame.
fn buffer(w: &mut WalFile, bytes: &[u8], offset: i64) -> c_int {
    // Taken before any flush below, which clears it.
    let commit_page = w.commit_frame;
    let end = w.start + w.buf.len() as i64;
    let joins = !w.buf.is_empty() && offset >= w.start && offset <= end;
    if !joins || (offset - w.start) as usize + bytes.len() > MAX_BUFFER {
        let rc = flush(w);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
    }
    if w.buf.is_empty() {
        w.start = offset;
    }
    let at = (offset - w.start) as usize;
    let overlap = (w.buf.len() - at).min(bytes.len());
    w.buf[at..at + overlap].copy_from_slice(&bytes[..overlap]);
    w.buf.extend_from_slice(&bytes[overlap..]);
    if commit_page {
        // The commit frame's page: the transaction's frames are all here.
        w.after_commit = Some(offset + bytes.len() as i64);
        return flush(w);
    }
    w.commit_frame = frame_header(bytes) == Some(true);
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    let Ok(len) = usize::try_from(amount) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    // SAFETY: SQLite passes one of our WAL files and `amount` readable bytes at `data`.
    let (w, bytes) = unsafe {
        (
            wal(file),
            std::slice::from_raw_parts(data.cast::<u8>(), len),
        )
    };
    if len > MAX_BUFFER {
        let rc = flush(w);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        // SAFETY: forwarding SQLite's own arguments to the default VFS's file.
        return unsafe { write_through(w, data, amount, offset) };
    }
    buffer_or_write(w, bytes, offset)
}

/// Forwards a call to the default VFS's file.
macro_rules! forward {
    ($file:ident, $method:ident ( $($arg:expr),* )) => {{
        // SAFETY: SQLite passes one of our WAL files; the arguments are SQLite's own.
        let w = unsafe { wal($file) };
        let Some(f) = methods(w).$method else {
            return ffi::SQLITE_IOERR;
        };
        unsafe { f(w.real $(, $arg)*) }
    }};
}

/// Writes the buffer out, then forwards a call to the default VFS's file.
macro_rules! flush_then {
    ($file:ident, $($call:tt)*) => {{
        // SAFETY: SQLite passes one of our WAL files.
        let rc = flush(unsafe { wal($file) });
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        forward!($file, $($call)*)
    }};
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    data: *mut c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    flush_then!(file, xRead(data, amount, offset))
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    flush_then!(file, xTruncate(size))
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    flush_then!(file, xSync(flags))
}

unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    flush_then!(file, xFileSize(size))
}

unsafe extern "C" fn x_file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    flush_then!(file, xFileControl(op, arg))
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    forward!(file, xLock(level))
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    forward!(file, xUnlock(level))
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    forward!(file, xCheckReservedLock(out))
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    forward!(file, xSectorSize())
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    forward!(file, xDeviceCharacteristics())
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite passes one of our WAL files and never uses it after this call; the
    // `WalFile` was written by `x_open` and is dropped exactly once, here.
    unsafe {
        let w = wal(file);
        let flushed = flush(w);
        let closed = match methods(w).xClose {
            Some(close) => close(w.real),
            None => ffi::SQLITE_IOERR_CLOSE,
        };
        ptr::drop_in_place(file.cast::<WalFile>());
        (*file).pMethods = ptr::null();
        if flushed != ffi::SQLITE_OK {
            flushed
        } else {
            closed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw() -> OpenFlags {
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
    }

    fn wal_db(dir: &Path) -> Connection {
        let c = open(&dir.join("t.db"), rw()).unwrap();
        c.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
            .unwrap();
        c.pragma_update(None, "synchronous", "FULL").unwrap();
        c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)")
            .unwrap();
        c
    }

    /// Inserts `n` rows of 1 KiB random bytes with ids from `first`, in one transaction.
    fn insert(c: &Connection, first: i64, n: i64) {
        c.execute(
            "WITH RECURSIVE s(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM s WHERE i < ?1 + ?2 - 1)
             INSERT INTO t SELECT i, randomblob(1024) FROM s",
            [first, n],
        )
        .unwrap();
    }

    /// `wal_db` with no checkpoints and no sync at commit: what reaches the file is what this
    /// VFS wrote before SQLite published each commit.
    fn unsynced_wal_db(dir: &Path) -> Connection {
        let c = wal_db(dir);
        c.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        c.pragma_update(None, "synchronous", "NORMAL").unwrap();
        c
    }

    /// Rows in a copy of the database and its WAL taken now, as a crash would leave them,
    /// opened (and so recovered) by a connection on the default VFS.
    fn rows_after_a_crash(dir: &Path) -> i64 {
        let copy = tempfile::tempdir().unwrap();
        for name in ["t.db", "t.db-wal"] {
            std::fs::copy(dir.join(name), copy.path().join(name)).unwrap();
        }
        Connection::open(copy.path().join("t.db"))
            .unwrap()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap()
    }

    /// Frames in the WAL file (which only grows while nothing checkpoints it).
    fn wal_frames(dir: &Path) -> u64 {
        let len = std::fs::metadata(dir.join("t.db-wal")).map_or(0, |m| m.len());
        len.saturating_sub(32) / (24 + 4096)
    }

    #[test]
    fn a_commit_of_many_pages_is_one_write_that_every_other_connection_reads() {
        let dir = tempfile::tempdir().unwrap();
        let c = wal_db(dir.path());
        c.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        let plain = Connection::open(dir.path().join("t.db")).unwrap();
        for round in 0..20 {
            let frames_before = wal_frames(dir.path());
            let writes_before = wal_writes();
            insert(&c, round * 50, 50); // ≈ 17 pages, 70 KiB of WAL
            let writes = wal_writes() - writes_before;
            let frames = wal_frames(dir.path()) - frames_before;
            assert!(frames >= 13, "50 KiB of rows, {frames} frames");
            assert_eq!(writes, 1, "round {round}: {frames} frames");
            let n: i64 = plain
                .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, (round + 1) * 50);
        }
    }

    /// Commits of 1 to 120 rows (1 to ≈ 40 frames) on `c`, so the commit frame falls at every
    /// place in the buffer (also where its page no longer fits and the buffer is written out
    /// first); after each, a connection on the default VFS must see all the rows.
    fn commits_of_every_size_are_read_whole(dir: &Path, c: &Connection) {
        c.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        let plain = Connection::open(dir.join("t.db")).unwrap();
        let mut rows = 0;
        for n in 1..=120 {
            insert(c, rows, n);
            rows += n;
            let seen: i64 = plain
                .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .unwrap();
            assert_eq!(seen, rows, "after the commit of {n} rows");
        }
        let ok: String = plain
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }

    #[test]
    fn without_a_sync_at_commit_every_commit_of_every_size_is_in_the_file() {
        // With no sync at commit, only the commit-frame flush puts a commit in the file.
        let dir = tempfile::tempdir().unwrap();
        let c = unsynced_wal_db(dir.path());
        commits_of_every_size_are_read_whole(dir.path(), &c);
    }

    #[test]
    fn commits_padded_to_a_sector_are_in_the_file_before_they_are_published() {
        // Without power-safe overwrite SQLite pads a synced commit to the sector with copies of
        // the commit frame, and splits the last one at the sync: part before the sync, the rest
        // after it, before publishing the commit. That rest must not wait in the buffer.
        let dir = tempfile::tempdir().unwrap();
        let uri = format!("file:{}?psow=0", dir.path().join("t.db").display());
        let c = open(Path::new(&uri), rw() | OpenFlags::SQLITE_OPEN_URI).unwrap();
        c.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
            .unwrap();
        c.pragma_update(None, "synchronous", "FULL").unwrap();
        c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)")
            .unwrap();
        commits_of_every_size_are_read_whole(dir.path(), &c);
    }

    #[test]
    fn a_commit_whose_checksums_were_rewritten_after_a_spill_survives_a_crash() {
        // With spilling on (what `open` turns off), a page spilled to the WAL and changed again
        // is rewritten in place, and SQLite rewrites the checksums of the frames from there on
        // after writing the commit frame. With no sync at commit, those headers must reach the
        // file before the commit is published, or recovery stops at the first stale checksum.
        let dir = tempfile::tempdir().unwrap();
        let c = unsynced_wal_db(dir.path());
        c.pragma_update(None, "cache_spill", true).unwrap();
        c.pragma_update(None, "cache_size", 5).unwrap();
        c.execute_batch("CREATE INDEX t_v ON t (v)").unwrap();
        insert(&c, 0, 10);
        c.execute_batch("BEGIN").unwrap();
        for round in 0..10 {
            insert(&c, 1000 + round * 30, 30);
            c.execute("UPDATE t SET v = randomblob(1024) WHERE id < 10", [])
                .unwrap();
        }
        c.execute_batch("COMMIT").unwrap();
        assert_eq!(rows_after_a_crash(dir.path()), 310);
        drop(c);
    }

    #[test]
    fn a_transaction_that_spilled_and_rolled_back_leaves_the_database_as_committed() {
        let dir = tempfile::tempdir().unwrap();
        let c = wal_db(dir.path());
        // Spill on purpose (what `open` turns off): a tiny cache makes SQLite write
        // uncommitted frames into the WAL in the middle of the transaction.
        c.pragma_update(None, "cache_spill", true).unwrap();
        c.pragma_update(None, "cache_size", 10).unwrap();
        insert(&c, 0, 100);
        c.execute_batch("BEGIN").unwrap();
        insert(&c, 1000, 500);
        c.execute_batch("ROLLBACK").unwrap();
        insert(&c, 2000, 100);
        c.execute_batch("BEGIN").unwrap();
        insert(&c, 3000, 500);
        c.execute_batch("COMMIT").unwrap();
        drop(c);

        let plain = Connection::open(dir.path().join("t.db")).unwrap();
        let ok: String = plain
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        let ids: Vec<(i64, i64)> = plain
            .prepare("SELECT id / 1000, count(*) FROM t GROUP BY 1 ORDER BY 1")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(ids, vec![(0, 100), (2, 100), (3, 500)]);
    }

    #[test]
    fn a_wal_left_by_a_connection_that_never_closed_is_recovered_whole() {
        // The process dies without closing: the WAL file is all there is. Copying the files
        // while the writer is still open is what a crash leaves on disk.
        let dir = tempfile::tempdir().unwrap();
        let c = unsynced_wal_db(dir.path());
        for round in 0..5 {
            insert(&c, round * 100, 100);
        }
        assert_eq!(rows_after_a_crash(dir.path()), 500);
        drop(c);
    }
}
