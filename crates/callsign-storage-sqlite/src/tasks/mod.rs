//! The task store: one TaskChampion replica per account, at
//! `<data-dir>/accounts/<id>/taskchampion.sqlite3`, owned by one worker thread.
//!
//! A replica's SQLite connection is not `Sync`, so the async handlers never touch it: they send
//! commands to the worker and await the answer. The worker commits like the allocation database
//! does (group commit, `Worker::run`): every command waiting is applied to one `Operations` per
//! account, committed once, and only then answered; requests that arrive while a group is
//! applied join it (at most 256). Key writes, which are off the request path, give way to
//! requests for up to 100 ms, so a request's commit does not carry earlier requests' key
//! writes. Creating a UUID that already exists is a no-op that returns the existing task. A
//! Taskwarrior sync of a replica (`sync_replica`) runs on the worker after the group it arrived
//! in has committed: `Replica::sync` over `&mut InlineStorage`.
//!
//! The tasks' properties are the shared model's (`callsign_storage::model`, which builds the
//! operations for both task stores): the API's fields, plus the user-defined attributes `key`
//! (the assigned key, so Taskwarrior 3 with `uda.key.type=string` shows it), `conflicts`,
//! `created_by` and `assignee`.
//!
//! The replicas are `callsign_tcstore::InlineStorage`: TaskChampion's file, schema and
//! operations, with SQLite run on this worker's thread (TaskChampion's own `SqliteStorage`
//! hands every call to a thread of its own, which was most of a create's cost) and commits
//! whose cost does not grow with the working set (`Replica::commit_operations` reads all of
//! it each time; `Replica::get_task` rebuilds a dependency map over it). So no `Replica` is
//! used: the worker reads `TaskData`, the model builds the operations with TaskChampion's own
//! `TaskData::update`, and the storage commits them as `Replica::commit_operations` would.
//!
//! Replicas are opened when an account's command needs one and kept in a bounded pool
//! ([`pool`]): at most [`Settings::max_open`] open at once (the least recently used is closed
//! to make room), and each closed once unused for [`Settings::idle_close`]. Closing one tells
//! the checkpoint thread to close its connection too, so the last connection's close
//! checkpoints the WAL into the database and removes it; nothing committed depends on a replica
//! staying open (a group that spans more accounts than the pool holds opens again, for its
//! commit, those closed while it was applied). Every open checks the replica's binding again
//! ([`bind_replica`]). When an open fails for want of file descriptors, the worker closes the
//! least recently used half of the pool and tries once more; if that fails too the command is
//! answered [`StoreError::OutOfFiles`] (`503` with `Retry-After`), and the next command tries
//! again.
//!
//! Housekeeping, on the worker after a group's answers are sent (or when it has nothing else
//! to do): an open replica's operations log loses what is older than
//! [`Settings::history_retention`], one batch of at most 1,000 operations at a time and at
//! most one batch every 100 ms (`callsign_tcstore` trims; tasks are never touched), checked
//! when the replica is opened and then every minute; and an account's working set is rebuilt
//! once it holds more than twice its live (pending) tasks, so neither the file nor the
//! in-memory copy keeps every task ever created.
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use callsign_core::dto::{NewTask, TaskPatch};
use callsign_storage::model::{self, Failing, Group, Snapshot};
use callsign_storage::stats::{GroupCommits, ReplicaStats};
use callsign_storage::{AccountId, Error as StoreError, InstanceId, ReplicaSyncJob, ReplicaSynced};
use callsign_tcstore::InlineStorage;
use chrono::Utc;
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::wal::Checkpointer;

mod pool;

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

/// The most operations one trim deletes (one short transaction on the worker).
const TRIM_BATCH: usize = 1000;

/// The least time between two trims, so that a backlog never holds the worker long.
const TRIM_PAUSE: Duration = Duration::from_millis(100);

/// How often an open replica's log is looked at again once nothing was left to trim: a
/// quarter of the history kept, within [50 ms, 1 min].
fn trim_every(history: Duration) -> Duration {
    (history / 4).clamp(Duration::from_millis(50), Duration::from_secs(60))
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

    /// Whether the worker runs, and the accounts whose replica failed its last use.
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

/// How often the worker looks for idle replicas: a replica unused for `idle` is closed within
/// `idle` and a quarter.
fn sweep_every(idle: Duration) -> Duration {
    (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(60))
}

/// The longest a key write waits behind requests (see [`Worker::run`]).
const KEYS_MAY_WAIT: Duration = Duration::from_millis(100);

/// The most commands one group commit takes.
const MAX_GROUP: usize = 256;

/// Answers a command once its group's commit is known.
type Finish = Box<dyn FnOnce(Option<&StoreError>) + Send>;

fn finish<T: Send + 'static>(tx: oneshot::Sender<Result<T>>, value: T) -> Finish {
    Box::new(move |err| {
        let _ = tx.send(match err {
            None => Ok(value),
            Some(e) => Err(e.clone()),
        });
    })
}

