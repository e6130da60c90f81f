//! An account's replica on PostgreSQL as a TaskChampion [`Storage`], for one thing only: the
//! server's own `Replica::sync` with the account's Taskwarrior chain ([`crate::taskwarrior`]).
//! The task store's writes go through `PgTasks` (tasks.rs); this is TaskChampion's
//! `StorageTxn` over the same `tc_*` tables, each transaction under the same advisory lock
//! (`TASKS_LOCK`, the account), so a sync and the store's writes on any node never interleave.
//!
//! One connection for the whole sync; a transaction TaskChampion drops without committing is
//! rolled back before the next begins, and at the end.
use std::collections::HashSet;

use async_trait::async_trait;
use deadpool_postgres::Object;
use taskchampion::storage::{Storage, StorageTxn, TaskMap};
use taskchampion::{Error, Operation};
use tokio_postgres::types::Json;
use uuid::Uuid;

use super::tasks::{PgTasks, LOCK, TASKS_LOCK};
use callsign_storage::Error as StoreError;
use callsign_storage::{now_ms, AccountId};
use callsign_storage::{ReplicaSyncJob, ReplicaSynced};

type TcResult<T> = std::result::Result<T, Error>;

fn db(e: impl std::fmt::Display) -> Error {
    Error::Database(format!("postgres: {e}"))
}

struct PgReplica {
    client: Object,
    account: AccountId,
    /// A transaction is open on `client`.
    open: bool,
}

impl PgReplica {
    async fn end_open(&mut self) -> TcResult<()> {
        if self.open {
            self.client.batch_execute("ROLLBACK").await.map_err(db)?;
            self.open = false;
        }
        Ok(())
    }

    /// Replaces the log with one that creates every task as it is now, unsynced, and forgets
    /// the base version (as `InlineStorage::restate_operations`). Returns the log's last id.
    async fn restate(&mut self, now: chrono::DateTime<chrono::Utc>) -> TcResult<i64> {
        // Read under the account's lock; the transaction stays open for the rewrite below.
        let mut txn = self.txn().await?;
        let tasks = txn.all_tasks().await?;
        drop(txn);
        let c = &self.client;
        let a = self.account;
        c.execute("DELETE FROM tc_operations WHERE account_id = $1", &[&a])
            .await
            .map_err(db)?;
        c.execute("DELETE FROM tc_sync_meta WHERE account_id = $1", &[&a])
            .await
            .map_err(db)?;
        let (mut uuids, mut data) = (Vec::new(), Vec::new());
        for (uuid, task) in tasks {
            uuids.push(uuid);
            data.push(Json(Operation::Create { uuid }));
            let mut props: Vec<_> = task.into_iter().collect();
            props.sort();
            for (property, value) in props {
                uuids.push(uuid);
                data.push(Json(Operation::Update {
                    uuid,
                    property,
                    old_value: None,
                    value: Some(value),
                    timestamp: now,
                }));
            }
        }
        c.execute(
            "INSERT INTO tc_operations (account_id, uuid, data, created_at)
             SELECT $1, o.uuid, o.data, $4
             FROM unnest($2::uuid[], $3::jsonb[]) WITH ORDINALITY AS o (uuid, data, ord)
             ORDER BY o.ord",
            &[&a, &uuids, &data, &now_ms()],
        )
        .await
        .map_err(db)?;
        c.batch_execute("COMMIT").await.map_err(db)?;
        self.open = false;
        self.last_operation(0).await
    }

    async fn last_operation(&self, at_least: i64) -> TcResult<i64> {
        let r = self
            .client
            .query_one(
                "SELECT coalesce(max(id), 0) FROM tc_operations WHERE account_id = $1",
                &[&self.account],
            )
            .await
            .map_err(db)?;
        Ok(r.get::<_, i64>(0).max(at_least))
    }

