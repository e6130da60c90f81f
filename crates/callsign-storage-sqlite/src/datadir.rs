//! What the server checks in a data dir before it serves it or adds to it.
//!
//! The allocation database (`callsign.sqlite3`) is the only record of which account owns the
//! replica under `accounts/<id>/`, and a new database hands out account ids from 1 again. So
//! if that file is missing, empty, or older than the replicas (a restored backup), a new
//! account would adopt an old account's tasks. Every command that opens a data dir
//! (`serve`, `account create`, `token create`) refuses when `accounts/` holds a replica of an
//! account the database does not know. Inside each replica, [`crate::tasks`] also records the
//! allocation database and account it belongs to and refuses a replica bound elsewhere.
use std::path::{Path, PathBuf};

use crate::alloc::{meta, AccountId, Db, DbError};
use crate::wal::Checkpointer;

/// The directory of the per-account replicas, inside the data dir.
pub const ACCOUNTS_DIR: &str = "accounts";
/// The allocation database's file, inside the data dir.
pub const DB_FILE: &str = "callsign.sqlite3";
/// The lock a serving process (or a restore) holds on its data dir.
pub const LOCK_FILE: &str = "server.lock";

/// Why the data dir's lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("opening {0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("another callsign-server is already serving {0}")]
    Held(PathBuf),
}

/// Takes the data dir's lock (`server.lock`, private to the server's user): one process per
/// data dir, since the in-process idempotency claims hold only if no second process serves
/// the same files. The OS releases it when the process dies, so a crash never leaves it stale.
pub fn lock(data_dir: &Path) -> Result<std::fs::File, LockError> {
    let path = data_dir.join(LOCK_FILE);
    let mut open = std::fs::OpenOptions::new();
    open.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
    let file = open
        .open(&path)
        .map_err(|e| LockError::Io(path.clone(), e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| LockError::Io(path.clone(), e))?;
    }
    if file.try_lock().is_err() {
        return Err(LockError::Held(data_dir.to_owned()));
    }
    Ok(file)
}

#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    #[error(
        "{db} is missing or empty, but {accounts} holds the task data of account(s) {ids}: a \
         fresh allocation database would hand those tasks to new accounts. Restore {db} (with \
         its -wal file, if any) from a backup, or move {accounts} aside to start afresh \
         (docs/OPERATIONS.md, \"When the server refuses to start\")"
    )]
    AllocationDbMissing {
        db: PathBuf,
        accounts: PathBuf,
        ids: String,
    },
    #[error(
        "{accounts} holds the task data of account(s) {ids}, which {db} does not know (is it \
         an older copy?): a new account would adopt those tasks. Restore the matching {db}, or \
         move those account directories aside (docs/OPERATIONS.md, \"When the server refuses \
         to start\")"
    )]
    UnknownAccounts {
        db: PathBuf,
        accounts: PathBuf,
        ids: String,
    },
    #[error("cannot create or read the data dir {0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("{0}: {1}")]
    Db(PathBuf, DbError),
}