/// Key writes held back while requests are queued (see [`Worker::run`]), and since when.
#[derive(Default)]
struct HeldKeys {
    cmds: Vec<Cmd>,
    since: Option<Instant>,
}

impl HeldKeys {
    /// Holds `c` if it is a key write; a request goes to `cmds`.
    fn sort(&mut self, c: Cmd, cmds: &mut Vec<Cmd>) {
        if matches!(c, Cmd::SetKeys(..)) {
            self.since.get_or_insert_with(Instant::now);
            self.cmds.push(c);
        } else {
            cmds.push(c);
        }
    }

    /// The oldest has waited [`KEYS_MAY_WAIT`].
    fn due(&self) -> bool {
        self.since.is_some_and(|t| t.elapsed() >= KEYS_MAY_WAIT)
    }

    fn take(&mut self) -> Vec<Cmd> {
        self.since = None;
        std::mem::take(&mut self.cmds)
    }
}

/// Moves the commands waiting in `rx` to `cmds`, at most `room` requests; key writes among
/// them are held in `keys`.
fn take_waiting(
    rx: &mut mpsc::UnboundedReceiver<Cmd>,
    cmds: &mut Vec<Cmd>,
    room: usize,
    keys: &mut HeldKeys,
) {
    let limit = cmds.len() + room;
    while cmds.len() < limit {
        match rx.try_recv() {
            Ok(c) => keys.sort(c, cmds),
            Err(_) => break,
        }
    }
}

/// Why a replica was closed (`callsign_replicas_closed_total{reason}`).
#[derive(Clone, Copy)]
enum Closed {
    /// To make room in a full pool.
    Lru,
    /// Unused for the idle time.
    Idle,
    /// To free descriptors after an open failed for want of them.
    Pressure,
}

impl Closed {
    fn as_str(self) -> &'static str {
        match self {
            Closed::Lru => "lru",
            Closed::Idle => "idle",
            Closed::Pressure => "pressure",
        }
    }
}

struct Worker {
    data_dir: PathBuf,
    instance: InstanceId,
    replicas: pool::Pool<InlineStorage>,
    idle_close: Option<Duration>,
    /// When idle replicas are next looked for.
    next_idle_sweep: Instant,
    history: Option<Duration>,
    /// When each open replica's log is next to be trimmed.
    trim_due: HashMap<AccountId, Instant>,
    /// No trim before this ([`TRIM_PAUSE`]).
    next_trim: Instant,
    counted: GroupCommits,
    stats: ReplicaStats,
    checkpointer: Checkpointer,
    failing: Failing,
    /// Replica syncs taken with the current group, run after its commit.
    syncs: Vec<(
        AccountId,
        ReplicaSyncJob,
        oneshot::Sender<Result<ReplicaSynced>>,
    )>,
}

impl Worker {
    fn new(
        data_dir: PathBuf,
        instance: InstanceId,
        counted: GroupCommits,
        checkpointer: Checkpointer,
        pool: Settings,
    ) -> Worker {
        let idle_close = pool.idle_close.filter(|d| !d.is_zero());
        Worker {
            data_dir,
            instance,
            replicas: pool::Pool::new(pool.max_open),
            idle_close,
            next_idle_sweep: Instant::now() + idle_close.map_or(Duration::ZERO, sweep_every),
            history: pool.history_retention,
            trim_due: HashMap::new(),
            next_trim: Instant::now(),
            counted,
            stats: ReplicaStats::default(),
            checkpointer,
            failing: Failing::default(),
            syncs: Vec::new(),
        }
    }

