//! The Taskwarrior sync data on SQLite: `taskwarrior.sqlite3` in the data dir, beside the
//! allocation database. It holds each account's link (its TaskChampion client id, its secret
//! sealed under the server key, how far the server's replica has applied the chain) and, for
//! TaskChampion's sync protocol, each client's chain of versions and its latest snapshot
//! (`taskchampion_sync_server_core::Storage`).
//!
//! One connection behind a mutex: Taskwarrior syncs are rare and short next to the task
//! traffic, and a transaction of the protocol (read the client, add a version, commit) must
//! see no other writer between its steps. `BEGIN IMMEDIATE` keeps other processes (an admin's
//! `account taskwarrior` while the server runs) out for the same span.
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::Context;
use chrono::{TimeZone, Utc};
use rusqlite::{params, Connection, OptionalExtension};
use rusqlite_migration::{Migrations, M};
use taskchampion_sync_server_core::{Client, Snapshot, Storage, StorageTxn, Version};
use uuid::Uuid;

use crate::alloc::AccountId;
use callsign_storage::{Link, Links};

/// The file, inside the data dir.
pub const FILE_NAME: &str = "taskwarrior.sqlite3";

const SCHEMA: &str = "
CREATE TABLE links (
    account_id  INTEGER PRIMARY KEY,
    client_id   TEXT NOT NULL UNIQUE,
    secret      BLOB NOT NULL,
    created_at  INTEGER NOT NULL,
    applied_op  INTEGER
);
CREATE TABLE clients (
    client_id               TEXT PRIMARY KEY,
    latest_version_id       TEXT NOT NULL,
    snapshot_version_id     TEXT,
    snapshot_timestamp      INTEGER,
    versions_since_snapshot INTEGER,
    snapshot                BLOB
);
CREATE TABLE versions (
    version_id        TEXT PRIMARY KEY,
    client_id         TEXT NOT NULL,
    parent_version_id TEXT NOT NULL,
    history_segment   BLOB NOT NULL,
    UNIQUE (client_id, parent_version_id)
);
";

/// The Taskwarrior sync data of one data dir. Cheap to clone.
#[derive(Clone)]
pub struct SqliteSync {
    con: Arc<Mutex<Connection>>,
}

fn lock(con: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    con.lock().unwrap_or_else(|p| p.into_inner())
}

impl SqliteSync {
    /// Opens (creating and migrating) the file in `data_dir`.
    pub fn open(data_dir: &Path) -> anyhow::Result<SqliteSync> {
        let path = data_dir.join(FILE_NAME);
        crate::datadir::make_private_db_file(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let mut con =
            Connection::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        con.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))?;
        con.pragma_update(None, "synchronous", "FULL")?;
        con.busy_timeout(std::time::Duration::from_secs(5))?;
        Migrations::new(vec![M::up(SCHEMA)])
            .to_latest(&mut con)
            .with_context(|| format!("cannot migrate {}", path.display()))?;
        Ok(SqliteSync {
            con: Arc::new(Mutex::new(con)),
        })
    }

    fn link_where(&self, cond: &str, arg: String) -> anyhow::Result<Option<Link>> {
        let con = lock(&self.con);
        let sql =
            format!("SELECT account_id, client_id, secret, applied_op FROM links WHERE {cond}");
        let found = con
            .query_row(&sql, [arg], |r| {
                Ok((
                    r.get::<_, AccountId>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                ))
            })
            .optional()?;
        found
            .map(|(account, client, sealed_secret, applied_op)| {
                Ok(Link {
                    account,
                    client_id: Uuid::parse_str(&client)?,
                    sealed_secret,
                    applied_op,
                })
            })
            .transpose()
    }
}

/// The seam: awaits `f`, and its error (with its causes) becomes
/// [`callsign_storage::Error::Database`].
async fn seam<T>(f: impl Future<Output = anyhow::Result<T>>) -> callsign_storage::Result<T> {
    f.await
        .map_err(|e| callsign_storage::Error::Database(format!("{e:#}")))
}

