//! [`TaskStore`] on PostgreSQL: TaskChampion's replica model, one replica per account, in the
//! `tc_*` tables (`migrations/0002_tasks.sql`), shared by any number of server nodes.
//!
//! **One transaction per call.** A write (`create`, `update`, `set_keys`) is one PostgreSQL
//! transaction that first takes `pg_advisory_xact_lock(TASKS_LOCK, account)`, then reads the
//! tasks it names, builds TaskChampion operations on them with the model both task stores share
//! (`callsign_storage::model`'s `create`, `update` and `set_keys`, through `TaskData::update`),
//! and applies them (`apply`) with the effect of `Replica::commit_operations`: the tasks
//! written, a task whose status becomes pending (or recurring) added to the working set at the
//! next index, every operation appended to the log in order. Because the read that decides
//! "this UUID exists already" runs under the lock, a create of an existing task is a no-op on
//! every node, and no two nodes ever race for one account's working-set indexes or log order.
//! Any error rolls the whole call back; the caller sees it as [`StoreError::Backend`].
//!
//! **Why not TaskChampion's `Replica` over a `Storage` on these tables.** `Replica` reads
//! tasks in transactions of their own and commits in another, so that read would not be under
//! the commit's lock: two nodes creating one UUID would both write their properties, the later
//! overwriting the earlier, and each would answer with its own. And every `StorageTxn` call
//! is a round trip to the database (about 25 for one created task; `commit_operations` also
//! reads the whole working set each time), where a call here is a fixed number of statements
//! whatever its size (arrays through `unnest`; the writes pipelined). The tables are
//! TaskChampion's (tasks, operations with `synced`, working set, the base version in
//! `tc_sync_meta`) with TaskChampion's encodings (a task's `TaskMap` as a JSON object, an
//! `Operation` as serde writes it), so a `Storage` over them, for TaskChampion's sync protocol,
//! can come later without moving data; `apply` is tested against `Replica::commit_operations`.
//!
//! Not done here yet (the SQLite store does both): trimming the log past
//! `--history-retention`, and compacting a working set that outgrew its pending tasks.
use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use callsign_core::dto::{NewTask, TaskPatch};
use deadpool_postgres::{GenericClient, Pool, Transaction};
use taskchampion::storage::TaskMap;
use taskchampion::{Operation, Operations};
use tokio_postgres::types::Json;
use uuid::Uuid;

use callsign_storage::model::{self as store, Failing, Group, Snapshot};
use callsign_storage::Error as StoreError;
use callsign_storage::TaskStore;
use callsign_storage::{now_ms, AccountId};

type Result<T> = std::result::Result<T, StoreError>;

/// The advisory-lock class of task-store writes, "TC" in ASCII. The two-key form's keys never
/// meet the single-key locks (migrations, the window); the second key is the account's low 32
/// bits, so accounts 2^32 apart share a lock, which only serializes their writes.
pub(super) const TASKS_LOCK: i32 = 0x5443;

pub(super) const LOCK: &str = "SELECT pg_advisory_xact_lock($1::int4, $2::int4)";
const LOAD: &str = "SELECT uuid, data FROM tc_tasks WHERE account_id = $1 AND uuid = ANY($2)";
const UPSERT: &str = "INSERT INTO tc_tasks (account_id, uuid, data)
     SELECT $1, t.uuid, t.data FROM unnest($2::uuid[], $3::jsonb[]) AS t (uuid, data)
     ON CONFLICT (account_id, uuid) DO UPDATE SET data = EXCLUDED.data";