    /// Group commit: takes every command waiting, applies the writing ones to one
    /// `Operations` per account, commits each account once, then answers. A command is
    /// answered `Ok` only after the commit that holds its changes succeeded. Requests that
    /// arrive while a group's commands are applied join it (up to [`MAX_GROUP`]) until none is
    /// waiting, and only then does it commit: a create whose phase 1 was answered a moment
    /// after the others of its group commit does not wait for the whole next store commit.
    ///
    /// Key writes (`SetKeys`, off the request path) give way to requests: while requests are
    /// queued they wait, at most [`KEYS_MAY_WAIT`], and go in the first group with room for
    /// them, so a request's commit does not carry the previous requests' key writes.
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Cmd>) {
        let mut keys = HeldKeys::default();
        loop {
            self.close_idle();
            self.trim_some();
            let mut cmds = Vec::new();
            if keys.cmds.is_empty() {
                let next = tokio::select! {
                    c = rx.recv() => c,
                    () = self.housekeeping_due() => continue,
                };
                match next {
                    Some(c) => keys.sort(c, &mut cmds),
                    None => break,
                }
            }
            let room = MAX_GROUP - cmds.len();
            take_waiting(&mut rx, &mut cmds, room, &mut keys);
            if cmds.is_empty() || keys.due() {
                cmds.append(&mut keys.take());
            }
            let mut groups: HashMap<AccountId, Group> = HashMap::new();
            let mut waiting: Vec<(AccountId, Finish)> = Vec::new();
            let mut taken = cmds.len();
            while !cmds.is_empty() {
                for cmd in std::mem::take(&mut cmds) {
                    if let Some(w) = self.apply(&mut groups, cmd).await {
                        waiting.push(w);
                    }
                }
                // Requests that came in meanwhile join this commit.
                take_waiting(
                    &mut rx,
                    &mut cmds,
                    MAX_GROUP.saturating_sub(taken),
                    &mut keys,
                );
                taken += cmds.len();
            }
            let mut failed: HashMap<AccountId, StoreError> = HashMap::new();
            let mut committed = Vec::new();
            for (account, group) in groups {
                if group.ops.is_empty() {
                    continue;
                }
                let res = match self.replica(account).await {
                    Ok(r) => r.commit_operations(group.ops).map_err(backend),
                    Err(e) => Err(e),
                };
                self.failing.record(account, &res);
                match res {
                    Ok(()) => {
                        self.hand_off(account);
                        self.counted.commits.inc();
                        committed.push(account);
                    }
                    Err(e) => {
                        tracing::error!(error = %e, account, "task store commit failed");
                        failed.insert(account, e);
                    }
                }
            }
            let carried = waiting.iter().filter(|(a, _)| !failed.contains_key(a));
            self.counted.jobs.inc_by(carried.count() as u64);
            for (account, f) in waiting {
                f(failed.get(&account));
            }
            for account in committed {
                self.compact_working_set(account);
            }
            for (account, job, tx) in std::mem::take(&mut self.syncs) {
                let res = self.sync_replica(account, job).await;
                self.failing.record(account, &res);
                let _ = tx.send(res);
            }
            self.trim_some();
        }
    }

    /// Rebuilds the account's working set once it holds more than twice its live tasks
    /// (`InlineStorage::compact_working_set`), after the commit that grew it was answered.
    fn compact_working_set(&mut self, account: AccountId) {
        let Some(replica) = self.replicas.peek_mut(account) else {
            return;
        };
        match replica.compact_working_set() {
            Ok(true) => self.hand_off(account),
            Ok(false) => {}
            Err(e) => tracing::warn!(account, error = %e, "rebuilding a working set"),
        }
    }

    /// Resolves when idle replicas are next due to be looked for, or a log to be trimmed.
    async fn housekeeping_due(&self) {
        let sweep = self.idle_close.map(|_| self.next_idle_sweep);
        let trim = self
            .trim_due
            .values()
            .min()
            .map(|&due| due.max(self.next_trim));
        match sweep.into_iter().chain(trim).min() {
            Some(at) => tokio::time::sleep_until(at.into()).await,
            None => std::future::pending().await,
        }
    }

    /// Trims the log of the open replica most overdue, one batch ([`TRIM_BATCH`]), at most once
    /// every [`TRIM_PAUSE`]. A replica is due when opened, again at once while a batch was
    /// full, else after [`trim_every`].
    fn trim_some(&mut self) {
        let Some(history) = self.history else {
            return;
        };
        let now = Instant::now();
        if now < self.next_trim {
            return;
        }
        let Some((&account, _)) = self
            .trim_due
            .iter()
            .filter(|(_, &due)| due <= now)
            .min_by_key(|(_, &due)| due)
        else {
            return;
        };
        self.next_trim = now + TRIM_PAUSE;
        let cutoff = chrono::Duration::from_std(history)
            .ok()
            .and_then(|h| Utc::now().checked_sub_signed(h));
        let Some(cutoff) = cutoff else {
            self.trim_due.remove(&account);
            return;
        };
        let Some(replica) = self.replicas.peek_mut(account) else {
            self.trim_due.remove(&account);
            return;
        };
        let next = match replica.trim_operations(cutoff, TRIM_BATCH) {
            Ok(n) => {
                if n > 0 {
                    self.stats.trimmed.inc_by(n as u64);
                    self.hand_off(account);
                }
                if n == TRIM_BATCH {
                    now
                } else {
                    now + trim_every(history)
                }
            }
            Err(e) => {
                tracing::warn!(account, error = %e, "trimming a replica's operations log");
                now + trim_every(history)
            }
        };
        self.trim_due.insert(account, next);
    }

    /// Closes the replicas unused for the idle time, when it is time to look.
    fn close_idle(&mut self) {
        let Some(after) = self.idle_close else {
            return;
        };
        let now = Instant::now();
        if now < self.next_idle_sweep {
            return;
        }
        self.next_idle_sweep = now + sweep_every(after);
        for (account, r) in self.replicas.idle(now, after) {
            self.close(account, r, Closed::Idle);
        }
    }

    /// Closes a replica taken out of the pool. Its checkpoint connection goes too, so the
    /// last close checkpoints the WAL and removes it (a reader elsewhere, Taskwarrior say,
    /// keeps it for that reader's own close).
    fn close(&mut self, account: AccountId, replica: InlineStorage, why: Closed) {
        let path = replica.path().map(std::path::Path::to_owned);
        drop(replica);
        self.trim_due.remove(&account);
        if let Some(path) = path {
            self.checkpointer.closed(&path);
        }
        tracing::debug!(account, reason = why.as_str(), "closed a replica");
        self.stats.closed(why.as_str());
        self.stats.open.set(self.replicas.len() as i64);
    }

    async fn replica(&mut self, account: AccountId) -> Result<&mut InlineStorage> {
        if !self.replicas.contains(account) {
            if let Some((lru, r)) = self.replicas.make_room() {
                self.close(lru, r, Closed::Lru);
            }
            let opened = self.open_under_pressure(account).await;
            self.failing.record(account, &opened);
            let now = Instant::now();
            self.replicas.insert(account, opened?, now);
            if self.history.is_some() {
                self.trim_due.insert(account, now);
            }
            self.stats.open.set(self.replicas.len() as i64);
            self.hand_off(account);
        }
        Ok(self
            .replicas
            .get(account, Instant::now())
            .expect("inserted above"))
    }

    /// Opens the replica; if that fails while the process is out of descriptors, closes the
    /// least recently used half of the pool and tries once more.
    async fn open_under_pressure(&mut self, account: AccountId) -> Result<InlineStorage> {
        let first = match self.open_replica(account).await {
            Err(StoreError::Backend(e)) if crate::files::exhausted() => e,
            other => return other,
        };
        let freed = self.replicas.oldest(self.replicas.len().div_ceil(2));
        let closed = freed.len();
        for (a, r) in freed {
            self.close(a, r, Closed::Pressure);
        }
        match self.open_replica(account).await {
            Err(StoreError::Backend(e)) if crate::files::exhausted() => {
                let limit = crate::files::limit().map(|(soft, _)| soft);
                let err = StoreError::OutOfFiles {
                    account,
                    // Counting them takes a descriptor too.
                    open: crate::files::open_files()
                        .map_or_else(|_| "all".to_owned(), |n| n.to_string()),
                    limit: limit.map_or_else(|| "no limit".to_owned(), |n| n.to_string()),
                    replicas: self.replicas.len(),
                    closed,
                };
                tracing::warn!(first = %first, last = %e, "{err}");
                Err(err)
            }
            other => other,
        }
    }

    async fn open_replica(&self, account: AccountId) -> Result<InlineStorage> {
        let dir = self
            .data_dir
            .join(crate::datadir::ACCOUNTS_DIR)
            .join(account.to_string());
        crate::datadir::create_private_dir(&dir).map_err(backend)?;
        crate::datadir::make_private_db_file(&dir.join(callsign_tcstore::FILE_NAME))
            .map_err(backend)?;
        let storage = InlineStorage::open(&dir).await.map_err(backend)?;
        bind_replica(
            &dir.join(callsign_tcstore::FILE_NAME),
            &self.instance,
            account,
        )?;
        storage
            .set_wal_autocheckpoint(crate::alloc::WAL_CHECKPOINT_PAGES)
            .map_err(backend)?;
        Ok(storage)
    }

    /// Tells the checkpoint thread that `account`'s replica has frames in its WAL: a commit
    /// went into it, or it has just been opened (a crash may have left a WAL behind).
    fn hand_off(&self, account: AccountId) {
        if let Some(path) = self.replicas.peek(account).and_then(|r| r.path()) {
            self.checkpointer.committed(path);
        }
    }

    /// Loads the tasks into the group's cache (reads only; nothing is changed on failure).
    async fn load(&mut self, account: AccountId, group: &mut Group, uuids: &[Uuid]) -> Result<()> {
        for &u in uuids {
            if let std::collections::hash_map::Entry::Vacant(slot) = group.tasks.entry(u) {
                let t = self
                    .replica(account)
                    .await?
                    .get_task_data(u)
                    .map_err(backend)?;
                slot.insert(t);
            }
        }
        Ok(())
    }

    /// Applies one command to its account's group. Reads answer at once; writes return the
    /// finisher to call after the commit. A failed read answers its error at once.
    async fn apply(
        &mut self,
        groups: &mut HashMap<AccountId, Group>,
        cmd: Cmd,
    ) -> Option<(AccountId, Finish)> {
        let account = match cmd {
            Cmd::SyncReplica(account, job, tx) => {
                self.syncs.push((account, job, tx));
                return None;
            }
            Cmd::Create(a, ..) | Cmd::Update(a, ..) | Cmd::SetKeys(a, ..) | Cmd::Get(a, ..) => a,
            #[cfg(test)]
            Cmd::Hold(ref applying, ref release) => {
                let _ = applying.send(());
                let _ = release.recv();
                return None;
            }
        };
        let mut group = groups.remove(&account).unwrap_or_default();
        let out = match cmd {
            Cmd::Get(_, uuids, tx) => {
                let got = self.get(account, uuids).await;
                self.failing.record(account, &got);
                let _ = tx.send(got);
                None
            }
            #[cfg(test)]
            Cmd::Hold(..) => None,
            Cmd::SyncReplica(..) => unreachable!("taken above"),
            Cmd::Create(_, tasks, tx) => {
                let uuids: Vec<Uuid> = tasks.iter().map(|(u, _)| *u).collect();
                match self.load(account, &mut group, &uuids).await {
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        None
                    }
                    Ok(()) => Some(finish(tx, model::create(&mut group, tasks))),
                }
            }
            Cmd::Update(_, patches, tx) => {
                let uuids: Vec<Uuid> = patches.iter().map(|(u, _)| *u).collect();
                match self.load(account, &mut group, &uuids).await {
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        None
                    }
                    Ok(()) => Some(finish(tx, model::update(&mut group, patches))),
                }
            }
            Cmd::SetKeys(_, keys, tx) => {
                let uuids: Vec<Uuid> = keys.iter().map(|(u, _)| *u).collect();
                match self.load(account, &mut group, &uuids).await {
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        None
                    }
                    Ok(()) => {
                        model::set_keys(&mut group, keys);
                        Some(finish(tx, ()))
                    }
                }
            }
        };
        groups.insert(account, group);
        out.map(|f| (account, f))
    }

    /// Syncs the replica with its Taskwarrior chain (see [`crate::taskwarrior`]); no group is
    /// open, so nothing uncommitted of this account is in memory meanwhile.
    async fn sync_replica(
        &mut self,
        account: AccountId,
        job: ReplicaSyncJob,
    ) -> Result<ReplicaSynced> {
        let replica = self.replica(account).await?;
        let mut after = job.after;
        if job.restate {
            after = replica.restate_operations(Utc::now()).map_err(backend)?;
        }
        let base = replica.base_version().map_err(backend)?;
        let idle = replica.unsynced_operations().map_err(backend)? == 0
            && base.unwrap_or_else(Uuid::nil) == job.latest;
        if !idle {
            let mut server: Box<dyn taskchampion::Server> = job.server;
            let mut synced = taskchampion::Replica::new(&mut *replica);
            synced.sync(&mut server, false).await.map_err(backend)?;
        }
        let touched = replica.operations_after(after).map_err(backend)?;
        self.hand_off(account);
        Ok(ReplicaSynced {
            touched: touched.uuids,
            last_op: touched.last,
        })
    }

    async fn get(&mut self, account: AccountId, uuids: Vec<Uuid>) -> Result<Vec<Option<Snapshot>>> {
        let replica = self.replica(account).await?;
        let mut out = Vec::with_capacity(uuids.len());
        for uuid in uuids {
            let task = replica.get_task_data(uuid).map_err(backend)?;
            out.push(task.map(|t| Snapshot::of(&t)));
        }
        Ok(out)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use callsign_core::dto::TaskStatus;
    use callsign_core::Priority;
    use callsign_storage::TaskStore as _;

    fn new_task(description: &str) -> NewTask {
        NewTask::new("SYN", description)
    }

    /// `due` and `priority` are written as Taskwarrior writes them: Unix seconds and `H`/`M`/`L`;
    /// a patch's `null` removes the property.
    #[test]
    fn due_and_priority_are_taskwarrior_properties() {
        use chrono::TimeZone;
        let u = Uuid::new_v4();
        let mut body = new_task("pay rent");
        body.due = Some(Utc.with_ymd_and_hms(2026, 12, 1, 9, 30, 0).unwrap());
        body.priority = Some(Priority::H);
        let mut g = Group::default();
        model::create(&mut g, vec![(u, body)]);
        let t = g.tasks[&u].as_ref().unwrap();
        assert_eq!(t.get("due"), Some("1796117400"));
        assert_eq!(t.get("priority"), Some("H"));
        let patch = TaskPatch {
            due: Some(None),
            priority: Some(Some(Priority::L)),
            ..TaskPatch::default()
        };
        model::update(&mut g, vec![(u, patch)]);
        let t = g.tasks[&u].as_ref().unwrap();
        assert_eq!((t.get("due"), t.get("priority")), (None, Some("L")));
        // A priority Taskwarrior allows by configuration but the API does not name reads as none.
        let mut t = t.clone();
        t.update("priority", Some("X".into()), &mut g.ops);
        assert_eq!(Snapshot::of(&t).priority, None);
    }

    /// A command that holds the worker while it is applied: (it, "it is applied now", release).
    fn hold() -> (
        Cmd,
        std::sync::mpsc::Receiver<()>,
        std::sync::mpsc::Sender<()>,
    ) {
        let (applying_tx, applying) = std::sync::mpsc::channel();
        let (release, release_rx) = std::sync::mpsc::channel();
        (Cmd::Hold(applying_tx, release_rx), applying, release)
    }

    /// Two creates into account 1: `a` queued while the worker is held, so it is one group
    /// with a second hold, and `b` sent while that group is applied; `meanwhile` runs just
    /// before the worker is let go on. The answers of both.
    async fn create_mid_group(
        store: &TaskStore,
        (a, b): (Uuid, Uuid),
        meanwhile: impl FnOnce(),
    ) -> (Result<Vec<Snapshot>>, Result<Vec<Snapshot>>) {
        let create = |uuid: Uuid, description: &str| {
            let (tx, rx) = oneshot::channel();
            store
                .tx
                .send(Cmd::Create(1, vec![(uuid, new_task(description))], tx))
                .unwrap();
            rx
        };
        let (hold1, applying1, release1) = hold();
        store.tx.send(hold1).unwrap();
        applying1.recv().unwrap();
        let first = create(a, "first");
        let (hold2, applying2, release2) = hold();
        store.tx.send(hold2).unwrap();
        release1.send(()).unwrap();
        applying2.recv().unwrap();
        let second = create(b, "second");
        meanwhile();
        release2.send(()).unwrap();
        (first.await.unwrap(), second.await.unwrap())
    }

    /// A store in a temp dir with account 1's replica open, so the groups of a test do nothing
    /// but its commands.
    async fn opened() -> (tempfile::TempDir, TaskStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::start(
            dir.path().into(),
            vec![7; 16],
            Checkpointer::start().unwrap(),
            Settings::default(),
        )
        .unwrap();
        store.get(1, vec![Uuid::new_v4()]).await.unwrap();
        (dir, store)
    }

    /// A replica made before bindings existed is bound to the account that opens it first;
    /// from then on it opens only for that account of that allocation database.
    #[tokio::test]
    async fn a_replica_is_bound_on_first_open_and_refused_to_anyone_else() {
        let dir = tempfile::tempdir().unwrap();
        let replica_dir = dir.path().join("accounts/1");
        std::fs::create_dir_all(&replica_dir).unwrap();
        drop(InlineStorage::open(&replica_dir).await.unwrap());
        let file = replica_dir.join(callsign_tcstore::FILE_NAME);
        let ours = vec![1u8; 16];
        bind_replica(&file, &ours, 1).unwrap();
        bind_replica(&file, &ours, 1).unwrap();
        let other_db = bind_replica(&file, &[2u8; 16], 1).unwrap_err();
        assert!(
            matches!(
                other_db,
                StoreError::Foreign {
                    account: 1,
                    found_account: 1,
                    ..
                }
            ),
            "{other_db:?}"
        );
        let other_account = bind_replica(&file, &ours, 2).unwrap_err();
        assert!(matches!(
            other_account,
            StoreError::Foreign {
                found_account: 1,
                ..
            }
        ));

        let store = TaskStore::start(
            dir.path().into(),
            vec![2u8; 16],
            Checkpointer::start().unwrap(),
            Settings::default(),
        )
        .unwrap();
        let refused = store.get(1, vec![Uuid::new_v4()]).await.unwrap_err();
        assert!(matches!(refused, StoreError::Foreign { .. }), "{refused:?}");
        assert!(refused.to_string().contains(&file.display().to_string()));
    }

    /// A create sent while the worker applies a group's commands joins that group's commit
    /// instead of waiting for the next one.
    #[tokio::test]
    async fn a_command_sent_while_a_group_is_applied_joins_its_commit() {
        let (_dir, store) = opened().await;
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let (first, second) = create_mid_group(&store, (a, b), || {}).await;
        first.unwrap();
        second.unwrap();
        let commits = store.group_commits();
        assert_eq!(commits.commits.get(), 1, "both creates in one commit");
        assert_eq!(commits.jobs.get(), 2);
        let got = store.get(1, vec![a, b]).await.unwrap();
        assert!(got.iter().all(Option::is_some), "both tasks stored");
    }

    /// G3 for a command that joined late: when the group's commit fails, it is answered with
    /// the error like the rest of the group, and none of the group is stored.
    #[tokio::test]
    async fn a_command_that_joined_a_group_whose_commit_fails_gets_the_error() {
        let (dir, store) = opened().await;
        let replica = dir
            .path()
            .join("accounts/1")
            .join(callsign_tcstore::FILE_NAME);
        let other = rusqlite::Connection::open(&replica).unwrap();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        // Another connection takes the write lock once both creates are in the group, so the
        // commit fails (after the store's busy timeout).
        let (first, second) = create_mid_group(&store, (a, b), || {
            other.execute_batch("BEGIN IMMEDIATE").unwrap();
        })
        .await;
        assert!(first.is_err() && second.is_err(), "{first:?} {second:?}");
        assert_eq!(store.group_commits().commits.get(), 0);
        drop(other);
        let got = store.get(1, vec![a, b]).await.unwrap();
        assert!(got.iter().all(Option::is_none), "nothing of the group kept");
    }

    fn small_pool(dir: &std::path::Path, max_open: usize, idle: Option<Duration>) -> TaskStore {
        TaskStore::start(
            dir.into(),
            vec![7; 16],
            Checkpointer::start().unwrap(),
            Settings {
                max_open,
                idle_close: idle,
                history_retention: None,
            },
        )
        .unwrap()
    }

    fn operations(dir: &std::path::Path, account: AccountId) -> i64 {
        let file = dir
            .join(format!("accounts/{account}"))
            .join(callsign_tcstore::FILE_NAME);
        let c = rusqlite::Connection::open(file).unwrap();
        c.query_row("SELECT count(*) FROM operations", [], |r| r.get(0))
            .unwrap()
    }

    /// With a history of 300 ms, a task edited 50 times keeps none of those edits' operations
    /// once they are older than that (the worker trims by itself, with no command), the task
    /// keeps its content, and edits after it are kept.
    #[tokio::test]
    async fn operations_older_than_the_history_kept_are_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskStore::start(
            dir.path().into(),
            vec![7; 16],
            Checkpointer::start().unwrap(),
            Settings {
                history_retention: Some(Duration::from_millis(300)),
                ..Settings::default()
            },
        )
        .unwrap();
        let uuid = Uuid::new_v4();
        store.create(1, vec![(uuid, new_task("t"))]).await.unwrap();
        for i in 0..50 {
            let patch = TaskPatch {
                description: Some(format!("edit {i}")),
                ..TaskPatch::default()
            };
            store.update(1, vec![(uuid, patch)]).await.unwrap();
        }
        assert!(operations(dir.path(), 1) >= 100);
        let trimmed = crate::wal::testing::wait_until(Duration::from_secs(5), || {
            operations(dir.path(), 1) == 0
        });
        assert!(trimmed, "{} operations left", operations(dir.path(), 1));
        assert!(store.replica_stats().trimmed.get() >= 100);
        let got = store.get(1, vec![uuid]).await.unwrap();
        assert_eq!(got[0].as_ref().unwrap().description, "edit 49");
        let patch = TaskPatch {
            notes: Some("kept".into()),
            ..TaskPatch::default()
        };
        store.update(1, vec![(uuid, patch)]).await.unwrap();
        assert!(operations(dir.path(), 1) >= 2, "the new edit's operations");
    }

    /// With room for two replicas, a third account's command closes the least recently used
    /// one; its tasks are read back when it is opened again, and a replica whose binding was
    /// changed while it was closed is refused on that reopen.
    #[tokio::test]
    async fn a_full_pool_closes_the_least_recently_used_and_reopens_it_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = small_pool(dir.path(), 2, None);
        let stats = store.replica_stats().clone();
        let tasks: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
        for (account, &uuid) in (1..=3).zip(&tasks) {
            let made = store
                .create(account, vec![(uuid, new_task("t"))])
                .await
                .unwrap();
            assert_eq!(made[0].uuid, uuid);
        }
        assert_eq!(stats.open.get(), 2);
        assert_eq!(stats.closed_total("lru"), 1, "account 1 made room for 3");
        // Account 2 is used, so 3 is the least recently used when 1 comes back.
        store.get(2, vec![tasks[1]]).await.unwrap();
        let again = store.get(1, vec![tasks[0]]).await.unwrap();
        assert_eq!(again[0].as_ref().map(|s| s.uuid), Some(tasks[0]));
        assert_eq!(stats.closed_total("lru"), 2);
        store.get(2, vec![tasks[1]]).await.unwrap();
        assert_eq!(stats.closed_total("lru"), 2, "2 was open still");

        // Account 3's replica is closed now: give it another account's binding.
        let file = dir
            .path()
            .join("accounts/3")
            .join(callsign_tcstore::FILE_NAME);
        let c = rusqlite::Connection::open(&file).unwrap();
        c.execute("UPDATE callsign_replica SET account_id = 9", [])
            .unwrap();
        drop(c);
        let refused = store.get(3, vec![tasks[2]]).await.unwrap_err();
        assert!(
            matches!(
                refused,
                StoreError::Foreign {
                    account: 3,
                    found_account: 9,
                    ..
                }
            ),
            "{refused:?}"
        );
    }

    /// A group holding commands of more accounts than the pool has room for still commits
    /// each account once, with all its commands.
    #[tokio::test]
    async fn a_group_wider_than_the_pool_commits_every_account() {
        let dir = tempfile::tempdir().unwrap();
        let store = small_pool(dir.path(), 1, None);
        let (hold, applying, release) = hold();
        store.tx.send(hold).unwrap();
        applying.recv().unwrap();
        let mut answers = Vec::new();
        let mut made = Vec::new();
        for account in 1..=3 {
            for _ in 0..2 {
                let uuid = Uuid::new_v4();
                let (tx, rx) = oneshot::channel();
                store
                    .tx
                    .send(Cmd::Create(account, vec![(uuid, new_task("t"))], tx))
                    .unwrap();
                answers.push(rx);
                made.push((account, uuid));
            }
        }
        release.send(()).unwrap();
        for rx in answers {
            rx.await.unwrap().unwrap();
        }
        assert_eq!(
            store.group_commits().commits.get(),
            3,
            "one commit per account"
        );
        for (account, uuid) in made {
            let got = store.get(account, vec![uuid]).await.unwrap();
            assert!(got[0].is_some(), "account {account}'s task {uuid}");
        }
        assert_eq!(store.replica_stats().open.get(), 1);
    }

    /// A replica unused for the idle time is closed (its WAL goes with it), and opened again
    /// by the next command.
    #[tokio::test]
    async fn an_idle_replica_is_closed_and_opened_again_when_needed() {
        let dir = tempfile::tempdir().unwrap();
        let store = small_pool(dir.path(), 8, Some(Duration::from_millis(200)));
        let stats = store.replica_stats().clone();
        let uuid = Uuid::new_v4();
        store.create(1, vec![(uuid, new_task("t"))]).await.unwrap();
        assert_eq!(stats.open.get(), 1);
        let file = dir
            .path()
            .join("accounts/1")
            .join(callsign_tcstore::FILE_NAME);
        let wal = dir.path().join("accounts/1/taskchampion.sqlite3-wal");
        let closed = crate::wal::testing::wait_until(Duration::from_secs(5), || {
            stats.open.get() == 0 && !wal.exists()
        });
        assert!(closed, "open {}, wal {}", stats.open.get(), wal.exists());
        assert_eq!(stats.closed_total("idle"), 1);
        assert!(file.exists());
        let got = store.get(1, vec![uuid]).await.unwrap();
        assert_eq!(got[0].as_ref().map(|s| s.uuid), Some(uuid));
        assert_eq!(stats.open.get(), 1);
    }

    /// 600 tasks created and 590 of them completed, then 1,000 more created: the account's
    /// working set (on disk and cached) is rebuilt to the 1,010 pending ones once it holds more
    /// than twice the 600 it held at its last rebuild, instead of keeping every task ever
    /// created (1,600).
    #[tokio::test]
    async fn the_working_set_is_bounded_by_the_live_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let store = small_pool(dir.path(), 4, None);
        let uuids: Vec<Uuid> = (0..600).map(|_| Uuid::new_v4()).collect();
        let tasks = uuids.iter().map(|u| (*u, new_task("t"))).collect();
        store.create(1, tasks).await.unwrap();
        let done = TaskPatch {
            status: Some(TaskStatus::Completed),
            ..TaskPatch::default()
        };
        let patches = uuids[10..].iter().map(|u| (*u, done.clone())).collect();
        store.update(1, patches).await.unwrap();
        store.get(1, Vec::new()).await.unwrap();
        let file = dir
            .path()
            .join("accounts/1")
            .join(callsign_tcstore::FILE_NAME);
        let c = rusqlite::Connection::open(file).unwrap();
        let in_set: i64 = c
            .query_row("SELECT count(*) FROM working_set", [], |r| r.get(0))
            .unwrap();
        // Rebuilt after the creates (600 live), not yet after the completions.
        assert_eq!(in_set, 600);
        let more: Vec<(Uuid, NewTask)> =
            (0..1000).map(|_| (Uuid::new_v4(), new_task("t"))).collect();
        store.create(1, more).await.unwrap();
        // The rebuild follows the answer: the next command waits for it.
        store.get(1, Vec::new()).await.unwrap();
        let in_set: i64 = c
            .query_row("SELECT count(*) FROM working_set", [], |r| r.get(0))
            .unwrap();
        assert_eq!(in_set, 1010, "the 10 pending and the 1,000 new ones");
    }
}
