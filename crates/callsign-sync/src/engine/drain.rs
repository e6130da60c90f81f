//! `callsign sync` and `callsign login`: the one-shot operations of a process without a loop.
//!
//! [`Engine::sync_until_drained`] takes the sync lock if it is free (resetting a dead holder's
//! `in_progress` rows, as the loop would), pushes and pulls until nothing is pending, and waits
//! for rows in backoff up to a deadline. If another live process holds the lock, it only watches
//! the outbox drain. An unreachable server is an error at once: the tasks stay queued.
use std::time::Duration;

use callsign_core::dto::Project;
use tokio::time::Instant;

use super::Engine;
use crate::error::{Error, Result};
use crate::events::SyncStatus;
use crate::lock::SyncLock;
use crate::projects;
use crate::settings::Token;

/// How long `login` waits for the project list (the login itself is saved regardless).
const LOGIN_WAIT: Duration = Duration::from_secs(5);

/// What `login` learned from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginReport {
    /// The member the token belongs to, or why the server could not say.
    pub me: std::result::Result<callsign_core::dto::Member, String>,
    /// The account's projects, or why they could not be fetched (the login is saved either way).
    pub projects: std::result::Result<Vec<Project>, String>,
    /// The default project after login.
    pub project: Option<String>,
    /// Tasks waiting in the local inbox (captured before there was a server): they stay on
    /// this device until the user sends them to a server project ([`Engine::send_inbox`]).
    pub local: u64,
}

impl Engine {
    /// Saves the server URL, token and device name, forgets the change cursor, then asks the server for the account's
    /// projects; the first becomes the default project if none is set.
    pub async fn login(
        &self,
        url: &str,
        token: Token,
        device: Option<String>,
    ) -> Result<LoginReport> {
        let mut s = self.settings()?;
        s.server_url = Some(url.to_owned());
        if device.is_some() {
            s.device_name = device;
        }
        self.set_settings(&s)?;
        self.set_token(&token)?;
        // A cursor means something only to the server (and account) that gave it out: after a
        // login, read the whole feed again (reconciling a task twice is harmless).
        self.store().set(crate::store::CURSOR, None)?;
        let me = self.learn_me().await;
        let projects = match tokio::time::timeout(LOGIN_WAIT, self.fetch_projects()).await {
            Ok(r) => r,
            Err(_) => Err(format!("no answer within {} s", LOGIN_WAIT.as_secs())),
        };
        Ok(LoginReport {
            me,
            projects,
            project: self.settings()?.project,
            local: self.status()?.local,
        })
    }

    /// The account's projects from the server, remembered for when it cannot be reached (the
    /// first becomes the default project if none is set).
    async fn fetch_projects(&self) -> std::result::Result<Vec<Project>, String> {
        let client = self.client().map_err(|e| e.to_string())?;
        let list = client.projects().await.map_err(|e| e.error.to_string())?;
        projects::remember(&self.store(), &list.projects).map_err(|e| e.to_string())?;
        Ok(list.projects)
    }

    /// The account's projects: fresh from the server when it answers, else as last seen
    /// (empty before the first answer, or with no server).
    pub async fn projects(&self) -> Result<Vec<Project>> {
        if let Ok(Ok(list)) = tokio::time::timeout(LOGIN_WAIT, self.fetch_projects()).await {
            return Ok(list);
        }
        projects::cached(&self.store())
    }

    /// Syncs until the outbox has nothing pending or in flight and the change feed is pulled,
    /// or `deadline` passes: the deadline bounds the whole call, whatever the server does.
    /// While another live process holds the sync lock this only watches the outbox drain, and
    /// takes the lock over the moment that process is gone.
    pub async fn sync_until_drained(&self, deadline: Duration) -> Result<SyncStatus> {
        let end = Instant::now() + deadline;
        match tokio::time::timeout_at(end, self.drain(end)).await {
            Ok(r) => r,
            Err(_) => {
                // Cut off mid-pass: what this process had claimed goes back to pending (the
                // same bodies and keys go again next time), unless another process took the
                // lock meanwhile (it resets them itself).
                if let Ok(Some(_lock)) = SyncLock::try_acquire(self.data_dir(), self.clock_ms()) {
                    self.store_reset_in_progress()?;
                }
                let status = self.status()?;
                let last = status.last_error.or_else(|| self.first_row_error());
                Err(Error::StillQueued {
                    pending: status.pending + status.in_flight,
                    reason: format!(
                        "the sync did not finish within {} s{}",
                        deadline.as_secs(),
                        last.map(|e| format!(" (last error: {e})"))
                            .unwrap_or_default()
                    ),
                })
            }
        }
    }

    async fn drain(&self, end: Instant) -> Result<SyncStatus> {
        loop {
            if let Some(acq) = SyncLock::try_acquire(self.data_dir(), self.clock_ms())? {
                return self.drain_holding(acq, end).await;
            }
            let status = self.status()?;
            if status.pending + status.in_flight == 0 {
                return Ok(status);
            }
            if Instant::now() >= end {
                let pid = SyncLock::live_holder(self.data_dir()).map(|h| h.pid);
                return Err(Error::StillQueued {
                    pending: status.pending + status.in_flight,
                    reason: Error::Busy { pid }.to_string(),
                });
            }
            tokio::time::sleep(Engine::wait_interval()).await;
        }
    }

    async fn drain_holding(&self, acq: crate::lock::Acquired, end: Instant) -> Result<SyncStatus> {
        let reset = self.store_reset_in_progress()?;
        if let Some(dead) = acq.stale {
            tracing::warn!(
                pid = dead.pid,
                reset,
                "took over the sync lock of a dead process"
            );
        }
        let syncer = self.syncer()?;
        let mut force = true;
        loop {
            let report = syncer.run(force).await.map_err(Error::from)?;
            force = false;
            let status = self.status()?;
            if report.more {
                continue;
            }
            if status.pending + status.in_flight == 0 {
                drop(acq);
                return Ok(status);
            }
            let wait_until = report
                .wake_at
                .map_or(Instant::now() + Duration::from_millis(250), |at| {
                    Instant::now() + Duration::from_millis((at - self.clock_ms()).max(0) as u64)
                });
            if wait_until > end {
                return Err(Error::StillQueued {
                    pending: status.pending,
                    reason: status
                        .last_error
                        .or_else(|| self.first_row_error())
                        .unwrap_or_else(|| "the server asked to retry later".into()),
                });
            }
            tokio::time::sleep_until(wait_until).await;
        }
    }
}
