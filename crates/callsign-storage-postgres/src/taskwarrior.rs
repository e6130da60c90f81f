//! The Taskwarrior sync data on PostgreSQL (`migrations/0006_taskwarrior.sql`): the links
//! and TaskChampion's chains, shared by every node. A transaction of the protocol locks its
//! client's row first (`FOR UPDATE`), so two nodes adding a version on the same parent answer
//! one of them `409` as one node would; a settle holds a session advisory lock on the account
//! ([`Links::exclusive`]), so one node settles an account at a time.
use std::future::Future;

use anyhow::Context;
use chrono::{TimeZone, Utc};
use deadpool_postgres::{Object, Pool};
use taskchampion_sync_server_core::{Client, Snapshot, Storage, StorageTxn, Version};
use uuid::Uuid;

use callsign_storage::AccountId;
use callsign_storage::{Link, Links};

/// The advisory-lock class of Taskwarrior settles, "TW" in ASCII (two-key form, the second key
/// the account's low 32 bits, as the task store's `TASKS_LOCK`).
const SETTLE_LOCK: i32 = 0x5457;

/// The Taskwarrior sync data on a PostgreSQL pool. Cheap to clone.
#[derive(Clone)]
pub struct PgSync {
    pool: Pool,
}

impl PgSync {
    pub fn new(pool: Pool) -> PgSync {
        PgSync { pool }
    }
}

/// Gives a connection back to the pool once whatever transaction it holds is rolled back
/// (on the runtime, as a drop cannot wait); without a runtime the connection is closed.
fn release(client: Object, sql: &'static str) {
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn(async move {
                if client.batch_execute(sql).await.is_err() {
                    drop(Object::take(client));
                }
            });
        }
        Err(_) => drop(Object::take(client)),
    }
}

fn row_link(r: &tokio_postgres::Row) -> Link {
    Link {
        account: r.get(0),
        client_id: r.get(1),
        sealed_secret: r.get(2),
        applied_op: r.get(3),
    }
}

const LINK_COLUMNS: &str = "SELECT account_id, client_id, secret, applied_op FROM tw_links";

/// The settle lock's holder: unlocks (and returns the connection) when dropped.
struct Held(Option<Object>);

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            release(client, "SELECT pg_advisory_unlock_all()");
        }
    }
}

/// The seam: awaits `f`, and its error (with its causes) becomes
/// [`callsign_storage::Error::Database`].
async fn seam<T>(f: impl Future<Output = anyhow::Result<T>>) -> callsign_storage::Result<T> {
    f.await
        .map_err(|e| callsign_storage::Error::Database(format!("{e:#}")))
}

#[async_trait::async_trait]
impl Links for PgSync {
    async fn relink(
        &self,
        account: AccountId,
        client_id: Uuid,
        sealed_secret: &[u8],
        now: i64,
    ) -> callsign_storage::Result<()> {
        seam(async {
            let mut c = self.pool.get().await?;
            let tx = c.transaction().await?;
            let old = tx
                .query_opt(
                    "SELECT client_id FROM tw_links WHERE account_id = $1 FOR UPDATE",
                    &[&account],
                )
                .await?;
            if let Some(old) = old {
                let old: Uuid = old.get(0);
                tx.execute("DELETE FROM tw_versions WHERE client_id = $1", &[&old])
                    .await?;
                tx.execute("DELETE FROM tw_clients WHERE client_id = $1", &[&old])
                    .await?;
            }
            tx.execute(
                "INSERT INTO tw_links (account_id, client_id, secret, created_at, applied_op)
                 VALUES ($1, $2, $3, $4, NULL)
                 ON CONFLICT (account_id) DO UPDATE SET client_id = EXCLUDED.client_id,
                     secret = EXCLUDED.secret, created_at = EXCLUDED.created_at, applied_op = NULL",
                &[&account, &client_id, &sealed_secret, &now],
            )
            .await?;
            tx.execute(
                "INSERT INTO tw_clients (client_id, latest_version_id) VALUES ($1, $2)",
                &[&client_id, &Uuid::nil()],
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn link_by_client(&self, client_id: Uuid) -> callsign_storage::Result<Option<Link>> {
        seam(async {
            let c = self.pool.get().await?;
            let sql = format!("{LINK_COLUMNS} WHERE client_id = $1");
            Ok(c.query_opt(&sql, &[&client_id])
                .await?
                .as_ref()
                .map(row_link))
        })
        .await
    }

    async fn link_of(&self, account: AccountId) -> callsign_storage::Result<Option<Link>> {
        seam(async {
            let c = self.pool.get().await?;
            let sql = format!("{LINK_COLUMNS} WHERE account_id = $1");
            Ok(c.query_opt(&sql, &[&account]).await?.as_ref().map(row_link))
        })
        .await
    }

    async fn set_applied(&self, client_id: Uuid, op: i64) -> callsign_storage::Result<()> {
        seam(async {
            let c = self.pool.get().await?;
            c.execute(
                "UPDATE tw_links SET applied_op = $2 WHERE client_id = $1",
                &[&client_id, &op],
            )
            .await?;
            Ok(())
        })
        .await
    }

    async fn latest_version(&self, client_id: Uuid) -> callsign_storage::Result<Option<Uuid>> {
        seam(async {
            let c = self.pool.get().await?;
            Ok(c.query_opt(
                "SELECT latest_version_id FROM tw_clients WHERE client_id = $1",
                &[&client_id],
            )
            .await?
            .map(|r| r.get(0)))
        })
        .await
    }

    async fn exclusive(&self, account: AccountId) -> callsign_storage::Result<Box<dyn Send>> {
        seam(async {
            let c = self.pool.get().await?;
            // The account's low 32 bits, as the lock's second key.
            let low = account as i32;
            c.execute(
                "SELECT pg_advisory_lock($1::int4, $2::int4)",
                &[&SETTLE_LOCK, &low],
            )
            .await
            .context("taking the settle lock")?;
            Ok(Box::new(Held(Some(c))) as Box<dyn Send>)
        })
        .await
    }
}

#[async_trait::async_trait]
impl Storage for PgSync {
    async fn txn(&self, client_id: Uuid) -> anyhow::Result<Box<dyn StorageTxn + '_>> {
        let client = self.pool.get().await?;
        client.batch_execute("BEGIN").await?;
        Ok(Box::new(Txn {
            client: Some(client),
            client_id,
        }))
    }
}

struct Txn {
    /// `None` once committed.
    client: Option<Object>,
    client_id: Uuid,
}

impl Drop for Txn {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            release(c, "ROLLBACK");
        }
    }
}

impl Txn {
    fn c(&self) -> anyhow::Result<&Object> {
        self.client.as_ref().context("the transaction is over")
    }