const DELETE: &str = "DELETE FROM tc_tasks WHERE account_id = $1 AND uuid = ANY($2)";
/// Adds the tasks not in the working set yet, in order, after its largest index (as
/// TaskChampion's `add_to_working_set`: `max(id) + 1`). Safe only under the account's lock.
const JOIN_WORKING_SET: &str = "WITH joining AS (
         SELECT j.uuid, j.ord FROM unnest($2::uuid[]) WITH ORDINALITY AS j (uuid, ord)
         WHERE NOT EXISTS (
             SELECT 1 FROM tc_working_set w WHERE w.account_id = $1 AND w.uuid = j.uuid))
     INSERT INTO tc_working_set (account_id, id, uuid)
     SELECT $1,
            ((SELECT coalesce(max(id), 0) FROM tc_working_set WHERE account_id = $1)
              + row_number() OVER (ORDER BY ord))::int4,
            uuid
     FROM joining";
/// Appends to the log in the operations' order (the rows are produced, and their ids drawn,
/// in ordinality order).
const LOG: &str = "INSERT INTO tc_operations (account_id, uuid, data, created_at)
     SELECT $1, o.uuid, o.data, $4
     FROM unnest($2::uuid[], $3::jsonb[]) WITH ORDINALITY AS o (uuid, data, ord)
     ORDER BY o.ord";

/// The task store on PostgreSQL. Cheap to clone; holds no state of an account between calls.
#[derive(Clone)]
pub struct PgTasks {
    pool: Pool,
    failing: Failing,
}

/// A database or pool error, with its causes (tokio-postgres prints only "db error" for a
/// statement the server refused; the cause holds the server's message).
fn pg(e: impl std::error::Error) -> StoreError {
    let mut msg = format!("postgres: {e}");
    let mut cause = e.source();
    while let Some(c) = cause {
        msg.push_str(&format!(": {c}"));
        cause = c.source();
    }
    StoreError::Backend(msg)
}

impl PgTasks {
    pub fn new(pool: Pool) -> PgTasks {
        PgTasks {
            pool,
            failing: Failing::default(),
        }
    }

    /// The connection pool it runs on.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// One write: under the account's lock, reads `uuids` into a `Group`, lets `build` add
    /// its operations, applies them and commits. Returns what `build` returned.
    async fn write<T: Send>(
        &self,
        account: AccountId,
        uuids: Vec<Uuid>,
        build: impl FnOnce(&mut Group) -> T + Send,
    ) -> Result<T> {
        let res = async {
            let mut client = self.pool.get().await.map_err(pg)?;
            let tx = client.transaction().await.map_err(pg)?;
            lock(&tx, account).await?;
            let stored = load(&tx, account, &uuids).await?;
            let mut group = Group::default();
            for u in uuids {
                let task = stored
                    .get(&u)
                    .map(|m| callsign_tcstore::task_data(u, m.clone()));
                group.tasks.insert(u, task);
            }
            let out = build(&mut group);
            if !group.ops.is_empty() {
                let known = group
                    .tasks
                    .keys()
                    .map(|u| (*u, stored.get(u).cloned()))
                    .collect();
                apply(&tx, account, &group.ops, known, now_ms()).await?;
            }
            tx.commit().await.map_err(pg)?;
            Ok(out)
        }
        .await;
        self.failing.record(account, &res);
        res
    }
}

async fn lock(tx: &Transaction<'_>, account: AccountId) -> Result<()> {
    let stmt = tx.prepare_cached(LOCK).await.map_err(pg)?;
    // The low 32 bits (see TASKS_LOCK).
    let key = account as i32;
    tx.execute(&stmt, &[&TASKS_LOCK, &key]).await.map_err(pg)?;
    Ok(())
}

/// The stored tasks among `uuids` (absent ones are not in the map).
async fn load(
    c: &impl GenericClient,
    account: AccountId,
    uuids: &[Uuid],
) -> Result<HashMap<Uuid, TaskMap>> {
    if uuids.is_empty() {
        return Ok(HashMap::new());
    }
    let stmt = c.prepare_cached(LOAD).await.map_err(pg)?;
    let rows = c.query(&stmt, &[&account, &uuids]).await.map_err(pg)?;
    rows.iter()
        .map(|r| {
            let uuid: Uuid = r.try_get(0).map_err(pg)?;
            let Json(task): Json<TaskMap> = r.try_get(1).map_err(pg)?;
            Ok((uuid, task))
        })
        .collect()
}

