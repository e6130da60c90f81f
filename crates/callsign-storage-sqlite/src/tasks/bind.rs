//! Which account a replica belongs to: [`bind_replica`], checked on every open.
use std::time::Duration;

use callsign_storage::{AccountId, Error as StoreError};

use super::{backend, Result};

/// Binds the replica `file` to `account` of the allocation database `instance`, or checks the
/// binding it has: a replica is only ever served to the account it was made for.
///
/// The binding is one row in a table of Callsign's own inside the replica
/// (`callsign_replica`; TaskChampion and Taskwarrior ignore tables they do not know). A replica
/// made before bindings existed has none and is bound on its first open. A replica bound to
/// another instance or account is refused ([`StoreError::Foreign`]) and never read.
pub fn bind_replica(file: &std::path::Path, instance: &[u8], account: AccountId) -> Result<()> {
    let conn = rusqlite::Connection::open_with_flags(
        file,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(backend)?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(backend)?;
    let tx = rusqlite::Transaction::new_unchecked(&conn, rusqlite::TransactionBehavior::Immediate)
        .map_err(backend)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS callsign_replica (
             id          INTEGER PRIMARY KEY CHECK (id = 1),
             instance_id BLOB NOT NULL,
             account_id  INTEGER NOT NULL,
             bound_at    INTEGER NOT NULL
         )",
    )
    .map_err(backend)?;
    let found: Option<(Vec<u8>, AccountId)> = rusqlite::OptionalExtension::optional(tx.query_row(
        "SELECT instance_id, account_id FROM callsign_replica WHERE id = 1",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    ))
    .map_err(backend)?;
    match found {
        None => {
            tx.execute(
                "INSERT INTO callsign_replica (id, instance_id, account_id, bound_at)
                 VALUES (1, ?1, ?2, ?3)",
                rusqlite::params![instance, account, callsign_storage::now_ms()],
            )
            .map_err(backend)?;
            tx.commit().map_err(backend)?;
            tracing::info!(account, file = %file.display(), "bound the replica to its account");
            Ok(())
        }
        Some((i, a)) if i == instance && a == account => Ok(()),
        Some((_, found_account)) => {
            let e = StoreError::Foreign {
                path: file.display().to_string(),
                account,
                found_account,
            };
            tracing::error!(error = %e, "refused a replica");
            Err(e)
        }
    }
}