    async fn version(&self, column: &str, id: Uuid) -> anyhow::Result<Option<Version>> {
        let sql = format!(
            "SELECT version_id, parent_version_id, history_segment FROM tw_versions
             WHERE client_id = $1 AND {column} = $2"
        );
        Ok(self
            .c()?
            .query_opt(&sql, &[&self.client_id, &id])
            .await?
            .map(|r| Version {
                version_id: r.get(0),
                parent_version_id: r.get(1),
                history_segment: r.get(2),
            }))
    }
}

#[async_trait::async_trait(?Send)]
impl StorageTxn for Txn {
    async fn get_client(&mut self) -> anyhow::Result<Option<Client>> {
        let row = self
            .c()?
            .query_opt(
                "SELECT latest_version_id, snapshot_version_id, snapshot_timestamp,
                        versions_since_snapshot
                 FROM tw_clients WHERE client_id = $1 FOR UPDATE",
                &[&self.client_id],
            )
            .await?;
        let Some(r) = row else { return Ok(None) };
        let snap: (Option<Uuid>, Option<i64>, Option<i32>) = (r.get(1), r.get(2), r.get(3));
        let snapshot = match snap {
            (Some(version_id), Some(at), Some(since)) => Some(Snapshot {
                version_id,
                timestamp: Utc
                    .timestamp_opt(at, 0)
                    .single()
                    .context("snapshot time out of range")?,
                versions_since: u32::try_from(since).unwrap_or(0),
            }),
            _ => None,
        };
        Ok(Some(Client {
            latest_version_id: r.get(0),
            snapshot,
        }))
    }

    async fn new_client(&mut self, latest_version_id: Uuid) -> anyhow::Result<()> {
        self.c()?
            .execute(
                "INSERT INTO tw_clients (client_id, latest_version_id) VALUES ($1, $2)",
                &[&self.client_id, &latest_version_id],
            )
            .await?;
        Ok(())
    }

    async fn set_snapshot(&mut self, snapshot: Snapshot, data: Vec<u8>) -> anyhow::Result<()> {
        let since = i32::try_from(snapshot.versions_since).unwrap_or(i32::MAX);
        self.c()?
            .execute(
                "UPDATE tw_clients SET snapshot_version_id = $2, snapshot_timestamp = $3,
                                       versions_since_snapshot = $4, snapshot = $5
                 WHERE client_id = $1",
                &[
                    &self.client_id,
                    &snapshot.version_id,
                    &snapshot.timestamp.timestamp(),
                    &since,
                    &data,
                ],
            )
            .await?;
        Ok(())
    }

    async fn get_snapshot_data(&mut self, version_id: Uuid) -> anyhow::Result<Option<Vec<u8>>> {
        let row = self
            .c()?
            .query_opt(
                "SELECT snapshot_version_id, snapshot FROM tw_clients WHERE client_id = $1",
                &[&self.client_id],
            )
            .await?;
        match row.map(|r| (r.get::<_, Option<Uuid>>(0), r.get::<_, Option<Vec<u8>>>(1))) {
            Some((Some(v), Some(data))) if v == version_id => Ok(Some(data)),
            Some((Some(_), Some(_))) => anyhow::bail!("the snapshot is of another version"),
            _ => Ok(None),
        }
    }

    async fn get_version_by_parent(&mut self, parent: Uuid) -> anyhow::Result<Option<Version>> {
        self.version("parent_version_id", parent).await
    }

    async fn get_version(&mut self, version_id: Uuid) -> anyhow::Result<Option<Version>> {
        self.version("version_id", version_id).await
    }

    async fn add_version(
        &mut self,
        version_id: Uuid,
        parent_version_id: Uuid,
        history_segment: Vec<u8>,
    ) -> anyhow::Result<()> {
        let c = self.c()?;
        c.execute(
            "INSERT INTO tw_versions (version_id, client_id, parent_version_id, history_segment)
             VALUES ($1, $2, $3, $4)",
            &[
                &version_id,
                &self.client_id,
                &parent_version_id,
                &history_segment,
            ],
        )
        .await?;
        let moved = c
            .execute(
                "UPDATE tw_clients SET latest_version_id = $2,
                                       versions_since_snapshot = versions_since_snapshot + 1
                 WHERE client_id = $1 AND latest_version_id IN ($3, $4)",
                &[
                    &self.client_id,
                    &version_id,
                    &parent_version_id,
                    &Uuid::nil(),
                ],
            )
            .await?;
        anyhow::ensure!(
            moved == 1,
            "the chain moved on: {parent_version_id} is not its latest"
        );
        Ok(())
    }

    async fn commit(&mut self) -> anyhow::Result<()> {
        let c = self.client.take().context("the transaction is over")?;
        c.batch_execute("COMMIT").await?;
        Ok(())
    }
}