/// TaskChampion's rule (`Replica::commit_operations`): a task joins the working set when its
/// status becomes pending or recurring from anything else.
fn joins_working_set(op: &Operation) -> bool {
    let active = |v: &Option<String>| matches!(v.as_deref(), Some("pending" | "recurring"));
    matches!(op, Operation::Update { property, old_value, value, .. }
        if property == "status" && !active(old_value) && active(value))
}

/// Commits `ops` into the account's tables inside `tx` (which holds the account's lock), with
/// the effect of TaskChampion's `Replica::commit_operations`: operations applied as its
/// `apply_operations` does (a create of an existing task and an update of a missing one do
/// nothing), the tasks joining the working set added once each, and every operation logged.
/// `known` holds the stored state (`None`: absent) of tasks this transaction read already;
/// others the operations name are read here.
async fn apply(
    tx: &Transaction<'_>,
    account: AccountId,
    ops: &Operations,
    mut known: HashMap<Uuid, Option<TaskMap>>,
    now: i64,
) -> Result<()> {
    let unread: Vec<Uuid> = ops
        .iter()
        .filter_map(Operation::get_uuid)
        .filter(|u| !known.contains_key(u))
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let mut read = load(tx, account, &unread).await?;
    for u in unread {
        known.insert(u, read.remove(&u));
    }
    let existed: HashSet<Uuid> = known
        .iter()
        .filter(|(_, t)| t.is_some())
        .map(|(u, _)| *u)
        .collect();
    let mut tasks = known;
    let mut touched = HashSet::new();
    for op in ops {
        match op {
            Operation::Create { uuid } => {
                let task = tasks.entry(*uuid).or_default();
                if task.is_none() {
                    *task = Some(TaskMap::new());
                    touched.insert(*uuid);
                }
            }
            Operation::Delete { uuid, .. } => {
                tasks.insert(*uuid, None);
                touched.insert(*uuid);
            }
            Operation::Update {
                uuid,
                property,
                value,
                ..
            } => {
                if let Some(Some(task)) = tasks.get_mut(uuid) {
                    match value {
                        Some(v) => task.insert(property.clone(), v.clone()),
                        None => task.remove(property),
                    };
                    touched.insert(*uuid);
                }
            }
            Operation::UndoPoint => {}
        }
    }
    let (mut upsert_ids, mut upsert_data, mut deleted) = (Vec::new(), Vec::new(), Vec::new());
    for u in &touched {
        match &tasks[u] {
            Some(task) => {
                upsert_ids.push(*u);
                upsert_data.push(Json(task));
            }
            None if existed.contains(u) => deleted.push(*u),
            None => {}
        }
    }
    let mut seen = HashSet::new();
    let joining: Vec<Uuid> = ops
        .iter()
        .filter(|op| joins_working_set(op))
        .filter_map(Operation::get_uuid)
        .filter(|u| seen.insert(*u))
        .collect();
    let op_uuids: Vec<Option<Uuid>> = ops.iter().map(Operation::get_uuid).collect();
    let op_data: Vec<Json<&Operation>> = ops.iter().map(Json).collect();

    // Independent statements, sent together (tokio-postgres pipelines them on the connection).
    let upsert = async {
        if !upsert_ids.is_empty() {
            let stmt = tx.prepare_cached(UPSERT).await?;
            tx.execute(&stmt, &[&account, &upsert_ids, &upsert_data])
                .await?;
        }
        Ok(())
    };
    let delete = async {
        if !deleted.is_empty() {
            let stmt = tx.prepare_cached(DELETE).await?;
            tx.execute(&stmt, &[&account, &deleted]).await?;
        }
        Ok(())
    };
    let join = async {
        if !joining.is_empty() {
            let stmt = tx.prepare_cached(JOIN_WORKING_SET).await?;
            tx.execute(&stmt, &[&account, &joining]).await?;
        }
        Ok(())
    };
    let log = async {
        let stmt = tx.prepare_cached(LOG).await?;
        tx.execute(&stmt, &[&account, &op_uuids, &op_data, &now])
            .await?;
        Ok::<_, tokio_postgres::Error>(())
    };
    tokio::try_join!(upsert, delete, join, log).map_err(pg)?;
    Ok(())
}