    /// The tasks of the operations after `after`, each once, and the log's last id.
    async fn touched_after(&self, after: i64) -> TcResult<ReplicaSynced> {
        let rows = self
            .client
            .query(
                "SELECT id, data FROM tc_operations WHERE account_id = $1 AND id > $2 ORDER BY id",
                &[&self.account, &after],
            )
            .await
            .map_err(db)?;
        let mut seen = HashSet::new();
        let mut touched = Vec::new();
        for r in &rows {
            let Json(op): Json<Operation> = r.get(1);
            if let Some(u) = op.get_uuid() {
                if seen.insert(u) {
                    touched.push(u);
                }
            }
        }
        Ok(ReplicaSynced {
            touched,
            last_op: self.last_operation(after).await?,
        })
    }
}

#[async_trait]
impl Storage for PgReplica {
    async fn txn<'a>(&'a mut self) -> TcResult<Box<dyn StorageTxn + Send + 'a>> {
        self.end_open().await?;
        self.client.batch_execute("BEGIN").await.map_err(db)?;
        self.open = true;
        // The low 32 bits, as the task store's writes take it.
        let key = self.account as i32;
        self.client
            .execute(LOCK, &[&TASKS_LOCK, &key])
            .await
            .map_err(db)?;
        Ok(Box::new(Txn { r: self }))
    }
}

/// The replica, lent to a [`taskchampion::Replica`] for one sync.
#[async_trait]
impl Storage for &mut PgReplica {
    async fn txn<'a>(&'a mut self) -> TcResult<Box<dyn StorageTxn + Send + 'a>> {
        <PgReplica as Storage>::txn(&mut **self).await
    }
}

struct Txn<'a> {
    r: &'a mut PgReplica,
}

impl Txn<'_> {
    fn c(&self) -> &Object {
        &self.r.client
    }

    fn a(&self) -> AccountId {
        self.r.account
    }

    async fn ops(&self, sql: &str, uuid: Option<Uuid>) -> TcResult<Vec<Operation>> {
        let a = self.a();
        let rows = match uuid {
            Some(u) => self.c().query(sql, &[&a, &u]).await,
            None => self.c().query(sql, &[&a]).await,
        }
        .map_err(db)?;
        Ok(rows
            .iter()
            .map(|r| r.get::<_, Json<Operation>>(0).0)
            .collect())
    }

    async fn tasks(&self, sql: &str) -> TcResult<Vec<(Uuid, TaskMap)>> {
        let rows = self.c().query(sql, &[&self.a()]).await.map_err(db)?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), r.get::<_, Json<TaskMap>>(1).0))
            .collect())
    }
}

