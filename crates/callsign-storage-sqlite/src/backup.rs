//! `callsign-server backup` and `restore` on a SQLite data dir (docs/OPERATIONS.md, "Backup
//! and restore").
//!
//! A backup is a directory: a copy of the allocation database, of every account's replica and
//! of Taskwarrior's store, each made with SQLite's online backup API in one step (one read
//! transaction, so a consistent snapshot of that file while the server writes on), and
//! `callsign-backup.json` last, naming each file with its size and SHA-256. The allocation
//! database is copied first and the replicas after it: a replica may then hold tasks the copied
//! database does not know (they are created again, and numbered, when their devices retry),
//! never the reverse (a key with no task). Only the replicas of accounts the copied database
//! knows are copied, so the backup passes the data dir's own check ([`crate::datadir`]). The
//! copy is made in `<to>.partial` and renamed to `<to>` once complete.
//!
//! A restore (the server stopped: it takes the data dir's lock) checks every file against the
//! manifest and SQLite's `quick_check`, moves what the data dir held into
//! `restore-replaced-<time>/` inside it (nothing is deleted), copies the backup in, and marks
//! every project recovering (`callsign_storage::AllocStore::start_recovery`, docs/RECOVERY.md):
//! the restored counters may be behind keys the team's devices hold.
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::backup::Backup;
use rusqlite::{Connection, OpenFlags};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::alloc::{meta, AccountId};
use crate::datadir::{self, ACCOUNTS_DIR, DB_FILE, LOCK_FILE};

/// The manifest's name inside a backup.
pub const MANIFEST: &str = "callsign-backup.json";
/// The manifest format this build writes and reads.
pub const FORMAT: u32 = 1;
/// The replica's file name inside `accounts/<id>/`.
const REPLICA_FILE: &str = "taskchampion.sqlite3";

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("{0}: {1}")]
    Sqlite(PathBuf, rusqlite::Error),
    #[error("{0}: {1}")]
    Db(PathBuf, crate::alloc::DbError),
    #[error("{0} already exists; back up into a new directory")]
    Exists(PathBuf),
    #[error("{0} holds no allocation database ({DB_FILE}): is it a Callsign data dir?")]
    NotADataDir(PathBuf),
    #[error(
        "{0} is not a complete Callsign backup: {MANIFEST} is missing (a backup that was \
         interrupted leaves only a .partial directory)"
    )]
    NoManifest(PathBuf),
    #[error("{0}: unreadable manifest: {1}")]
    BadManifest(PathBuf, String),
    #[error(
        "{path} does not match the backup's manifest ({why}): the backup is damaged; use \
         another one"
    )]
    Damaged { path: PathBuf, why: String },
    #[error(
        "another callsign-server is serving {0}: stop it before restoring (a restore replaces \
         the files it has open)"
    )]
    Serving(PathBuf),
}

type Result<T> = std::result::Result<T, BackupError>;

/// What a backup holds, written last as its completion mark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    /// When the copy was made (ms since the epoch; the allocation database's snapshot).
    pub taken_at: i64,
    /// The `callsign-server` version that made it.
    pub server_version: String,
    /// The allocation database's instance id, hex.
    pub instance: String,
    /// The accounts whose data it holds.
    pub accounts: Vec<AccountId>,
    pub files: Vec<FileEntry>,
}