#[async_trait]
impl TaskStore for PgTasks {
    /// Creates each task that does not exist yet (one transaction for all); returns every
    /// task's current content, in order.
    async fn create(
        &self,
        account: AccountId,
        tasks: Vec<(Uuid, NewTask)>,
    ) -> Result<Vec<Snapshot>> {
        let uuids = tasks.iter().map(|(u, _)| *u).collect();
        self.write(account, uuids, |g| store::create(g, tasks))
            .await
    }

    /// Applies patches (one transaction for all); `None` for a task that does not exist.
    async fn update(
        &self,
        account: AccountId,
        work: Vec<(Uuid, TaskPatch)>,
    ) -> Result<Vec<Option<Snapshot>>> {
        let uuids = work.iter().map(|(u, _)| *u).collect();
        self.write(account, uuids, |g| store::update(g, work)).await
    }

    /// Writes `key` onto existing tasks (one transaction for all; nothing is written or logged
    /// for a task that has its key already); missing tasks are skipped.
    async fn set_keys(&self, account: AccountId, keys: Vec<(Uuid, String)>) -> Result<()> {
        let uuids = keys.iter().map(|(u, _)| *u).collect();
        self.write(account, uuids, |g| store::set_keys(g, keys))
            .await
    }

    /// Reads outside any transaction (one statement sees one snapshot).
    async fn get(&self, account: AccountId, uuids: Vec<Uuid>) -> Result<Vec<Option<Snapshot>>> {
        let res = async {
            let client = self.pool.get().await.map_err(pg)?;
            let stored = load(&client, account, &uuids).await?;
            Ok(uuids
                .iter()
                .map(|u| {
                    let task = callsign_tcstore::task_data(*u, stored.get(u)?.clone());
                    Some(Snapshot::of(&task))
                })
                .collect())
        }
        .await;
        self.failing.record(account, &res);
        res
    }

    /// The pool is open (a broken database shows as accounts whose last call failed).
    fn health(&self) -> (bool, Vec<(AccountId, String)>) {
        (!self.pool.is_closed(), self.failing.list())
    }

