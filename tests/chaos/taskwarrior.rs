//! The campaign's Taskwarrior: TaskChampion's own `Replica` on its SQLite storage with its
//! remote sync client (`ServerConfig::Remote`), the library and protocol Taskwarrior 3's
//! `task add`, `task modify`, `task done` and `task sync` run. It lives in a thread of its own
//! (the replica's futures are not `Send`), which takes the campaign's commands in order: local
//! changes commit to the replica at once, offline; a sync runs while the campaign goes on, so
//! it meets the proxy's faults and the server's crashes as a background `task sync` would. A
//! failed sync changes nothing locally (TaskChampion's sync is one transaction) and is simply
//! run again later.
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use taskchampion::storage::AccessMode;
use taskchampion::{Operations, Replica, ServerConfig, SqliteStorage, Status, Task};
use uuid::Uuid;

/// What `callsign-server account taskwarrior` printed: Taskwarrior's sync settings.
#[derive(Debug, Clone)]
pub struct Link {
    pub client_id: Uuid,
    pub encryption_secret: String,
}

enum Cmd {
    /// `task add DESCRIPTION [project:P]` with this UUID.
    Add {
        uuid: Uuid,
        description: String,
        project: Option<String>,
    },
    /// `task UUID modify DESCRIPTION`.
    Describe { uuid: Uuid, description: String },
    /// `task UUID done`.
    Complete { uuid: Uuid },
    /// `task sync`; the outcome goes to `reply` when there is one.
    Sync {
        reply: Option<Sender<Result<(), String>>>,
    },
}

/// What the worker did that the campaign counts or logs.
#[derive(Default)]
struct Shared {
    syncs: AtomicU64,
    failed_syncs: AtomicU64,
    /// A background sync is queued or running.
    syncing: AtomicBool,
    /// Sync outcomes not yet taken into the campaign's events.
    log: Mutex<Vec<String>>,
}

/// The Taskwarrior replica and the thread that owns it.
pub struct Taskwarrior {
    pub dir: PathBuf,
    tx: Option<Sender<Cmd>>,
    worker: Option<JoinHandle<Result<()>>>,
    shared: Arc<Shared>,
}