/// One file of a backup, by its path relative to the backup's directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// Copies the data dir `data_dir` into the new directory `to` while a server may be serving
/// it (see the module docs).
pub fn backup(data_dir: &Path, to: &Path, server_version: &str) -> Result<Manifest> {
    let db = data_dir.join(DB_FILE);
    if !db.is_file() {
        return Err(BackupError::NotADataDir(data_dir.to_owned()));
    }
    if to.exists() {
        return Err(BackupError::Exists(to.to_owned()));
    }
    let partial = partial_of(to);
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(|e| BackupError::Io(partial.clone(), e))?;
    }
    datadir::create_private_dir(&partial).map_err(|e| BackupError::Io(partial.clone(), e))?;
    let taken_at = callsign_storage::now_ms();
    let mut files = vec![copy_db(&db, &partial, DB_FILE)?];
    let copied = open_read_only(&partial.join(DB_FILE))?;
    let failed = |e| BackupError::Db(partial.join(DB_FILE), e);
    let accounts = meta::account_ids(&copied).map_err(failed)?;
    let instance = hex::encode(meta::instance_id(&copied).map_err(failed)?);
    drop(copied);
    for id in &accounts {
        let rel = format!("{ACCOUNTS_DIR}/{id}/{REPLICA_FILE}");
        let src = data_dir.join(&rel);
        if src.is_file() {
            let dir = partial.join(ACCOUNTS_DIR).join(id.to_string());
            datadir::create_private_dir(&dir).map_err(|e| BackupError::Io(dir.clone(), e))?;
            files.push(copy_db(&src, &partial, &rel)?);
        }
    }
    let tw = data_dir.join(crate::taskwarrior::FILE_NAME);
    if tw.is_file() {
        files.push(copy_db(&tw, &partial, crate::taskwarrior::FILE_NAME)?);
    }
    let manifest = Manifest {
        format: FORMAT,
        taken_at,
        server_version: server_version.to_owned(),
        instance,
        accounts,
        files,
    };
    let path = partial.join(MANIFEST);
    datadir::make_private_db_file(&path).map_err(|e| BackupError::Io(path.clone(), e))?;
    let text = serde_json::to_vec_pretty(&manifest).expect("a manifest serialises");
    write_synced(&path, &text)?;
    std::fs::rename(&partial, to).map_err(|e| BackupError::Io(to.to_owned(), e))?;
    sync_dir(to.parent().unwrap_or(Path::new(".")));
    Ok(manifest)
}

/// Reads `from`'s manifest and checks every file it names: size, SHA-256 and SQLite's
/// `quick_check`.
pub fn verify(from: &Path) -> Result<Manifest> {
    let path = from.join(MANIFEST);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(BackupError::NoManifest(from.to_owned()))
        }
        Err(e) => return Err(BackupError::Io(path, e)),
    };
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| BackupError::BadManifest(path.clone(), e.to_string()))?;
    if manifest.format != FORMAT {
        return Err(BackupError::BadManifest(
            path,
            format!(
                "format {} (this server reads format {FORMAT})",
                manifest.format
            ),
        ));
    }
    if !manifest.files.iter().any(|f| f.path == DB_FILE) {
        return Err(BackupError::BadManifest(
            path,
            format!("it names no {DB_FILE}"),
        ));
    }
    for f in &manifest.files {
        let file = from.join(&f.path);
        let damaged = |why: String| BackupError::Damaged {
            path: file.clone(),
            why,
        };
        if f.path.contains("..") || Path::new(&f.path).is_absolute() {
            return Err(damaged("a path outside the backup".into()));
        }
        let (bytes, sha256) = digest(&file)?;
        if bytes != f.bytes {
            return Err(damaged(format!(
                "{bytes} bytes, the manifest says {}",
                f.bytes
            )));
        }
        if sha256 != f.sha256 {
            return Err(damaged("its SHA-256 differs".into()));
        }
        let conn = open_read_only(&file)?;
        let check: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(|e| BackupError::Sqlite(file.clone(), e))?;
        if check != "ok" {
            return Err(damaged(format!("quick_check: {check}")));
        }
    }
    Ok(manifest)
}

/// What a restore did.
#[derive(Debug, Clone)]
pub struct Restored {
    pub manifest: Manifest,
    /// Where the data dir's earlier files went (`None`: it held none).
    pub replaced: Option<PathBuf>,
    /// The projects now recovering (every project the backup holds).
    pub recovering: Vec<callsign_storage::RecoveringRow>,
}