/// The data dir has one server process (its lock), so a settle needs no lock beyond the
/// process's own (the server's `Taskwarrior::settling`).
#[async_trait::async_trait]
impl Links for SqliteSync {
    async fn relink(
        &self,
        account: AccountId,
        client_id: Uuid,
        sealed_secret: &[u8],
        now: i64,
    ) -> callsign_storage::Result<()> {
        seam(async {
            let mut con = lock(&self.con);
            let tx = con.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let old: Option<String> = tx
                .query_row(
                    "SELECT client_id FROM links WHERE account_id = ?1",
                    [account],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(old) = old {
                tx.execute("DELETE FROM versions WHERE client_id = ?1", [&old])?;
                tx.execute("DELETE FROM clients WHERE client_id = ?1", [&old])?;
            }
            tx.execute(
                "INSERT OR REPLACE INTO links (account_id, client_id, secret, created_at, applied_op)
                 VALUES (?1, ?2, ?3, ?4, NULL)",
                params![account, client_id.to_string(), sealed_secret, now],
            )?;
            tx.execute(
                "INSERT INTO clients (client_id, latest_version_id) VALUES (?1, ?2)",
                params![client_id.to_string(), Uuid::nil().to_string()],
            )?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    async fn link_by_client(&self, client_id: Uuid) -> callsign_storage::Result<Option<Link>> {
        seam(async { self.link_where("client_id = ?1", client_id.to_string()) }).await
    }

    async fn link_of(&self, account: AccountId) -> callsign_storage::Result<Option<Link>> {
        seam(async { self.link_where("account_id = ?1", account.to_string()) }).await
    }

    async fn set_applied(&self, client_id: Uuid, op: i64) -> callsign_storage::Result<()> {
        seam(async {
            lock(&self.con).execute(
                "UPDATE links SET applied_op = ?2 WHERE client_id = ?1",
                params![client_id.to_string(), op],
            )?;
            Ok(())
        })
        .await
    }

    async fn latest_version(&self, client_id: Uuid) -> callsign_storage::Result<Option<Uuid>> {
        seam(async {
            let con = lock(&self.con);
            let v: Option<String> = con
                .query_row(
                    "SELECT latest_version_id FROM clients WHERE client_id = ?1",
                    [client_id.to_string()],
                    |r| r.get(0),
                )
                .optional()?;
            v.map(|v| Uuid::parse_str(&v).map_err(Into::into))
                .transpose()
        })
        .await
    }

    async fn exclusive(&self, _account: AccountId) -> callsign_storage::Result<Box<dyn Send>> {
        Ok(Box::new(()))
    }
}

#[async_trait::async_trait]
impl Storage for SqliteSync {
    async fn txn(&self, client_id: Uuid) -> anyhow::Result<Box<dyn StorageTxn + '_>> {
        let con = lock(&self.con);
        con.execute_batch("BEGIN IMMEDIATE")?;
        Ok(Box::new(Txn {
            con,
            client_id: client_id.to_string(),
            open: true,
        }))
    }
}

struct Txn<'a> {
    con: MutexGuard<'a, Connection>,
    client_id: String,
    open: bool,
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.con.execute_batch("ROLLBACK");
        }
    }
}

fn uuid(text: String) -> anyhow::Result<Uuid> {
    Ok(Uuid::parse_str(&text)?)
}

impl Txn<'_> {
    fn version(&self, cond: &str, id: Uuid) -> anyhow::Result<Option<Version>> {
        let sql = format!(
            "SELECT version_id, parent_version_id, history_segment FROM versions
             WHERE client_id = ?1 AND {cond} = ?2"
        );
        let row = self
            .con
            .query_row(&sql, [&self.client_id, &id.to_string()], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                ))
            })
            .optional()?;
        row.map(|(v, p, h)| {
            Ok(Version {
                version_id: uuid(v)?,
                parent_version_id: uuid(p)?,
                history_segment: h,
            })
        })
        .transpose()
    }
}

