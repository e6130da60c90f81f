//! The background sync loop: one tokio task per data dir, driven by [`Command`]s.
//!
//! It wakes at once on a local write (the engine's `Notify`), on a command (`SyncNow`,
//! `NetworkUp`), when the outbox's first waiting row is due, every [`PERIOD`] to pull other
//! devices' changes, and on a [`TICK`] when another process (the CLI beside the app) has
//! committed to the store (`PRAGMA data_version` moved). While the server cannot be reached it
//! probes `/healthz` every [`PROBE_EVERY`] and, the moment the server answers, passes at once
//! (backoff lifted) instead of waiting out the backoff: tasks captured offline get their keys
//! within about a second of the server's return. The tick also refreshes the lock's
//! heartbeat, or tries to take the lock while another live process holds it: only the lock
//! holder sends, everyone else only queues.
//!
//! While the server answers, the loop also keeps one held `GET /v1/changes?wait=` request open
//! ([`WAIT`]): the server answers it the moment a teammate's change commits, and the loop
//! passes at once, so a new key reaches this device within about a second. With a held request
//! open, the periodic pull is only a fallback ([`PERIOD_WATCHING`]). A wake-up that a pass
//! since the request was opened already explains (this device's own push pulled its own
//! change) only opens the next request from the new cursor. A wake-up that brings no new
//! cursor pauses the held request for a [`PERIOD`], so a server that keeps answering at once
//! cannot make the loop spin.
//!
//! The probe's period is the engine's `Options::probe_every` (`None` waits out the backoff
//! instead); [`crate::netwatch`] turns the OS's network-change signal into `NetworkUp`.
//! `tests/e2e/reconnect.rs` times the server's return to every key visible, with the probe and
//! without it (`--ignored`).
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, Notify};
use tokio::time::{Instant, MissedTickBehavior};

use crate::error::{Error, Result};
use crate::lock::SyncLock;
use crate::pass::{after_failure, PassReport, Syncer};
use crate::store::Store;

pub const TICK: Duration = Duration::from_millis(250);
pub const PERIOD: Duration = Duration::from_secs(30);
/// How long each held change request asks the server to wait.
pub const WAIT: Duration = Duration::from_secs(30);
/// The periodic pull while a held request is open.
pub const PERIOD_WATCHING: Duration = Duration::from_secs(600);

/// How a held change request ended: whether the server had something newer than `since`,
/// the cursor it was opened with.
struct Woke {
    newer: bool,
    since: Option<String>,
}

type Watch = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Woke>> + Send>>;
/// How often the loop asks an unreachable server whether it is back.
pub const PROBE_EVERY: Duration = Duration::from_millis(500);

pub enum Command {
    SyncNow(oneshot::Sender<Result<PassReport>>),
    /// The network came back: try at once, whatever the backoff says.
    NetworkUp,
    Stop,
}

/// What the loop needs from the engine; `syncer` builds a [`Syncer`] from the current settings
/// (`Err(NotLoggedIn)` when there is no server to talk to).
pub struct LoopCtx {
    pub data_dir: PathBuf,
    pub store: Arc<Mutex<Store>>,
    pub wake: Arc<Notify>,
    pub syncer: Box<dyn Fn() -> Result<Syncer> + Send + Sync>,
    /// How often to probe an unreachable server; `None`: never (wait out the backoff).
    pub probe_every: Option<Duration>,
}

struct State {
    ctx: LoopCtx,
    lock: Option<SyncLock>,
    failures: u32,
    next_run: Instant,
    /// The last pass could not reach the server: the next probe is due then.
    probe_at: Option<Instant>,
    /// The last pass reached the server (a held change request may be open).
    online: bool,
    /// No held request before then (a wake-up brought nothing new).
    watch_paused_until: Option<Instant>,
}

pub async fn run(ctx: LoopCtx, mut rx: mpsc::Receiver<Command>) {
    let mut st = State {
        ctx,
        lock: None,
        failures: 0,
        next_run: Instant::now(),
        probe_at: None,
        online: false,
        watch_paused_until: None,
    };
    let mut watch: Option<Watch> = None;
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut version = st.version();
    loop {
        if watch.is_none() {
            watch = st.watch();
        }
        tokio::select! {
            woke = async { watch.as_mut().expect("guarded").await }, if watch.is_some() => {
                watch = None;
                match woke {
                    Ok(Woke { newer: true, since }) => {
                        let before = st.cursor();
                        // A pass since the request was opened (this device's own push, say)
                        // has pulled what woke it: hold again from the new cursor.
                        if before == since {
                            let _ = st.pass(false).await;
                            if st.cursor() == before {
                                st.watch_paused_until = Some(Instant::now() + PERIOD);
                            }
                        }
                    }
                    Ok(Woke { newer: false, .. }) => {}
                    Err(e) => {
                        // The server may be gone: a pass says so (offline, probing) at once.
                        tracing::debug!("held change request ended: {e}");
                        st.watch_paused_until = Some(Instant::now() + PERIOD);
                        let _ = st.pass(false).await;
                    }
                }
            }
            cmd = rx.recv() => match cmd {
                None | Some(Command::Stop) => break,
                Some(Command::SyncNow(reply)) => {
                    let _ = reply.send(st.pass(true).await);
                }
                Some(Command::NetworkUp) => {
                    let _ = st.pass(true).await;
                }
            },
            _ = st.ctx.wake.notified() => {
                let _ = st.pass(false).await;
            }
            _ = tokio::time::sleep_until(st.next_run) => {
                let _ = st.pass(false).await;
            }
            _ = sleep_until_some(st.probe_at) => {
                if st.server_is_back().await {
                    tracing::info!("the server answers again: syncing now");
                    let _ = st.pass(true).await;
                } else {
                    st.probe_at = st.ctx.probe_every.map(|d| Instant::now() + d);
                }
            }
            _ = tick.tick() => {
                st.heartbeat();
                let v = st.version();
                if v != version {
                    version = v;
                    let _ = st.pass(false).await;
                }
            }
        }
    }
    tracing::debug!("sync loop stopped");
}