    async fn sync_replica(
        &self,
        account: AccountId,
        job: callsign_storage::ReplicaSyncJob,
    ) -> Result<callsign_storage::ReplicaSynced> {
        let res = self.sync_replica_pg(account, job).await;
        self.failing.record(account, &res);
        res
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use callsign_core::dto::TaskStatus;
    use taskchampion::storage::AccessMode;
    use taskchampion::{Replica, SqliteStorage, TaskData};

    use super::*;

    /// A fresh schema on the test PostgreSQL, migrated, and a pool on it (`None`: skip).
    async fn fresh(label: &str) -> Option<Pool> {
        Some(fresh_url(label).await?.0)
    }

    /// [`fresh`], and the schema's URL (for another node's pool).
    async fn fresh_url(label: &str) -> Option<(Pool, String)> {
        let pg = callsign_pgtest::shared()?;
        let url = pg.fresh_schema(label).await.unwrap();
        let pool = crate::pool(&url, 4).unwrap();
        crate::migrate(&pool).await.unwrap();
        Some((pool, url))
    }

    fn new_task(description: &str) -> NewTask {
        NewTask::new("syn", description)
    }

    /// Everything of an account's replica a TaskChampion reader sees.
    #[derive(Debug, PartialEq)]
    struct View {
        tasks: BTreeMap<Uuid, BTreeMap<String, String>>,
        working_set: Vec<(usize, Uuid)>,
        /// Each task's operations, in log order.
        operations: BTreeMap<Uuid, Vec<Operation>>,
        /// Operations other than UndoPoints, and UndoPoints.
        logged: usize,
        undo_points: usize,
    }

    async fn pg_view(pool: &Pool, account: AccountId) -> View {
        let c = pool.get().await.unwrap();
        let mut tasks = BTreeMap::new();
        for r in c
            .query(
                "SELECT uuid, data FROM tc_tasks WHERE account_id = $1",
                &[&account],
            )
            .await
            .unwrap()
        {
            let Json(task): Json<TaskMap> = r.get(1);
            tasks.insert(r.get(0), task.into_iter().collect());
        }
        let working_set = c
            .query(
                "SELECT id, uuid FROM tc_working_set WHERE account_id = $1 ORDER BY id",
                &[&account],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get::<_, i32>(0) as usize, r.get(1)))
            .collect();
        let mut operations: BTreeMap<Uuid, Vec<Operation>> = BTreeMap::new();
        let (mut logged, mut undo_points) = (0, 0);
        for r in c
            .query(
                "SELECT uuid, data FROM tc_operations WHERE account_id = $1 ORDER BY id",
                &[&account],
            )
            .await
            .unwrap()
        {
            let Json(op): Json<Operation> = r.get(1);
            assert_eq!(r.get::<_, Option<Uuid>>(0), op.get_uuid(), "uuid column");
            match op.get_uuid() {
                Some(u) => {
                    operations.entry(u).or_default().push(op);
                    logged += 1;
                }
                None => undo_points += 1,
            }
        }
        View {
            tasks,
            working_set,
            operations,
            logged,
            undo_points,
        }
    }

    async fn tc_view(r: &mut Replica<SqliteStorage>, uuids: &[Uuid]) -> View {
        let tasks = r
            .all_task_data()
            .await
            .unwrap()
            .into_iter()
            .map(|(u, t)| (u, t.iter().map(|(k, v)| (k.clone(), v.clone())).collect()))
            .collect();
        let mut operations = BTreeMap::new();
        for &u in uuids {
            let ops: Vec<Operation> = r
                .get_task_operations(u)
                .await
                .unwrap()
                .into_iter()
                .collect();
            if !ops.is_empty() {
                operations.insert(u, ops);
            }
        }
        View {
            tasks,
            working_set: r.working_set().await.unwrap().iter().collect(),
            operations,
            logged: r.num_local_operations().await.unwrap(),
            undo_points: r.num_undo_points().await.unwrap(),
        }
    }

    /// The checks of the conformance suite's `the_task_store_keeps_tasks`, on PgTasks alone
    /// (accounts are plain ids here), plus a UUID given twice in one call.
    #[tokio::test]
    async fn it_keeps_tasks_as_the_conformance_suite_asks() {
        let Some(pool) = fresh("pgtasks_keeps").await else {
            return;
        };
        let tasks = PgTasks::new(pool);
        let (a, other) = (1, 2);
        let u = Uuid::new_v4();
        let mut body = new_task("write the report");
        body.notes = "by friday".into();
        body.tags = vec!["work".into(), "alpha".into()];
        let made = tasks
            .create(a, vec![(u, body.clone()), (u, new_task("twice"))])
            .await
            .unwrap();
        assert_eq!(made[0], made[1], "the second is the task the first made");
        let s = &made[0];
        assert_eq!(s.uuid, u);
        assert_eq!(s.description, "write the report");
        assert_eq!(s.notes, "by friday");
        assert_eq!(s.tags, ["alpha", "work"]);
        assert_eq!(s.status, TaskStatus::Pending);
        assert_eq!(s.key, None);
        let again = tasks.create(a, vec![(u, new_task("other"))]).await.unwrap();
        assert_eq!(&again[0], s, "creating it again changes nothing");
        tasks.set_keys(a, vec![(u, "SYN-1".into())]).await.unwrap();
        let patch = TaskPatch {
            status: Some(TaskStatus::Completed),
            tags: Some(vec!["done".into()]),
            ..TaskPatch::default()
        };
        let s = tasks
            .update(a, vec![(u, patch.clone()), (Uuid::new_v4(), patch.clone())])
            .await
            .unwrap();
        assert!(s[1].is_none(), "a task the store does not hold");
        let s = s[0].clone().unwrap();
        assert!(s.reflects(&patch));
        let got = tasks.get(a, vec![u, Uuid::new_v4(), u]).await.unwrap();
        assert_eq!(got[0].as_ref(), Some(&s));
        assert_eq!(got[2].as_ref(), Some(&s));
        assert_eq!(s.key.as_deref(), Some("SYN-1"));
        assert_eq!(s.status, TaskStatus::Completed);
        assert_eq!(s.tags, ["done"]);
        assert!(got[1].is_none());
        assert!(
            tasks.get(other, vec![u]).await.unwrap()[0].is_none(),
            "accounts are apart"
        );
        assert!(tasks.update(other, vec![(u, patch)]).await.unwrap()[0].is_none());
        assert_eq!(tasks.health(), (true, Vec::new()));
    }