/// Creates `dir` (and its parents) readable by the server's user only (0700 on Unix). An
/// existing directory keeps its mode: the operator may have chosen it.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Makes the SQLite file `db` (created empty if missing) and its `-wal`, `-shm` and
/// `-journal` files, where they exist, readable by the server's user only (0600 on Unix).
/// SQLite creates a database's `-wal` and `-shm` with the database file's mode, so a file made
/// 0600 before SQLite first opens it keeps the ones it makes later private too.
pub fn make_private_db_file(db: &Path) -> std::io::Result<()> {
    let mut open = std::fs::OpenOptions::new();
    open.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
    drop(open.open(db)?);
    #[cfg(unix)]
    for suffix in ["", "-wal", "-shm", "-journal"] {
        use std::os::unix::fs::PermissionsExt;
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        match std::fs::set_permissions(&name, std::fs::Permissions::from_mode(0o600)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// The accounts that have a replica file under `accounts/`, sorted.
pub fn replica_accounts(data_dir: &Path) -> Result<Vec<AccountId>, DataDirError> {
    let dir = data_dir.join(ACCOUNTS_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(DataDirError::Io(dir, e)),
    };
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| DataDirError::Io(dir.clone(), e))?;
        let Some(id) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<AccountId>().ok())
        else {
            continue;
        };
        if entry.path().join(callsign_tcstore::FILE_NAME).exists() {
            ids.push(id);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// Bytes on disk of the allocation database and of every replica (each with its WAL and
/// shared-memory files).
pub fn sizes(data_dir: &Path) -> (u64, u64) {
    let with_wal = |file: PathBuf| -> u64 {
        ["", "-wal", "-shm"]
            .iter()
            .filter_map(|s| {
                let mut p = file.clone().into_os_string();
                p.push(s);
                std::fs::metadata(p).ok().map(|m| m.len())
            })
            .sum()
    };
    let allocation = with_wal(data_dir.join(DB_FILE));
    let replicas = replica_accounts(data_dir)
        .unwrap_or_default()
        .into_iter()
        .map(|id| {
            with_wal(
                data_dir
                    .join(ACCOUNTS_DIR)
                    .join(id.to_string())
                    .join(callsign_tcstore::FILE_NAME),
            )
        })
        .sum();
    (allocation, replicas)
}

/// The accounts in `found` that are not in `known`.
pub fn unknown(found: &[AccountId], known: &[AccountId]) -> Vec<AccountId> {
    found
        .iter()
        .copied()
        .filter(|id| !known.contains(id))
        .collect()
}

fn list(ids: &[AccountId]) -> String {
    let shown: Vec<String> = ids.iter().take(10).map(ToString::to_string).collect();
    let more = ids.len().saturating_sub(shown.len());
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// Creates the data dir if needed, refuses a data dir whose allocation database is gone but
/// whose replicas remain (see the module docs), and opens the database (migrating it).
pub fn open_allocation_db(
    data_dir: &Path,
    checkpointer: Option<Checkpointer>,
) -> Result<Db, DataDirError> {
    create_private_dir(data_dir).map_err(|e| DataDirError::Io(data_dir.to_owned(), e))?;
    let db_path = data_dir.join(DB_FILE);
    let accounts = data_dir.join(ACCOUNTS_DIR);
    let found = replica_accounts(data_dir)?;
    let empty = std::fs::metadata(&db_path).map_or(true, |m| m.len() == 0);
    if empty && !found.is_empty() {
        return Err(DataDirError::AllocationDbMissing {
            db: db_path,
            accounts,
            ids: list(&found),
        });
    }
    make_private_db_file(&db_path).map_err(|e| DataDirError::Io(db_path.clone(), e))?;
    let db =
        Db::open_with(&db_path, checkpointer).map_err(|e| DataDirError::Db(db_path.clone(), e))?;
    let known = db
        .read_blocking(meta::account_ids)
        .map_err(|e| DataDirError::Db(db_path.clone(), e))?;
    let orphans = unknown(&found, &known);
    if !orphans.is_empty() {
        let error = if known.is_empty() {
            DataDirError::AllocationDbMissing {
                db: db_path,
                accounts,
                ids: list(&orphans),
            }
        } else {
            DataDirError::UnknownAccounts {
                db: db_path,
                accounts,
                ids: list(&orphans),
            }
        };
        return Err(error);
    }
    Ok(db)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_accounts_are_the_replicas_the_database_does_not_list() {
        assert_eq!(unknown(&[1, 2, 5], &[1, 2, 3]), vec![5]);
        assert_eq!(unknown(&[1], &[]), vec![1]);
        assert!(unknown(&[], &[1]).is_empty());
        assert_eq!(
            list(&(1..=12).collect::<Vec<_>>()),
            "1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 more"
        );
    }

    #[test]
    fn replica_accounts_are_numbered_dirs_with_a_replica_file() {
        let dir = tempfile::tempdir().unwrap();
        let accounts = dir.path().join(ACCOUNTS_DIR);
        for (name, with_file) in [("3", true), ("1", true), ("2", false), ("x", true)] {
            std::fs::create_dir_all(accounts.join(name)).unwrap();
            if with_file {
                std::fs::write(accounts.join(name).join(callsign_tcstore::FILE_NAME), b"").unwrap();
            }
        }
        assert_eq!(replica_accounts(dir.path()).unwrap(), vec![1, 3]);
        assert!(replica_accounts(&dir.path().join("none"))
            .unwrap()
            .is_empty());
    }
}
