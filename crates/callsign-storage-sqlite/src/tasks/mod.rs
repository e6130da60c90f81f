//! The task store: one TaskChampion replica per account, at
//! `<data-dir>/accounts/<id>/taskchampion.sqlite3`, owned by one worker thread.
//!
//! A replica's SQLite connection is not `Sync`, so the async handlers never touch it: the
//! [`TaskStore`] handle sends commands ([`Cmd`]) to the worker and awaits the answer. Creating a
//! UUID that already exists is a no-op that returns the existing task.
//!
//! The tasks' properties are the shared model's (`callsign_storage::model`, which builds the
//! operations for both task stores): the API's fields, plus the user-defined attributes `key`
//! (the assigned key, so Taskwarrior 3 with `uda.key.type=string` shows it), `conflicts`,
//! `created_by` and `assignee`.
//!
//! The worker, by concern:
//!
//! - [`worker`]: its loop and group commit (one commit per account for every command waiting;
//!   key writes give way to requests; Taskwarrior syncs after the group), and why it uses
//!   `callsign_tcstore::InlineStorage` and no `Replica`.
//! - [`replicas`]: opening a replica when a command needs one and closing it again, in a
//!   bounded [`pool`] ([`Settings::max_open`], [`Settings::idle_close`]); what happens when the
//!   process runs out of file descriptors.
//! - [`housekeeping`]: between groups, closing idle replicas, trimming operations logs to
//!   [`Settings::history_retention`] and rebuilding working sets.
//! - [`bind`]: [`bind_replica`], which serves a replica only to the account it was made for.
use std::path::PathBuf;
use std::time::Duration;

use callsign_core::dto::{NewTask, TaskPatch};
use callsign_storage::model::{Failing, Snapshot};
use callsign_storage::stats::{GroupCommits, ReplicaStats};
use callsign_storage::{AccountId, Error as StoreError, InstanceId, ReplicaSyncJob, ReplicaSynced};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::wal::Checkpointer;
use worker::Worker;

mod bind;
mod housekeeping;
mod pool;
mod replicas;
#[cfg(test)]
mod tests;
mod worker;

pub use bind::bind_replica;

pub type Result<T> = std::result::Result<T, StoreError>;

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
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
    /// Runs after the group it arrived in has committed, alone.
    SyncReplica(
        AccountId,
        ReplicaSyncJob,
        oneshot::Sender<Result<ReplicaSynced>>,
    ),
    /// Tests: the worker tells `.0` it is applying this command, then waits for `.1`.
    #[cfg(test)]
    Hold(std::sync::mpsc::Sender<()>, std::sync::mpsc::Receiver<()>),
}

/// How many replicas the worker keeps open, for how long, and how much history they keep.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// The most replicas open at once (at least one).
    pub max_open: usize,
    /// A replica unused this long is closed; `None`: only to make room.
    pub idle_close: Option<Duration>,
    /// Operations older than this are trimmed from an open replica's log (`Worker::trim_some`);
    /// `None`: kept forever.
    pub history_retention: Option<Duration>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            max_open: 256,
            idle_close: Some(Duration::from_secs(300)),
            history_retention: Some(Duration::from_secs(90 * 24 * 3600)),
        }
    }
}

/// Handle to the store worker. Cheap to clone.
#[derive(Clone)]
pub struct TaskStore {
    tx: mpsc::UnboundedSender<Cmd>,
    group_commits: GroupCommits,
    replica_stats: ReplicaStats,
    failing: Failing,
}

impl TaskStore {
    /// Starts the worker for the allocation database `instance`; its commits are handed to
    /// `checkpointer`.
    pub fn start(
        data_dir: PathBuf,
        instance: InstanceId,
        checkpointer: Checkpointer,
        pool: Settings,
    ) -> std::io::Result<TaskStore> {
        let (tx, rx) = mpsc::unbounded_channel();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()?;
        let group_commits = GroupCommits::default();
        let counted = group_commits.clone();
        let failing = Failing::default();
        let replica_stats = ReplicaStats::default();
        let mut worker = Worker::new(data_dir, instance, counted, checkpointer, pool);
        worker.failing = failing.clone();
        worker.stats = replica_stats.clone();
        std::thread::Builder::new()
            .name("task-store".into())
            .spawn(move || rt.block_on(worker.run(rx)))?;
        Ok(TaskStore {
            tx,
            group_commits,
            replica_stats,
            failing,
        })
    }

    /// Replicas open now, and those closed so far by reason.
    pub fn replica_stats(&self) -> &ReplicaStats {
        &self.replica_stats
    }

    /// The worker's commits so far (one per account a group wrote to), and the commands the
    /// groups carried.
    pub fn group_commits(&self) -> &GroupCommits {
        &self.group_commits
    }

    async fn call<T>(&self, make: impl FnOnce(oneshot::Sender<Result<T>>) -> Cmd) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(make(tx)).map_err(|_| StoreError::Gone)?;
        rx.await.map_err(|_| StoreError::Gone)?
    }
}

#[async_trait::async_trait]
impl callsign_storage::TaskStore for TaskStore {
    /// Whether the worker runs, and the accounts whose replica failed its last use.
    fn health(&self) -> (bool, Vec<(AccountId, String)>) {
        (!self.tx.is_closed(), self.failing.list())
    }

    /// Creates each task that does not exist yet (one commit for all); returns every task's
    /// current content, in order.
    async fn create(
        &self,
        account: AccountId,
        tasks: Vec<(Uuid, NewTask)>,
    ) -> Result<Vec<Snapshot>> {
        self.call(|tx| Cmd::Create(account, tasks, tx)).await
    }

    /// Applies patches (one commit for all); `None` for a task that does not exist.
    async fn update(
        &self,
        account: AccountId,
        patches: Vec<(Uuid, TaskPatch)>,
    ) -> Result<Vec<Option<Snapshot>>> {
        self.call(|tx| Cmd::Update(account, patches, tx)).await
    }

    /// Writes `key` onto existing tasks (one commit for all); missing tasks are skipped.
    async fn set_keys(&self, account: AccountId, keys: Vec<(Uuid, String)>) -> Result<()> {
        self.call(|tx| Cmd::SetKeys(account, keys, tx)).await
    }

    async fn sync_replica(&self, account: AccountId, job: ReplicaSyncJob) -> Result<ReplicaSynced> {
        self.call(|tx| Cmd::SyncReplica(account, job, tx)).await
    }

    async fn get(&self, account: AccountId, uuids: Vec<Uuid>) -> Result<Vec<Option<Snapshot>>> {
        self.call(|tx| Cmd::Get(account, uuids, tx)).await
    }
}
