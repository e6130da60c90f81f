//! The task store: one TaskChampion replica per account, at
//! `<data-dir>/accounts/<id>/taskchampion.sqlite3`, owned by one worker thread.
//!
//! TaskChampion's `Replica` is not `Sync` and its futures are not all `Send`, so the async
//! handlers never touch it: they send commands to the worker and await the answer. Each command
//! is one `commit_operations`, i.e. one durable TaskChampion transaction, however many tasks it
//! carries. Creating a UUID that already exists is a no-op that returns the existing task.
//!
//! Properties written: `description`, `status`, `entry`, `modified`, `end`, `project` (the
//! prefix), `tag_*`, and the user-defined attributes `notes` and `key` (the assigned key, so
//! Taskwarrior 3 with `uda.key.type=string` shows it).
//!
//! The worker uses TaskChampion's low-level `TaskData` API, not `Task`: `Replica::get_task`
//! rebuilds a dependency map over the whole working set after every commit, which made each
//! create cost O(tasks in the replica).
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::path::PathBuf;

use callsign_core::dto::{NewTask, TaskPatch, TaskStatus};
use chrono::{DateTime, Utc};
use taskchampion::storage::AccessMode;
use taskchampion::{Operations, Replica, SqliteStorage, TaskData};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::db::AccountId;

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("task store: {0}")]
    Backend(String),
    #[error("task store worker stopped")]
    Gone,
}

pub type Result<T> = std::result::Result<T, StoreError>;

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// A task's content as TaskChampion holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub uuid: Uuid,
    pub description: String,
    pub notes: String,
    pub status: TaskStatus,
    pub tags: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub modified_at: DateTime<Utc>,
    pub key: Option<String>,
}

impl Snapshot {
    fn of(task: &TaskData) -> Snapshot {
        let status = match task.get("status") {
            Some("completed") => TaskStatus::Completed,
            Some("deleted") => TaskStatus::Deleted,
            _ => TaskStatus::Pending,
        };
        let time = |p: &str| {
            task.get(p)
                .and_then(|v| v.parse::<i64>().ok())
                .and_then(|secs| DateTime::from_timestamp(secs, 0))
        };
        let entry = time("entry").unwrap_or_default();
        let mut tags: Vec<String> = task
            .properties()
            .filter_map(|p| p.strip_prefix("tag_"))
            .map(str::to_owned)
            .collect();
        tags.sort();
        Snapshot {
            uuid: task.get_uuid(),
            description: task.get("description").unwrap_or("").to_owned(),
            notes: task.get("notes").unwrap_or("").to_owned(),
            status,
            tags,
            created_at: entry,
            modified_at: time("modified").unwrap_or(entry),
            key: task.get("key").map(str::to_owned),
        }
    }

    /// True when every field the patch sets already has the patched value.
    pub fn reflects(&self, patch: &TaskPatch) -> bool {
        let mut tags = self.tags.clone();
        tags.sort();
        patch
            .description
            .as_ref()
            .is_none_or(|d| *d == self.description)
            && patch.notes.as_ref().is_none_or(|n| *n == self.notes)
            && patch.status.is_none_or(|s| s == self.status)
            && patch.tags.as_ref().is_none_or(|t| {
                let mut t = t.clone();
                t.sort();
                t.dedup();
                t == tags
            })
    }
}

enum Cmd {
    Create(
        AccountId,
        Vec<(Uuid, NewTask)>,
        oneshot::Sender<Result<Vec<Snapshot>>>,
    ),
    Update(
        AccountId,
        Vec<(Uuid, TaskPatch)>,
        oneshot::Sender<Result<Vec<Option<Snapshot>>>>,
    ),
    SetKeys(AccountId, Vec<(Uuid, String)>, oneshot::Sender<Result<()>>),
    Get(
        AccountId,
        Vec<Uuid>,
        oneshot::Sender<Result<Vec<Option<Snapshot>>>>,
    ),
}

/// Handle to the store worker. Cheap to clone.
#[derive(Clone)]
pub struct TaskStore {
    tx: mpsc::UnboundedSender<Cmd>,
}