#[async_trait]
impl StorageTxn for Txn<'_> {
    async fn get_task(&mut self, uuid: Uuid) -> TcResult<Option<TaskMap>> {
        let r = self
            .c()
            .query_opt(
                "SELECT data FROM tc_tasks WHERE account_id = $1 AND uuid = $2",
                &[&self.a(), &uuid],
            )
            .await
            .map_err(db)?;
        Ok(r.map(|r| r.get::<_, Json<TaskMap>>(0).0))
    }

    async fn get_pending_tasks(&mut self) -> TcResult<Vec<(Uuid, TaskMap)>> {
        self.tasks(
            "SELECT t.uuid, t.data FROM tc_tasks t
             WHERE t.account_id = $1 AND t.uuid IN (
                 SELECT uuid FROM tc_working_set WHERE account_id = $1)",
        )
        .await
    }

    async fn create_task(&mut self, uuid: Uuid) -> TcResult<bool> {
        let n = self
            .c()
            .execute(
                "INSERT INTO tc_tasks (account_id, uuid, data) VALUES ($1, $2, '{}')
                 ON CONFLICT DO NOTHING",
                &[&self.a(), &uuid],
            )
            .await
            .map_err(db)?;
        Ok(n == 1)
    }

    async fn set_task(&mut self, uuid: Uuid, task: TaskMap) -> TcResult<()> {
        self.c()
            .execute(
                "INSERT INTO tc_tasks (account_id, uuid, data) VALUES ($1, $2, $3)
                 ON CONFLICT (account_id, uuid) DO UPDATE SET data = EXCLUDED.data",
                &[&self.a(), &uuid, &Json(task)],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn delete_task(&mut self, uuid: Uuid) -> TcResult<bool> {
        let n = self
            .c()
            .execute(
                "DELETE FROM tc_tasks WHERE account_id = $1 AND uuid = $2",
                &[&self.a(), &uuid],
            )
            .await
            .map_err(db)?;
        Ok(n == 1)
    }

    async fn all_tasks(&mut self) -> TcResult<Vec<(Uuid, TaskMap)>> {
        self.tasks("SELECT uuid, data FROM tc_tasks WHERE account_id = $1")
            .await
    }

    async fn all_task_uuids(&mut self) -> TcResult<Vec<Uuid>> {
        let rows = self
            .c()
            .query(
                "SELECT uuid FROM tc_tasks WHERE account_id = $1",
                &[&self.a()],
            )
            .await
            .map_err(db)?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn base_version(&mut self) -> TcResult<Uuid> {
        let r = self
            .c()
            .query_opt(
                "SELECT base_version FROM tc_sync_meta WHERE account_id = $1",
                &[&self.a()],
            )
            .await
            .map_err(db)?;
        Ok(r.map_or_else(Uuid::nil, |r| r.get(0)))
    }

    async fn set_base_version(&mut self, version: Uuid) -> TcResult<()> {
        self.c()
            .execute(
                "INSERT INTO tc_sync_meta (account_id, base_version) VALUES ($1, $2)
                 ON CONFLICT (account_id) DO UPDATE SET base_version = EXCLUDED.base_version",
                &[&self.a(), &version],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn get_task_operations(&mut self, uuid: Uuid) -> TcResult<Vec<Operation>> {
        self.ops(
            "SELECT data FROM tc_operations WHERE account_id = $1 AND uuid = $2 ORDER BY id",
            Some(uuid),
        )
        .await
    }

    async fn unsynced_operations(&mut self) -> TcResult<Vec<Operation>> {
        self.ops(
            "SELECT data FROM tc_operations WHERE account_id = $1 AND NOT synced ORDER BY id",
            None,
        )
        .await
    }

    async fn num_unsynced_operations(&mut self) -> TcResult<usize> {
        let r = self
            .c()
            .query_one(
                "SELECT count(*) FROM tc_operations WHERE account_id = $1 AND NOT synced",
                &[&self.a()],
            )
            .await
            .map_err(db)?;
        Ok(usize::try_from(r.get::<_, i64>(0)).unwrap_or(0))
    }

    async fn add_operation(&mut self, op: Operation) -> TcResult<()> {
        self.c()
            .execute(
                "INSERT INTO tc_operations (account_id, uuid, data, created_at)
                 VALUES ($1, $2, $3, $4)",
                &[&self.a(), &op.get_uuid(), &Json(&op), &now_ms()],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn remove_operation(&mut self, op: Operation) -> TcResult<()> {
        let last = self
            .c()
            .query_opt(
                "SELECT id, data FROM tc_operations WHERE account_id = $1 AND NOT synced
                 ORDER BY id DESC LIMIT 1",
                &[&self.a()],
            )
            .await
            .map_err(db)?;
        if let Some(r) = last {
            let Json(found): Json<Operation> = r.get(1);
            if found == op {
                let id: i64 = r.get(0);
                self.c()
                    .execute(
                        "DELETE FROM tc_operations WHERE account_id = $1 AND id = $2",
                        &[&self.a(), &id],
                    )
                    .await
                    .map_err(db)?;
                return Ok(());
            }
        }
        Err(Error::Database(
            "Last operation does not match -- cannot remove".into(),
        ))
    }

    async fn sync_complete(&mut self) -> TcResult<()> {
        let a = self.a();
        self.c()
            .execute(
                "UPDATE tc_operations SET synced = true WHERE account_id = $1 AND NOT synced",
                &[&a],
            )
            .await
            .map_err(db)?;
        self.c()
            .execute(
                "DELETE FROM tc_operations o WHERE o.account_id = $1 AND o.uuid IS NOT NULL
                 AND NOT EXISTS (SELECT 1 FROM tc_tasks t
                                 WHERE t.account_id = $1 AND t.uuid = o.uuid)",
                &[&a],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn get_working_set(&mut self) -> TcResult<Vec<Option<Uuid>>> {
        let rows = self
            .c()
            .query(
                "SELECT id, uuid FROM tc_working_set WHERE account_id = $1 ORDER BY id",
                &[&self.a()],
            )
            .await
            .map_err(db)?;
        let mut ws: Vec<Option<Uuid>> = vec![None];
        for r in &rows {
            let id = usize::try_from(r.get::<_, i32>(0)).unwrap_or(0);
            if ws.len() <= id {
                ws.resize(id + 1, None);
            }
            ws[id] = Some(r.get(1));
        }
        Ok(ws)
    }

    async fn add_to_working_set(&mut self, uuid: Uuid) -> TcResult<usize> {
        let next = self.get_working_set().await?.len();
        let id = i32::try_from(next).map_err(db)?;
        self.c()
            .execute(
                "INSERT INTO tc_working_set (account_id, id, uuid) VALUES ($1, $2, $3)",
                &[&self.a(), &id, &uuid],
            )
            .await
            .map_err(db)?;
        Ok(next)
    }

    async fn set_working_set_item(&mut self, index: usize, uuid: Option<Uuid>) -> TcResult<()> {
        let id = i32::try_from(index).map_err(db)?;
        let a = self.a();
        match uuid {
            Some(u) => {
                self.c()
                    .execute(
                        "INSERT INTO tc_working_set (account_id, id, uuid) VALUES ($1, $2, $3)
                         ON CONFLICT (account_id, id) DO UPDATE SET uuid = EXCLUDED.uuid",
                        &[&a, &id, &u],
                    )
                    .await
            }
            None => {
                self.c()
                    .execute(
                        "DELETE FROM tc_working_set WHERE account_id = $1 AND id = $2",
                        &[&a, &id],
                    )
                    .await
            }
        }
        .map_err(db)?;
        Ok(())
    }

    async fn clear_working_set(&mut self) -> TcResult<()> {
        self.c()
            .execute(
                "DELETE FROM tc_working_set WHERE account_id = $1",
                &[&self.a()],
            )
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn commit(&mut self) -> TcResult<()> {
        self.r.client.batch_execute("COMMIT").await.map_err(db)?;
        self.r.open = false;
        Ok(())
    }
}

fn store_err(e: Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

impl PgTasks {
    /// [`callsign_storage::TaskStore::sync_replica`] on PostgreSQL. TaskChampion's sync is not
    /// `Send`, so it runs on a blocking thread of its own, driven on this runtime.
    pub(super) async fn sync_replica_pg(
        &self,
        account: AccountId,
        job: ReplicaSyncJob,
    ) -> std::result::Result<ReplicaSynced, StoreError> {
        let client = self
            .pool()
            .get()
            .await
            .map_err(|e| StoreError::Backend(format!("postgres: {e}")))?;
        let rt = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            rt.block_on(async move {
                let mut r = PgReplica {
                    client,
                    account,
                    open: false,
                };
                let res = sync(&mut r, job).await;
                let _ = r.end_open().await;
                res.map_err(store_err)
            })
        })
        .await
        .map_err(|e| StoreError::Backend(e.to_string()))?
    }
}

async fn sync(r: &mut PgReplica, job: ReplicaSyncJob) -> TcResult<ReplicaSynced> {
    let mut after = job.after;
    if job.restate {
        after = r.restate(chrono::Utc::now()).await?;
    }
    let (base, unsynced) = {
        let mut txn = r.txn().await?;
        (
            txn.base_version().await?,
            txn.num_unsynced_operations().await?,
        )
    };
    r.end_open().await?;
    if unsynced > 0 || base != job.latest {
        let mut server: Box<dyn taskchampion::Server> = job.server;
        let mut replica = taskchampion::Replica::new(&mut *r);
        replica.sync(&mut server, false).await?;
    }
    r.end_open().await?;
    r.touched_after(after).await
}
