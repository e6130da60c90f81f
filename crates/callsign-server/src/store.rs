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
use std::collections::HashMap;
use std::path::PathBuf;

use callsign_core::dto::{NewTask, TaskPatch, TaskStatus};
use chrono::{DateTime, Utc};
use taskchampion::storage::AccessMode;
use taskchampion::{Operations, Replica, SqliteStorage, Status, Tag, Task};
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
    fn of(task: &Task) -> Snapshot {
        let status = match task.get_status() {
            Status::Completed => TaskStatus::Completed,
            Status::Deleted => TaskStatus::Deleted,
            _ => TaskStatus::Pending,
        };
        let entry = task.get_entry().unwrap_or_default();
        Snapshot {
            uuid: task.get_uuid(),
            description: task.get_description().to_owned(),
            notes: task
                .get_user_defined_attribute("notes")
                .unwrap_or("")
                .to_owned(),
            status,
            tags: task
                .get_tags()
                .filter(Tag::is_user)
                .map(|t| t.to_string())
                .collect(),
            created_at: entry,
            modified_at: task.get_modified().unwrap_or(entry),
            key: task.get_user_defined_attribute("key").map(str::to_owned),
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
        let mut made: HashMap<Uuid, Task> = HashMap::new();
        let mut order = Vec::with_capacity(tasks.len());
        for (uuid, new) in tasks {
            order.push(uuid);
            if made.contains_key(&uuid) {
                continue;
            }
            if let Some(existing) = replica.get_task(uuid).await.map_err(backend)? {
                made.insert(uuid, existing);
                continue;
            }
            let mut task = replica.create_task(uuid, &mut ops).await.map_err(backend)?;
            fill_new(&mut task, new, &mut ops).map_err(backend)?;
            made.insert(uuid, task);
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
        let mut tasks: HashMap<Uuid, Task> = HashMap::new();
        let mut out = Vec::with_capacity(patches.len());
        for (uuid, patch) in patches {
            if let std::collections::hash_map::Entry::Vacant(slot) = tasks.entry(uuid) {
                match replica.get_task(uuid).await.map_err(backend)? {
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
            apply_patch(task, patch, &mut ops).map_err(backend)?;
            out.push(Some(Snapshot::of(task)));
        }
        replica.commit_operations(ops).await.map_err(backend)?;
        Ok(out)
    }

    async fn set_keys(&mut self, account: AccountId, keys: Vec<(Uuid, String)>) -> Result<()> {
        let replica = self.replica(account).await?;
        let mut ops = Operations::new();
        for (uuid, key) in keys {
            if let Some(mut task) = replica.get_task(uuid).await.map_err(backend)? {
                if task.get_user_defined_attribute("key") != Some(key.as_str()) {
                    task.set_user_defined_attribute("key", key, &mut ops)
                        .map_err(backend)?;
                }
            }
        }
        replica.commit_operations(ops).await.map_err(backend)
    }

    async fn get(&mut self, account: AccountId, uuids: Vec<Uuid>) -> Result<Vec<Option<Snapshot>>> {
        let replica = self.replica(account).await?;
        let mut out = Vec::with_capacity(uuids.len());
        for uuid in uuids {
            out.push(
                replica
                    .get_task(uuid)
                    .await
                    .map_err(backend)?
                    .map(|t| Snapshot::of(&t)),
            );
        }
        Ok(out)
    }
}

fn to_status(s: TaskStatus) -> Status {
    match s {
        TaskStatus::Pending => Status::Pending,
        TaskStatus::Completed => Status::Completed,
        TaskStatus::Deleted => Status::Deleted,
    }
}

fn fill_new(
    task: &mut Task,
    new: NewTask,
    ops: &mut Operations,
) -> std::result::Result<(), taskchampion::Error> {
    task.set_entry(Some(new.created_at.unwrap_or_else(Utc::now)), ops)?;
    task.set_description(new.description, ops)?;
    task.set_status(to_status(new.status.unwrap_or(TaskStatus::Pending)), ops)?;
    task.set_value("project", Some(new.project.to_ascii_uppercase()), ops)?;
    if !new.notes.is_empty() {
        task.set_user_defined_attribute("notes", new.notes, ops)?;
    }
    set_tags(task, &new.tags, ops)
}

fn apply_patch(
    task: &mut Task,
    patch: TaskPatch,
    ops: &mut Operations,
) -> std::result::Result<(), taskchampion::Error> {
    if let Some(d) = patch.description {
        task.set_description(d, ops)?;
    }
    if let Some(n) = patch.notes {
        task.set_user_defined_attribute("notes", n, ops)?;
    }
    if let Some(s) = patch.status {
        task.set_status(to_status(s), ops)?;
    }
    if let Some(tags) = patch.tags {
        set_tags(task, &tags, ops)?;
    }
    Ok(())
}

fn set_tags(
    task: &mut Task,
    tags: &[String],
    ops: &mut Operations,
) -> std::result::Result<(), taskchampion::Error> {
    let wanted: Vec<Tag> = tags
        .iter()
        .filter_map(|t| Tag::try_from(t.as_str()).ok())
        .collect();
    let current: Vec<Tag> = task.get_tags().filter(Tag::is_user).collect();
    for t in current.iter().filter(|t| !wanted.contains(t)) {
        task.remove_tag(t, ops)?;
    }
    for t in wanted.iter().filter(|t| !current.contains(t)) {
        task.add_tag(t, ops)?;
    }
    Ok(())
}