impl TaskStore {
    pub fn start(data_dir: PathBuf) -> std::io::Result<TaskStore> {
        let (tx, rx) = mpsc::unbounded_channel();
        let rt = tokio::runtime::Builder::new_current_thread().build()?;
        std::thread::Builder::new()
            .name("task-store".into())
            .spawn(move || rt.block_on(Worker::new(data_dir).run(rx)))?;
        Ok(TaskStore { tx })
    }

    async fn call<T>(&self, make: impl FnOnce(oneshot::Sender<Result<T>>) -> Cmd) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(make(tx)).map_err(|_| StoreError::Gone)?;
        rx.await.map_err(|_| StoreError::Gone)?
    }

    /// Creates each task that does not exist yet (one commit for all); returns every task's
    /// current content, in order.
    pub async fn create(
        &self,
        account: AccountId,
        tasks: Vec<(Uuid, NewTask)>,
    ) -> Result<Vec<Snapshot>> {
        self.call(|tx| Cmd::Create(account, tasks, tx)).await
    }

    /// Applies patches (one commit for all); `None` for a task that does not exist.
    pub async fn update(
        &self,
        account: AccountId,
        patches: Vec<(Uuid, TaskPatch)>,
    ) -> Result<Vec<Option<Snapshot>>> {
        self.call(|tx| Cmd::Update(account, patches, tx)).await
    }

    /// Writes `key` onto existing tasks (one commit for all); missing tasks are skipped.
    pub async fn set_keys(&self, account: AccountId, keys: Vec<(Uuid, String)>) -> Result<()> {
        self.call(|tx| Cmd::SetKeys(account, keys, tx)).await
    }

    pub async fn get(&self, account: AccountId, uuids: Vec<Uuid>) -> Result<Vec<Option<Snapshot>>> {
        self.call(|tx| Cmd::Get(account, uuids, tx)).await
    }
}

struct Worker {
    data_dir: PathBuf,
    replicas: HashMap<AccountId, Replica<SqliteStorage>>,
}

impl Worker {
    fn new(data_dir: PathBuf) -> Worker {
        Worker {
            data_dir,
            replicas: HashMap::new(),
        }
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Cmd>) {
        while let Some(cmd) = rx.recv().await {
            match cmd {
                Cmd::Create(a, tasks, tx) => {
                    let _ = tx.send(self.create(a, tasks).await);
                }
                Cmd::Update(a, patches, tx) => {
                    let _ = tx.send(self.update(a, patches).await);
                }
                Cmd::SetKeys(a, keys, tx) => {
                    let _ = tx.send(self.set_keys(a, keys).await);
                }
                Cmd::Get(a, uuids, tx) => {
                    let _ = tx.send(self.get(a, uuids).await);
                }
            }
        }
    }

    async fn replica(&mut self, account: AccountId) -> Result<&mut Replica<SqliteStorage>> {
        if !self.replicas.contains_key(&account) {
            let dir = self.data_dir.join("accounts").join(account.to_string());
            let storage = SqliteStorage::new(dir, AccessMode::ReadWrite, true)
                .await
                .map_err(backend)?;
            self.replicas.insert(account, Replica::new(storage));
        }
        Ok(self.replicas.get_mut(&account).expect("inserted above"))
    }

    async fn create(
        &mut self,
        account: AccountId,
        tasks: Vec<(Uuid, NewTask)>,
    ) -> Result<Vec<Snapshot>> {
        let replica = self.replica(account).await?;
        let mut ops = Operations::new();
        let mut made: HashMap<Uuid, TaskData> = HashMap::new();
        let mut order = Vec::with_capacity(tasks.len());
        let now = Utc::now();
        for (uuid, new) in tasks {
            order.push(uuid);
            if let Entry::Vacant(slot) = made.entry(uuid) {
                let task = match replica.get_task_data(uuid).await.map_err(backend)? {
                    Some(existing) => existing,
                    None => {
                        let mut task = TaskData::create(uuid, &mut ops);
                        fill_new(&mut task, new, now, &mut ops);
                        task
                    }
                };
                slot.insert(task);
            }
        }
        replica.commit_operations(ops).await.map_err(backend)?;
        Ok(order.iter().map(|u| Snapshot::of(&made[u])).collect())
    }