/// Sleeps until `at`, or forever when there is nothing to wait for.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl State {
    fn cursor(&self) -> Option<String> {
        let store = self.ctx.store.lock().unwrap_or_else(|p| p.into_inner());
        store.get(crate::store::CURSOR).ok().flatten()
    }

    /// A held change request, while online, holding the lock and not paused.
    fn watch(&mut self) -> Option<Watch> {
        if !self.online || self.lock.is_none() {
            return None;
        }
        if let Some(until) = self.watch_paused_until {
            if Instant::now() < until {
                return None;
            }
            self.watch_paused_until = None;
        }
        let client = (self.ctx.syncer)().ok()?.client;
        let since = self.cursor();
        Some(Box::pin(async move {
            let newer = client
                .changed_since(since.as_deref(), WAIT)
                .await
                .map_err(Error::from)?;
            Ok(Woke { newer, since })
        }))
    }

    fn version(&self) -> Option<i64> {
        let store = self.ctx.store.lock().unwrap_or_else(|p| p.into_inner());
        store.data_version().ok()
    }

    fn heartbeat(&mut self) {
        let now = chrono::Utc::now().timestamp_millis();
        match &mut self.lock {
            Some(l) => {
                if let Err(e) = l.heartbeat(now) {
                    tracing::warn!("sync lock heartbeat: {e}");
                }
            }
            None => {
                // Another process held the lock; take it as soon as it is free.
                if let Err(e) = self.acquire() {
                    tracing::warn!("sync lock: {e}");
                }
            }
        }
    }

    /// Takes the lock if free; a dead holder's `in_progress` rows go back to `pending`.
    fn acquire(&mut self) -> Result<bool> {
        if self.lock.is_some() {
            return Ok(true);
        }
        let now = chrono::Utc::now().timestamp_millis();
        let Some(acq) = SyncLock::try_acquire(&self.ctx.data_dir, now)? else {
            return Ok(false);
        };
        let store = self.ctx.store.lock().unwrap_or_else(|p| p.into_inner());
        let reset = store.reset_in_progress()?;
        if let Some(dead) = acq.stale {
            tracing::warn!(
                pid = dead.pid,
                reset,
                "took over the sync lock of a dead process"
            );
        }
        drop(store);
        self.lock = Some(acq.lock);
        self.next_run = Instant::now();
        Ok(true)
    }

    /// The reconnect probe (see the module doc).
    async fn server_is_back(&self) -> bool {
        match (self.ctx.syncer)() {
            Ok(s) => s.client.reachable().await,
            Err(_) => false,
        }
    }

    async fn pass(&mut self, force: bool) -> Result<PassReport> {
        if !self.acquire()? {
            let pid = SyncLock::live_holder(&self.ctx.data_dir).map(|h| h.pid);
            self.next_run = Instant::now() + PERIOD;
            return Err(Error::Busy { pid });
        }
        let syncer = match (self.ctx.syncer)() {
            Ok(s) => s,
            Err(e) => {
                self.next_run = Instant::now() + PERIOD;
                return Err(e);
            }
        };
        let now_ms = syncer.clock.now_ms();
        let until = |at: i64| Instant::now() + Duration::from_millis((at - now_ms).max(0) as u64);
        match syncer.run(force).await {
            Ok(report) => {
                // Back after failures (an outage): hold a change request again at once; the
                // pause is for a server that answers held requests at once, not for one that
                // was gone.
                if self.failures > 0 {
                    self.watch_paused_until = None;
                }
                self.failures = 0;
                self.probe_at = None;
                self.online = true;
                let period = if self.watch_paused_until.is_none() {
                    PERIOD_WATCHING
                } else {
                    PERIOD
                };
                self.next_run = if report.more {
                    Instant::now()
                } else {
                    report.wake_at.map_or(Instant::now() + period, until)
                };
                Ok(report)
            }
            Err(e) => {
                self.online = false;
                let waiting = {
                    let store = self.ctx.store.lock().unwrap_or_else(|p| p.into_inner());
                    store.next_attempt_at().ok().flatten()
                };
                self.probe_at = self
                    .ctx
                    .probe_every
                    .filter(|_| matches!(e.error, Error::Unreachable { .. }))
                    .map(|d| Instant::now() + d);
                let backoff = after_failure(&syncer.backoff, self.failures, (syncer.jitter)(), &e);
                self.failures = self.failures.saturating_add(1);
                self.next_run = match waiting {
                    Some(at) if at > now_ms => until(at),
                    _ => Instant::now() + backoff,
                };
                tracing::info!("sync pass failed: {}", e.error);
                Err(e.error)
            }
        }
    }
}
