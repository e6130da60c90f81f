//! The worker thread that owns the replicas, and its group commit ([`Worker::run`]).
//!
//! The worker commits like the allocation database does (group commit): every command waiting is
//! applied to one `Operations` per account, committed once, and only then answered; requests that
//! arrive while a group is applied join it (at most 256). Key writes, which are off the request
//! path, give way to requests for up to 100 ms, so a request's commit does not carry earlier
//! requests' key writes. A Taskwarrior sync of a replica (`sync_replica`) runs on the worker after
//! the group it arrived in has committed: `Replica::sync` over `&mut InlineStorage`.
//!
//! The replicas are `callsign_tcstore::InlineStorage`: TaskChampion's file, schema and
//! operations, with SQLite run on this worker's thread (TaskChampion's own `SqliteStorage`
//! hands every call to a thread of its own, which was most of a create's cost) and commits
//! whose cost does not grow with the working set (`Replica::commit_operations` reads all of
//! it each time; `Replica::get_task` rebuilds a dependency map over it). So no `Replica` is
//! used: the worker reads `TaskData`, the model builds the operations with TaskChampion's own
//! `TaskData::update`, and the storage commits them as `Replica::commit_operations` would.
//!
//! Opening and closing replicas is in [`super::replicas`]; what the worker does between groups
//! in [`super::housekeeping`].
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use callsign_storage::model::{self, Failing, Group, Snapshot};
use callsign_storage::stats::{GroupCommits, ReplicaStats};
use callsign_storage::{AccountId, Error as StoreError, InstanceId, ReplicaSyncJob, ReplicaSynced};
use callsign_tcstore::InlineStorage;
use chrono::Utc;
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::{backend, pool, Cmd, Result, Settings};
use crate::wal::Checkpointer;

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

/// The worker's state: the open replicas, when housekeeping is next due, and its counters.
pub(super) struct Worker {
    pub(super) data_dir: PathBuf,
    pub(super) instance: InstanceId,
    pub(super) replicas: pool::Pool<InlineStorage>,
    pub(super) idle_close: Option<Duration>,
    /// When idle replicas are next looked for.
    pub(super) next_idle_sweep: Instant,
    pub(super) history: Option<Duration>,
    /// When each open replica's log is next to be trimmed.
    pub(super) trim_due: HashMap<AccountId, Instant>,
    /// No trim before this ([`TRIM_PAUSE`](super::housekeeping::TRIM_PAUSE)).
    pub(super) next_trim: Instant,
    counted: GroupCommits,
    pub(super) stats: ReplicaStats,
    pub(super) checkpointer: Checkpointer,
    pub(super) failing: Failing,
    /// Replica syncs taken with the current group, run after its commit.
    syncs: Vec<(
        AccountId,
        ReplicaSyncJob,
        oneshot::Sender<Result<ReplicaSynced>>,
    )>,
}

impl Worker {
    pub(super) fn new(
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
            next_idle_sweep: Instant::now() + idle_close.map_or(Duration::ZERO, pool::sweep_every),
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
    pub(super) async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Cmd>) {
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