#[async_trait::async_trait(?Send)]
impl StorageTxn for Txn<'_> {
    async fn get_client(&mut self) -> anyhow::Result<Option<Client>> {
        type Row = (String, Option<String>, Option<i64>, Option<u32>);
        let row: Option<Row> = self
            .con
            .query_row(
                "SELECT latest_version_id, snapshot_version_id, snapshot_timestamp,
                        versions_since_snapshot
                 FROM clients WHERE client_id = ?1",
                [&self.client_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let Some((latest, snap_version, snap_at, since)) = row else {
            return Ok(None);
        };
        let snapshot = match (snap_version, snap_at, since) {
            (Some(v), Some(at), Some(since)) => Some(Snapshot {
                version_id: uuid(v)?,
                timestamp: Utc
                    .timestamp_opt(at, 0)
                    .single()
                    .context("snapshot time out of range")?,
                versions_since: since,
            }),
            _ => None,
        };
        Ok(Some(Client {
            latest_version_id: uuid(latest)?,
            snapshot,
        }))
    }

    async fn new_client(&mut self, latest_version_id: Uuid) -> anyhow::Result<()> {
        self.con.execute(
            "INSERT INTO clients (client_id, latest_version_id) VALUES (?1, ?2)",
            params![self.client_id, latest_version_id.to_string()],
        )?;
        Ok(())
    }

    async fn set_snapshot(&mut self, snapshot: Snapshot, data: Vec<u8>) -> anyhow::Result<()> {
        self.con.execute(
            "UPDATE clients SET snapshot_version_id = ?2, snapshot_timestamp = ?3,
                                versions_since_snapshot = ?4, snapshot = ?5
             WHERE client_id = ?1",
            params![
                self.client_id,
                snapshot.version_id.to_string(),
                snapshot.timestamp.timestamp(),
                snapshot.versions_since,
                data
            ],
        )?;
        Ok(())
    }

    async fn get_snapshot_data(&mut self, version_id: Uuid) -> anyhow::Result<Option<Vec<u8>>> {
        let row: Option<(Option<String>, Option<Vec<u8>>)> = self
            .con
            .query_row(
                "SELECT snapshot_version_id, snapshot FROM clients WHERE client_id = ?1",
                [&self.client_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        match row {
            Some((Some(v), Some(data))) if uuid(v.clone())? == version_id => Ok(Some(data)),
            Some((Some(_), Some(_))) => anyhow::bail!("the snapshot is of another version"),
            _ => Ok(None),
        }
    }

    async fn get_version_by_parent(&mut self, parent: Uuid) -> anyhow::Result<Option<Version>> {
        self.version("parent_version_id", parent)
    }

    async fn get_version(&mut self, version_id: Uuid) -> anyhow::Result<Option<Version>> {
        self.version("version_id", version_id)
    }

    async fn add_version(
        &mut self,
        version_id: Uuid,
        parent_version_id: Uuid,
        history_segment: Vec<u8>,
    ) -> anyhow::Result<()> {
        self.con.execute(
            "INSERT INTO versions (version_id, client_id, parent_version_id, history_segment)
             VALUES (?1, ?2, ?3, ?4)",
            params![
                version_id.to_string(),
                self.client_id,
                parent_version_id.to_string(),
                history_segment
            ],
        )?;
        let moved = self.con.execute(
            "UPDATE clients SET latest_version_id = ?2,
                                versions_since_snapshot = versions_since_snapshot + 1
             WHERE client_id = ?1 AND latest_version_id IN (?3, ?4)",
            params![
                self.client_id,
                version_id.to_string(),
                parent_version_id.to_string(),
                Uuid::nil().to_string()
            ],
        )?;
        anyhow::ensure!(
            moved == 1,
            "the chain moved on: {parent_version_id} is not its latest"
        );
        Ok(())
    }

    async fn commit(&mut self) -> anyhow::Result<()> {
        self.con.execute_batch("COMMIT")?;
        self.open = false;
        Ok(())
    }
}