/// Puts the backup `from` in place as the data dir `data_dir`, every project recovering (see
/// the module docs).
pub fn restore(from: &Path, data_dir: &Path) -> Result<Restored> {
    let manifest = verify(from)?;
    datadir::create_private_dir(data_dir).map_err(|e| BackupError::Io(data_dir.to_owned(), e))?;
    let _lock = lock(data_dir)?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    let aside = data_dir.join(format!("restore-replaced-{stamp}"));
    let mut replaced = None;
    for name in moved_aside(data_dir)? {
        if replaced.is_none() {
            datadir::create_private_dir(&aside).map_err(|e| BackupError::Io(aside.clone(), e))?;
            replaced = Some(aside.clone());
        }
        let src = data_dir.join(&name);
        std::fs::rename(&src, aside.join(&name)).map_err(|e| BackupError::Io(src, e))?;
    }
    // The allocation database last, marked recovering before it is in place: until then the
    // data dir holds replicas with no database, which every command refuses to serve.
    let mut recovering = Vec::new();
    let last = manifest.files.iter().filter(|f| f.path != DB_FILE);
    for f in last.chain(manifest.files.iter().filter(|f| f.path == DB_FILE)) {
        let dst = data_dir.join(&f.path);
        if let Some(dir) = dst.parent() {
            datadir::create_private_dir(dir).map_err(|e| BackupError::Io(dir.to_owned(), e))?;
        }
        let tmp = dst.with_extension("restoring");
        std::fs::copy(from.join(&f.path), &tmp).map_err(|e| BackupError::Io(tmp.clone(), e))?;
        datadir::make_private_db_file(&tmp).map_err(|e| BackupError::Io(tmp.clone(), e))?;
        if f.path == DB_FILE {
            recovering =
                crate::alloc::mark_restored(&tmp, callsign_storage::now_ms(), manifest.taken_at)
                    .map_err(|e| BackupError::Db(tmp.clone(), e))?;
        }
        File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| BackupError::Io(tmp.clone(), e))?;
        std::fs::rename(&tmp, &dst).map_err(|e| BackupError::Io(dst.clone(), e))?;
        sync_dir(dst.parent().unwrap_or(data_dir));
    }
    sync_dir(data_dir);
    Ok(Restored {
        manifest,
        replaced,
        recovering,
    })
}

/// Takes the data dir's lock, as a serving process does: refused while one serves it.
fn lock(data_dir: &Path) -> Result<File> {
    datadir::lock(data_dir).map_err(|e| match e {
        datadir::LockError::Held(dir) => BackupError::Serving(dir),
        datadir::LockError::Io(path, e) => BackupError::Io(path, e),
    })
}

/// The data dir's entries a restore replaces: the databases (with their `-wal`/`-shm`), the
/// replicas and the revocation marker; the lock and earlier restores' leftovers stay.
fn moved_aside(data_dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let entries =
        std::fs::read_dir(data_dir).map_err(|e| BackupError::Io(data_dir.to_owned(), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| BackupError::Io(data_dir.to_owned(), e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == LOCK_FILE || name.starts_with("restore-replaced-") {
            continue;
        }
        out.push(name);
    }
    out.sort();
    Ok(out)
}

/// Copies the SQLite file `src` into `dir/rel` with the online backup API, in one step.
fn copy_db(src: &Path, dir: &Path, rel: &str) -> Result<FileEntry> {
    let dst = dir.join(rel);
    datadir::make_private_db_file(&dst).map_err(|e| BackupError::Io(dst.clone(), e))?;
    let from = open_read_only(src)?;
    let mut to = Connection::open(&dst).map_err(|e| BackupError::Sqlite(dst.clone(), e))?;
    Backup::new(&from, &mut to)
        .and_then(|b| b.run_to_completion(i32::MAX, Duration::from_millis(50), None))
        .map_err(|e| BackupError::Sqlite(src.to_owned(), e))?;
    // A plain file, not WAL: the copy is complete without a -wal beside it.
    to.pragma_update(None, "journal_mode", "DELETE")
        .map_err(|e| BackupError::Sqlite(dst.clone(), e))?;
    to.close()
        .map_err(|(_, e)| BackupError::Sqlite(dst.clone(), e))?;
    File::open(&dst)
        .and_then(|f| f.sync_all())
        .map_err(|e| BackupError::Io(dst.clone(), e))?;
    let (bytes, sha256) = digest(&dst)?;
    Ok(FileEntry {
        path: rel.to_owned(),
        bytes,
        sha256,
    })
}

fn open_read_only(path: &Path) -> Result<Connection> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| BackupError::Sqlite(path.to_owned(), e))
}

fn digest(path: &Path) -> Result<(u64, String)> {
    let mut f = File::open(path).map_err(|e| BackupError::Io(path.to_owned(), e))?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| BackupError::Io(path.to_owned(), e))?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        hash.update(&buf[..n]);
    }
    Ok((bytes, hex::encode(hash.finalize())))
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = File::options()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|e| BackupError::Io(path.to_owned(), e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| BackupError::Io(path.to_owned(), e))
}

/// Makes a rename or a new file in `dir` durable (best effort: not every system allows it).
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

