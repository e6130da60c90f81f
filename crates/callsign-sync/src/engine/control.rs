//! Starting, stopping and poking this process's sync loop, and what a pass is built from.
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::{Engine, LoopHandle};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::pass::{PassReport, Syncer};
use crate::settings::load_token;
use crate::sync_loop::{self, Command, LoopCtx};

impl Engine {
    /// Starts this process's sync loop (needs a tokio runtime). Idempotent.
    pub fn start(&self) {
        let mut running = self.inner.running.lock().unwrap_or_else(|p| p.into_inner());
        if running.is_some() {
            return;
        }
        let (tx, rx) = mpsc::channel(16);
        let me = self.clone();
        let ctx = LoopCtx {
            data_dir: self.inner.data_dir.clone(),
            store: self.inner.store.clone(),
            wake: self.inner.wake.clone(),
            syncer: Box::new(move || me.syncer()),
            probe_every: self.inner.opts.probe_every,
        };
        let join = tokio::spawn(sync_loop::run(ctx, rx));
        let netwatch = tokio::spawn(crate::netwatch::run(self.clone()));
        *running = Some(LoopHandle { tx, join, netwatch });
    }

    /// Stops the loop and waits for it (an in-flight pass finishes first; its lock is released).
    pub async fn stop(&self) {
        let handle = self
            .inner
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(h) = handle {
            h.netwatch.abort();
            let _ = h.tx.send(Command::Stop).await;
            let _ = h.join.await;
        }
    }

    fn loop_tx(&self) -> Option<mpsc::Sender<Command>> {
        let running = self.inner.running.lock().unwrap_or_else(|p| p.into_inner());
        running.as_ref().map(|h| h.tx.clone())
    }

    /// The network is back (the OS said so: [`crate::netwatch`]): the loop tries at once.
    pub fn network_up(&self) {
        if let Some(tx) = self.loop_tx() {
            let _ = tx.try_send(Command::NetworkUp);
        }
    }

    /// One pass by this process's running loop, now.
    pub async fn sync_now(&self) -> Result<PassReport> {
        let tx = self.loop_tx().ok_or(Error::LoopStopped)?;
        let (reply, rx) = oneshot::channel();
        tx.send(Command::SyncNow(reply))
            .await
            .map_err(|_| Error::LoopStopped)?;
        rx.await.map_err(|_| Error::LoopStopped)?
    }

    /// A client for the saved server and token.
    pub fn client(&self) -> Result<Client> {
        let url = self.settings()?.server_url.ok_or(Error::NotLoggedIn)?;
        let token = load_token(&self.inner.data_dir)?.ok_or(Error::NotLoggedIn)?;
        Client::new(&url, token)
    }

    pub(crate) fn syncer(&self) -> Result<Syncer> {
        Ok(Syncer {
            store: self.inner.store.clone(),
            client: self.client()?,
            clock: self.inner.opts.clock.clone(),
            backoff: self.inner.opts.backoff,
            jitter: Arc::new(rand::random::<f64>),
            events: self.inner.events.clone(),
            batch: self.inner.opts.batch,
            status_sent: Default::default(),
        })
    }

    pub(crate) fn wait_interval() -> Duration {
        crate::sync_loop::TICK
    }

    pub(crate) fn clock_ms(&self) -> i64 {
        self.inner.opts.clock.now_ms()
    }

    pub(crate) fn store_reset_in_progress(&self) -> Result<usize> {
        self.store().reset_in_progress()
    }

    /// The newest error recorded on a waiting outbox row.
    pub(crate) fn first_row_error(&self) -> Option<String> {
        let rows = self.store().open_rows(64).ok()?;
        rows.into_iter().find_map(|r| r.last_error)
    }
}