    /// The log holds every operation of the account in order; a task joins the working set
    /// when it becomes pending (created pending, or moved back to pending), once; a key write
    /// that changes nothing logs nothing.
    #[tokio::test]
    async fn operations_are_logged_and_pending_tasks_join_the_working_set() {
        let Some(pool) = fresh("pgtasks_log").await else {
            return;
        };
        let tasks = PgTasks::new(pool.clone());
        let (pending, done) = (Uuid::new_v4(), Uuid::new_v4());
        let mut completed = new_task("done already");
        completed.status = Some(TaskStatus::Completed);
        tasks
            .create(7, vec![(pending, new_task("open")), (done, completed)])
            .await
            .unwrap();
        let v = pg_view(&pool, 7).await;
        assert_eq!(v.working_set, [(1, pending)]);
        let ops = &v.operations[&done];
        assert_eq!(ops[0], Operation::Create { uuid: done });
        assert!(ops.iter().any(|op| matches!(op,
            Operation::Update { property, value: Some(v), .. }
                if property == "status" && v == "completed")));
        assert_eq!(v.tasks[&done]["status"], "completed");
        assert!(v.tasks[&done].contains_key("end"));

        tasks
            .set_keys(7, vec![(pending, "SYN-1".into())])
            .await
            .unwrap();
        let logged = pg_view(&pool, 7).await.logged;
        tasks
            .set_keys(7, vec![(pending, "SYN-1".into())])
            .await
            .unwrap();
        assert_eq!(pg_view(&pool, 7).await.logged, logged, "nothing to write");

        let to = |status| TaskPatch {
            status: Some(status),
            ..TaskPatch::default()
        };
        let work = vec![
            (done, to(TaskStatus::Pending)),
            (pending, to(TaskStatus::Completed)),
        ];
        tasks.update(7, work).await.unwrap();
        tasks
            .update(7, vec![(pending, to(TaskStatus::Pending))])
            .await
            .unwrap();
        let v = pg_view(&pool, 7).await;
        assert_eq!(v.working_set, [(1, pending), (2, done)], "each once");
        assert!(!v.tasks[&done].contains_key("end"), "pending again");
        assert_eq!(v.tasks[&pending]["key"], "SYN-1");
        let back = v.operations[&pending]
            .iter()
            .rev()
            .find(|op| matches!(op, Operation::Update { property, .. } if property == "status"));
        assert!(
            matches!(back, Some(Operation::Update { old_value: Some(o), value: Some(v), .. })
                if o == "completed" && v == "pending"),
            "the last status change logged: {back:?}"
        );
        assert!(
            pg_view(&pool, 8).await.tasks.is_empty(),
            "accounts are apart"
        );
    }