fn partial_of(to: &Path) -> PathBuf {
    let mut name = to.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    to.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::{accounts, Db};
    use callsign_core::{MemberName, Prefix};

    /// A data dir with account 1 (project SYN) and its replica, plus a replica of an account the
    /// database does not know (left out of a backup).
    fn data_dir(dir: &Path) -> Db {
        std::fs::create_dir_all(dir).unwrap();
        let db = Db::open(&dir.join(DB_FILE)).unwrap();
        let (prefix, owner) = (
            Prefix::parse("SYN").unwrap(),
            MemberName::parse("o").unwrap(),
        );
        db.read_blocking(|c| accounts::create_account(c, "team", &prefix, "Sync", &owner))
            .unwrap();
        for id in [1, 7] {
            let d = dir.join(ACCOUNTS_DIR).join(id.to_string());
            std::fs::create_dir_all(&d).unwrap();
            let c = Connection::open(d.join(REPLICA_FILE)).unwrap();
            c.pragma_update(None, "journal_mode", "WAL").unwrap();
            c.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (0);")
                .unwrap();
        }
        db
    }

    fn rows(path: &Path) -> i64 {
        Connection::open(path)
            .unwrap()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn a_backup_taken_during_writes_is_whole_checked_and_restored_recovering() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, to) = (tmp.path().join("data"), tmp.path().join("backup"));
        let _db = data_dir(&dir);

        // A writer commits to the replica all through the backup.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (stop, file) = (stop.clone(), dir.join("accounts/1").join(REPLICA_FILE));
            std::thread::spawn(move || {
                let c = Connection::open(file).unwrap();
                c.busy_timeout(Duration::from_secs(5)).unwrap();
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    c.execute("INSERT INTO t VALUES (?1)", [n]).unwrap();
                    n += 1;
                }
                n
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        let made = backup(&dir, &to, "test").unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let written = writer.join().unwrap();
        assert!(written > 0);
        assert_eq!(made.accounts, [1], "account 7 is not the database's");
        let paths: Vec<&str> = made.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, [DB_FILE, "accounts/1/taskchampion.sqlite3"]);
        assert!(!partial_of(&to).exists());
        let copied = rows(&to.join("accounts/1").join(REPLICA_FILE));
        assert!(
            (1..=written + 1).contains(&copied),
            "a snapshot: {copied} of {written}"
        );
        assert_eq!(verify(&to).unwrap(), made);
        assert!(matches!(
            backup(&dir, &to, "test"),
            Err(BackupError::Exists(_))
        ));

        // Restored over a data dir in use: refused while it is locked.
        let lock = datadir::lock(&dir).unwrap();
        assert!(matches!(restore(&to, &dir), Err(BackupError::Serving(_))));
        drop(lock);
        let restored = restore(&to, &dir).unwrap();
        let aside = restored.replaced.clone().unwrap();
        assert!(aside.join(DB_FILE).is_file(), "the old files kept");
        assert!(aside.join("accounts/7").join(REPLICA_FILE).is_file());
        assert!(
            !dir.join("accounts/7").exists(),
            "only the backup's replicas"
        );
        assert_eq!(rows(&dir.join("accounts/1").join(REPLICA_FILE)), copied);
        let recovering: Vec<(i64, &str, i64)> = restored
            .recovering
            .iter()
            .map(|r| (r.account, r.prefix.as_str(), r.last))
            .collect();
        assert_eq!(recovering, [(1, "SYN", 0)]);
        let db = datadir::open_allocation_db(&dir, None).unwrap();
        let listed = db.read_blocking(crate::alloc::recovery::list).unwrap();
        assert_eq!(
            listed, restored.recovering,
            "marked in the restored database"
        );
    }

    #[test]
    fn a_damaged_or_incomplete_backup_is_refused_and_nothing_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, to) = (tmp.path().join("data"), tmp.path().join("backup"));
        let _db = data_dir(&dir);
        backup(&dir, &to, "test").unwrap();
        let replica = to.join("accounts/1").join(REPLICA_FILE);
        let mut bytes = std::fs::read(&replica).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&replica, bytes).unwrap();
        let err = restore(&to, &dir).unwrap_err();
        assert!(
            matches!(&err, BackupError::Damaged { why, .. } if why.contains("SHA-256")),
            "{err}"
        );
        assert!(std::fs::read_dir(&dir).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("restore-")));

        std::fs::remove_file(to.join(MANIFEST)).unwrap();
        assert!(matches!(
            restore(&to, &dir),
            Err(BackupError::NoManifest(_))
        ));
        let empty = tmp.path().join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        assert!(matches!(
            backup(&empty, &tmp.path().join("b2"), "test"),
            Err(BackupError::NotADataDir(_))
        ));
    }
}