    async fn update(
        &mut self,
        account: AccountId,
        patches: Vec<(Uuid, TaskPatch)>,
    ) -> Result<Vec<Option<Snapshot>>> {
        let replica = self.replica(account).await?;
        let mut ops = Operations::new();
        let mut tasks: HashMap<Uuid, TaskData> = HashMap::new();
        let mut out = Vec::with_capacity(patches.len());
        let now = Utc::now();
        for (uuid, patch) in patches {
            if let Entry::Vacant(slot) = tasks.entry(uuid) {
                match replica.get_task_data(uuid).await.map_err(backend)? {
                    Some(t) => {
                        slot.insert(t);
                    }
                    None => {
                        out.push(None);
                        continue;
                    }
                }
            }
            let task = tasks.get_mut(&uuid).expect("present");
            apply_patch(task, patch, now, &mut ops);
            out.push(Some(Snapshot::of(task)));
        }
        replica.commit_operations(ops).await.map_err(backend)?;
        Ok(out)
    }

    async fn set_keys(&mut self, account: AccountId, keys: Vec<(Uuid, String)>) -> Result<()> {
        let replica = self.replica(account).await?;
        let mut ops = Operations::new();
        for (uuid, key) in keys {
            if let Some(mut task) = replica.get_task_data(uuid).await.map_err(backend)? {
                if task.get("key") != Some(key.as_str()) {
                    task.update("key", Some(key), &mut ops);
                }
            }
        }
        replica.commit_operations(ops).await.map_err(backend)
    }

    async fn get(&mut self, account: AccountId, uuids: Vec<Uuid>) -> Result<Vec<Option<Snapshot>>> {
        let replica = self.replica(account).await?;
        let mut out = Vec::with_capacity(uuids.len());
        for uuid in uuids {
            let task = replica.get_task_data(uuid).await.map_err(backend)?;
            out.push(task.map(|t| Snapshot::of(&t)));
        }
        Ok(out)
    }
}

fn secs(t: DateTime<Utc>) -> Option<String> {
    Some(t.timestamp().to_string())
}

/// Sets status, and `end` as Taskwarrior does: set when a task leaves pending, cleared when it
/// returns.
fn set_status(task: &mut TaskData, status: TaskStatus, now: DateTime<Utc>, ops: &mut Operations) {
    task.update("status", Some(status.as_str().to_owned()), ops);
    match status {
        TaskStatus::Pending if task.has("end") => task.update("end", None, ops),
        TaskStatus::Completed | TaskStatus::Deleted if !task.has("end") => {
            task.update("end", secs(now), ops)
        }
        _ => {}
    }
}

fn fill_new(task: &mut TaskData, new: NewTask, now: DateTime<Utc>, ops: &mut Operations) {
    task.update("entry", secs(new.created_at.unwrap_or(now)), ops);
    task.update("modified", secs(now), ops);
    task.update("description", Some(new.description), ops);
    set_status(task, new.status.unwrap_or(TaskStatus::Pending), now, ops);
    task.update("project", Some(new.project.to_ascii_uppercase()), ops);
    if !new.notes.is_empty() {
        task.update("notes", Some(new.notes), ops);
    }
    set_tags(task, &new.tags, ops);
}

fn apply_patch(task: &mut TaskData, patch: TaskPatch, now: DateTime<Utc>, ops: &mut Operations) {
    task.update("modified", secs(now), ops);
    if let Some(d) = patch.description {
        task.update("description", Some(d), ops);
    }
    if let Some(n) = patch.notes {
        task.update("notes", Some(n), ops);
    }
    if let Some(s) = patch.status {
        set_status(task, s, now, ops);
    }
    if let Some(tags) = patch.tags {
        set_tags(task, &tags, ops);
    }
}

fn set_tags(task: &mut TaskData, tags: &[String], ops: &mut Operations) {
    let current: Vec<String> = task
        .properties()
        .filter(|p| p.starts_with("tag_"))
        .cloned()
        .collect();
    let wanted: Vec<String> = tags.iter().map(|t| format!("tag_{t}")).collect();
    for p in current.iter().filter(|p| !wanted.contains(p)) {
        task.update(p, None, ops);
    }
    for p in wanted.iter().filter(|p| !current.contains(p)) {
        task.update(p, Some(String::new()), ops);
    }
}