    /// A small deterministic generator (xorshift64*), so a failing sequence replays.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
        }
    }

    const STATUSES: [&str; 4] = ["pending", "completed", "deleted", "recurring"];

    /// One random batch of operations built on `r`'s tasks: creates (some of a UUID that
    /// exists), status and project changes, deletes, a delete and create of one UUID.
    async fn batch(
        r: &mut Replica<SqliteStorage>,
        uuids: &mut Vec<Uuid>,
        rng: &mut Rng,
    ) -> Operations {
        let mut ops = vec![Operation::UndoPoint];
        for _ in 0..1 + rng.below(6) {
            let pick = if uuids.is_empty() { 0 } else { rng.below(11) };
            let existing = (!uuids.is_empty()).then(|| uuids[rng.below(uuids.len())]);
            match pick {
                0..=3 => {
                    let uuid = match (rng.below(5), existing) {
                        (0, Some(u)) => u,
                        _ => Uuid::new_v4(),
                    };
                    let mut t = TaskData::create(uuid, &mut ops);
                    t.update(
                        "description",
                        Some(format!("task {}", uuids.len())),
                        &mut ops,
                    );
                    let status = match rng.below(3) {
                        0 => STATUSES[rng.below(STATUSES.len())],
                        _ => "pending",
                    };
                    t.update("status", Some(status.into()), &mut ops);
                    uuids.push(uuid);
                }
                4..=7 => {
                    if let Some(mut t) = r.get_task_data(existing.unwrap()).await.unwrap() {
                        let status = STATUSES[rng.below(STATUSES.len())].to_string();
                        t.update("status", Some(status), &mut ops);
                        t.update("project", Some(format!("p{}", rng.below(4))), &mut ops);
                        if rng.below(3) == 0 {
                            t.update("project", None, &mut ops);
                        }
                    }
                }
                8 | 9 => {
                    if let Some(mut t) = r.get_task_data(existing.unwrap()).await.unwrap() {
                        t.delete(&mut ops);
                    }
                }
                _ => {
                    let uuid = existing.unwrap();
                    if let Some(mut t) = r.get_task_data(uuid).await.unwrap() {
                        t.delete(&mut ops);
                        let mut t = TaskData::create(uuid, &mut ops);
                        t.update("description", Some("again".into()), &mut ops);
                    }
                }
            }
        }
        ops.into_iter().collect()
    }

    /// `apply` leaves an account as TaskChampion's own `Replica::commit_operations` on its
    /// SQLite storage leaves a replica: the same tasks, working set and operations log, after
    /// each of 40 random batches, for three seeds. Another account's rows in the same tables
    /// are never touched.
    #[tokio::test]
    async fn apply_has_the_effect_of_replica_commit_operations() {
        let Some(pool) = fresh("pgtasks_apply").await else {
            return;
        };
        let bystander = PgTasks::new(pool.clone());
        bystander
            .create(99, vec![(Uuid::new_v4(), new_task("elsewhere"))])
            .await
            .unwrap();
        let before = pg_view(&pool, 99).await;
        for seed in [5u64, 17, 2024] {
            let account = seed as AccountId;
            let dir = tempfile::tempdir().unwrap();
            let storage = SqliteStorage::new(dir.path(), AccessMode::ReadWrite, true)
                .await
                .unwrap();
            let mut theirs = Replica::new(storage);
            let mut rng = Rng(seed);
            let mut uuids = Vec::new();
            for step in 0..40 {
                let ops = batch(&mut theirs, &mut uuids, &mut rng).await;
                theirs.commit_operations(ops.clone()).await.unwrap();
                let mut c = pool.get().await.unwrap();
                let tx = c.transaction().await.unwrap();
                lock(&tx, account).await.unwrap();
                apply(&tx, account, &ops, HashMap::new(), now_ms())
                    .await
                    .unwrap();
                tx.commit().await.unwrap();
                assert_eq!(
                    pg_view(&pool, account).await,
                    tc_view(&mut theirs, &uuids).await,
                    "seed {seed} step {step}"
                );
            }
        }
        assert_eq!(pg_view(&pool, 99).await, before);
    }

    /// Two nodes (two pools, as two servers have) creating tasks in one account at once: every
    /// task lands, each in the working set once, at indexes 1..=n with none shared.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_nodes_creating_at_once_both_land() {
        let Some((pool, url)) = fresh_url("pgtasks_nodes").await else {
            return;
        };
        let second = crate::pool(&url, 4).unwrap();
        let nodes = [PgTasks::new(pool.clone()), PgTasks::new(second)];
        let mut calls = tokio::task::JoinSet::new();
        let mut made = Vec::new();
        for i in 0..40 {
            let node = nodes[i % 2].clone();
            let batch: Vec<(Uuid, NewTask)> = (0..3)
                .map(|j| (Uuid::new_v4(), new_task(&format!("{i}.{j}"))))
                .collect();
            made.extend(batch.iter().map(|(u, _)| *u));
            calls.spawn(async move { node.create(3, batch).await });
        }
        while let Some(r) = calls.join_next().await {
            r.unwrap().unwrap();
        }
        let v = pg_view(&pool, 3).await;
        assert_eq!(v.tasks.len(), made.len());
        let ids: Vec<usize> = v.working_set.iter().map(|(i, _)| *i).collect();
        assert_eq!(ids, (1..=made.len()).collect::<Vec<_>>());
        let members: HashSet<Uuid> = v.working_set.iter().map(|(_, u)| *u).collect();
        assert_eq!(members, made.iter().copied().collect());
        let got = nodes[1].get(3, made.clone()).await.unwrap();
        assert!(got.iter().all(Option::is_some));
    }

    /// One UUID created by two nodes at once with different bodies: one body is kept, both
    /// answers show it, and only one create is logged (the second node's read, under the lock,
    /// saw the task).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_task_created_by_two_nodes_at_once_is_created_once() {
        let Some(pool) = fresh("pgtasks_race").await else {
            return;
        };
        let nodes = [PgTasks::new(pool.clone()), PgTasks::new(pool.clone())];
        for _ in 0..10 {
            let u = Uuid::new_v4();
            let (a, b) = tokio::join!(
                nodes[0].create(4, vec![(u, new_task("from a"))]),
                nodes[1].create(4, vec![(u, new_task("from b"))]),
            );
            let (a, b) = (a.unwrap().remove(0), b.unwrap().remove(0));
            assert_eq!(a, b, "both answer the stored task");
            let ops = &pg_view(&pool, 4).await.operations[&u];
            let creates = ops
                .iter()
                .filter(|op| matches!(op, Operation::Create { .. }))
                .count();
            assert_eq!(creates, 1, "{ops:?}");
        }
    }

    /// A call that fails keeps nothing of itself (here the log refuses its rows, after the
    /// tasks were written in the same transaction), and its account is reported by `health`
    /// until a call of it works again.
    #[tokio::test]
    async fn a_failed_call_keeps_nothing_and_its_account_is_reported() {
        let Some(pool) = fresh("pgtasks_fail").await else {
            return;
        };
        let tasks = PgTasks::new(pool.clone());
        let c = pool.get().await.unwrap();
        c.batch_execute(
            "ALTER TABLE tc_operations ADD CONSTRAINT refuse CHECK (account_id <> 5) NOT VALID",
        )
        .await
        .unwrap();
        let u = Uuid::new_v4();
        let err = tasks.create(5, vec![(u, new_task("t"))]).await.unwrap_err();
        assert!(err.to_string().contains("refuse"), "{err}");
        let (running, failing) = tasks.health();
        assert!(running);
        assert_eq!(failing.len(), 1);
        assert_eq!(failing[0].0, 5);
        let v = pg_view(&pool, 5).await;
        assert!(v.tasks.is_empty() && v.working_set.is_empty() && v.logged == 0);
        c.batch_execute("ALTER TABLE tc_operations DROP CONSTRAINT refuse")
            .await
            .unwrap();
        tasks.create(5, vec![(u, new_task("t"))]).await.unwrap();
        assert_eq!(tasks.health(), (true, Vec::new()));
    }
}