impl Taskwarrior {
    /// Opens (creating) a replica in `dir` that syncs with `url` under `link`.
    pub fn open(dir: &Path, url: &str, link: &Link) -> Result<Taskwarrior> {
        std::fs::create_dir_all(dir)?;
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let shared = Arc::new(Shared::default());
        let worker = {
            let (dir, url, link, shared) =
                (dir.to_owned(), url.to_owned(), link.clone(), shared.clone());
            std::thread::Builder::new()
                .name("taskwarrior".into())
                .spawn(move || work(&dir, &url, &link, &shared, rx, ready_tx))?
        };
        match ready_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => bail!("opening the Taskwarrior replica: {e}"),
            Err(_) => bail!("the Taskwarrior replica did not open within 30 s"),
        }
        Ok(Taskwarrior {
            dir: dir.to_owned(),
            tx: Some(tx),
            worker: Some(worker),
            shared,
        })
    }

    fn send(&self, cmd: Cmd) -> Result<()> {
        self.tx
            .as_ref()
            .ok_or_else(|| anyhow!("the Taskwarrior replica is closed"))?
            .send(cmd)
            .map_err(|_| anyhow!("the Taskwarrior thread ended early"))
    }

    /// Creates a pending task in the replica (offline; a later sync sends it).
    pub fn add(&self, uuid: Uuid, description: &str, project: Option<&str>) -> Result<()> {
        self.send(Cmd::Add {
            uuid,
            description: description.to_owned(),
            project: project.map(str::to_owned),
        })
    }

    pub fn describe(&self, uuid: Uuid, description: &str) -> Result<()> {
        self.send(Cmd::Describe {
            uuid,
            description: description.to_owned(),
        })
    }

    pub fn complete(&self, uuid: Uuid) -> Result<()> {
        self.send(Cmd::Complete { uuid })
    }

    /// Whether a background sync is queued or running.
    pub fn syncing(&self) -> bool {
        self.shared.syncing.load(Ordering::SeqCst)
    }

    /// Waits (at most `wait`) for the background sync to end.
    pub fn wait_idle(&self, wait: Duration) -> Result<()> {
        let deadline = Instant::now() + wait;
        while self.syncing() {
            if Instant::now() > deadline {
                bail!("a Taskwarrior sync took more than {wait:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Starts a background sync unless one is under way; whether it started one.
    pub fn start_sync(&self) -> Result<bool> {
        if self.shared.syncing.swap(true, Ordering::SeqCst) {
            return Ok(false);
        }
        self.send(Cmd::Sync { reply: None })?;
        Ok(true)
    }

    /// Runs a sync after whatever is queued and waits for it (at most `wait`): whether it
    /// succeeded, with the error when it did not.
    pub fn sync_now(&self, wait: Duration) -> Result<Result<(), String>> {
        let (reply, outcome) = mpsc::channel();
        self.send(Cmd::Sync { reply: Some(reply) })?;
        match outcome.recv_timeout(wait) {
            Ok(r) => Ok(r),
            Err(RecvTimeoutError::Timeout) => bail!("a Taskwarrior sync took more than {wait:?}"),
            Err(RecvTimeoutError::Disconnected) => bail!("the Taskwarrior thread ended early"),
        }
    }

    /// Syncs run in all, and those that failed.
    pub fn syncs(&self) -> (u64, u64) {
        (
            self.shared.syncs.load(Ordering::Relaxed),
            self.shared.failed_syncs.load(Ordering::Relaxed),
        )
    }

    /// The sync outcomes since the last call, for the campaign's events.
    pub fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.shared.log.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Lets the queued commands run, closes the replica and reports the thread's error (a
    /// local change that did not commit).
    pub fn close(&mut self) -> Result<()> {
        drop(self.tx.take());
        match self.worker.take() {
            Some(w) => w
                .join()
                .map_err(|_| anyhow!("the Taskwarrior thread panicked"))?,
            None => Ok(()),
        }
    }
}

impl Drop for Taskwarrior {
    fn drop(&mut self) {
        // Without `close` (a campaign that failed) the thread ends after its current command.
        drop(self.tx.take());
    }
}

/// The worker: opens the replica, then runs the commands in order until the campaign closes
/// the channel. A local change that fails ends it with that error; a failed sync is counted
/// and logged.
fn work(
    dir: &Path,
    url: &str,
    link: &Link,
    shared: &Shared,
    rx: Receiver<Cmd>,
    ready: Sender<Result<(), String>>,
) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let storage = match rt.block_on(SqliteStorage::new(dir, AccessMode::ReadWrite, true)) {
        Ok(s) => s,
        Err(e) => {
            let _ = ready.send(Err(e.to_string()));
            return Err(e.into());
        }
    };
    let mut replica = Replica::new(storage);
    let _ = ready.send(Ok(()));
    let started = Instant::now();
    while let Ok(cmd) = rx.recv() {
        match cmd {
            Cmd::Add {
                uuid,
                description,
                project,
            } => rt
                .block_on(add(&mut replica, uuid, description, project))
                .with_context(|| format!("task add {uuid}"))?,
            Cmd::Describe { uuid, description } => rt
                .block_on(modify(&mut replica, uuid, |t, ops| {
                    t.set_description(description, ops)
                }))
                .with_context(|| format!("task {uuid} modify"))?,
            Cmd::Complete { uuid } => rt
                .block_on(modify(&mut replica, uuid, |t, ops| {
                    t.set_status(Status::Completed, ops)
                }))
                .with_context(|| format!("task {uuid} done"))?,
            Cmd::Sync { reply } => {
                let n = shared.syncs.fetch_add(1, Ordering::Relaxed) + 1;
                let t0 = Instant::now();
                let outcome = rt.block_on(sync(&mut replica, url, link)).map_err(|e| {
                    shared.failed_syncs.fetch_add(1, Ordering::Relaxed);
                    format!("{e:#}")
                });
                let line = format!(
                    "tw sync #{n} at {} ms ({} ms): {}",
                    (t0 - started).as_millis(),
                    t0.elapsed().as_millis(),
                    match &outcome {
                        Ok(()) => "ok".to_owned(),
                        Err(e) => format!("failed: {e}"),
                    }
                );
                shared
                    .log
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(line);
                match reply {
                    Some(r) => {
                        let _ = r.send(outcome);
                    }
                    None => shared.syncing.store(false, Ordering::SeqCst),
                }
            }
        }
    }
    Ok(())
}

/// `task add`: what Taskwarrior 3 writes for a new task.
async fn add(
    replica: &mut Replica<SqliteStorage>,
    uuid: Uuid,
    description: String,
    project: Option<String>,
) -> Result<()> {
    let mut ops = Operations::new();
    let mut t = replica.create_task(uuid, &mut ops).await?;
    t.set_description(description, &mut ops)?;
    t.set_status(Status::Pending, &mut ops)?;
    t.set_entry(Some(taskchampion::chrono::Utc::now()), &mut ops)?;
    if let Some(p) = project {
        t.set_value("project", Some(p), &mut ops)?;
    }
    replica.commit_operations(ops).await?;
    Ok(())
}

/// Changes one task and commits.
async fn modify(
    replica: &mut Replica<SqliteStorage>,
    uuid: Uuid,
    change: impl FnOnce(&mut Task, &mut Operations) -> Result<(), taskchampion::Error>,
) -> Result<()> {
    let mut ops = Operations::new();
    let mut t = replica
        .get_task(uuid)
        .await?
        .ok_or_else(|| anyhow!("no task {uuid} in the replica"))?;
    change(&mut t, &mut ops)?;
    replica.commit_operations(ops).await?;
    Ok(())
}

/// One `task sync`: a new client each time, as a new process would have.
async fn sync(replica: &mut Replica<SqliteStorage>, url: &str, link: &Link) -> Result<()> {
    let config = ServerConfig::Remote {
        url: url.to_owned(),
        client_id: link.client_id,
        encryption_secret: link.encryption_secret.as_bytes().to_vec(),
    };
    let mut server = config.into_server().await?;
    replica.sync(&mut server, false).await?;
    Ok(())
}
