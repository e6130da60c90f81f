//! One sync pass: push the outbox in planned batches, record the answers, pull the change feed.
//!
//! Protocol, per batch: [`plan`] picks the rows, [`Store::claim`] marks them `in_progress` and
//! freezes them (one transaction) *before* the request leaves, the request goes out, and the
//! answers are recorded in one transaction. A crash anywhere in between leaves rows
//! `in_progress`; the next lock holder resets them to `pending` and resends the same bodies under
//! the same keys, which the server replays. A request that gets no answer releases its rows to
//! `pending` with a backoff time, so the plan waits for them and keeps capture order.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use callsign_core::dto::{Mutation, SyncRequest, MAX_BATCH};
use callsign_core::ErrorCode;
use tokio::sync::broadcast;

use crate::backoff::Backoff;
use crate::client::{CallError, Client};
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::events::Event;
use crate::outbox_state::{classify, Outcome};
use crate::plan::plan;
use crate::status;
use crate::store::{Store, CURSOR};

/// Mutations per `POST /v1/sync` (the server takes up to [`MAX_BATCH`]).
pub const DEFAULT_BATCH: usize = 500;
/// Tasks per `GET /v1/changes` page.
pub const PULL_LIMIT: usize = 1000;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassReport {
    pub sent: usize,
    pub pulled: usize,
    /// When the first waiting row may go (Unix ms), if the pass stopped on one.
    pub wake_at: Option<i64>,
}

pub struct Syncer {
    pub store: Arc<Mutex<Store>>,
    pub client: Client,
    pub clock: Arc<dyn Clock>,
    pub backoff: Backoff,
    pub jitter: Arc<dyn Fn() -> f64 + Send + Sync>,
    pub events: broadcast::Sender<Event>,
    pub batch: usize,
}

fn lock(store: &Mutex<Store>) -> std::sync::MutexGuard<'_, Store> {
    store.lock().unwrap_or_else(|p| p.into_inner())
}

impl Syncer {
    /// One pass. `force` ignores backoff times (the user asked to sync now, or the network came
    /// back). On failure the rows stay queued and the error says whether to retry.
    pub async fn run(&self, force: bool) -> Result<PassReport, CallError> {
        let r = self.push_and_pull(force).await;
        let now = self.clock.now();
        let store = lock(&self.store);
        match &r {
            Ok(_) => status::record_success(&store, now),
            Err(e) => status::record_failure(&store, &e.error),
        }
        .map_err(|error| CallError {
            error,
            retry_after: None,
        })?;
        let _ = self
            .events
            .send(Event::SyncStatus(status::read(&store).unwrap_or_default()));
        r
    }

    async fn push_and_pull(&self, force: bool) -> Result<PassReport, CallError> {
        let mut report = PassReport::default();
        let mut batch = self.batch.clamp(1, MAX_BATCH);
        // `force` lifts the backoff of rows waiting when the pass starts, not of rows this pass
        // puts back to wait (that would resend them in a tight loop).
        let mut force = force;
        loop {
            let now = self.clock.now_ms();
            let (claimed, since) = {
                let mut store = lock(&self.store);
                let rows = store.open_rows(batch * 2 + 64).map_err(local)?;
                let p = plan(&rows, if force { i64::MAX } else { now }, batch);
                force = false;
                report.wake_at = p.wake_at;
                if p.send.is_empty() {
                    break;
                }
                let claimed = store.claim(&p.send, now).map_err(local)?;
                (claimed, store.get(CURSOR).map_err(local)?)
            };
            let since_was_set = since.is_some();
            let req = SyncRequest {
                since,
                mutations: claimed
                    .iter()
                    .map(|r| Mutation {
                        idempotency_key: r.idempotency_key.clone(),
                        op: r.op,
                        uuid: r.uuid,
                        fields: r.body.clone(),
                    })
                    .collect(),
            };
            let ids: Vec<i64> = claimed.iter().map(|r| r.id).collect();
            let attempt = claimed.iter().map(|r| r.try_count).max().unwrap_or(1);
            let sent_at = std::time::Instant::now();
            let answer = self.client.sync(&req).await;
            tracing::debug!(rows = ids.len(), round_trip = ?sent_at.elapsed(), "POST /v1/sync");
            let resp = match answer {
                Ok(resp) => resp,
                Err(e) => {
                    let too_big = matches!(&e.error, Error::Server(p)
                        if p.status == 413 || (p.code == ErrorCode::InvalidBody && p.status == 422));
                    let now = self.clock.now_ms();
                    if is_invalid_cursor(&e) && since_was_set {
                        // The server does not know our cursor (its data was reset): start the
                        // feed over; the same rows go again at once, under the same keys.
                        let mut store = lock(&self.store);
                        store.set(CURSOR, None).map_err(local)?;
                        store
                            .release(&ids, now, &e.error.to_string(), now)
                            .map_err(local)?;
                        continue;
                    }
                    if too_big && claimed.len() > 1 {
                        // Split the batch until the culprit stands alone.
                        lock(&self.store)
                            .release(&ids, now, &e.error.to_string(), now)
                            .map_err(local)?;
                        batch = (claimed.len() / 2).max(1);
                        continue;
                    }
                    if too_big {
                        let answers =
                            vec![(claimed[0].clone(), Outcome::Fail(e.error.to_string()))];
                        lock(&self.store)
                            .record_answers(&answers, |_| now, now)
                            .map_err(local)?;
                        self.changed(&[claimed[0].uuid]);
                        continue;
                    }
                    let wait = self
                        .backoff
                        .delay(attempt - 1, (self.jitter)(), e.retry_after);
                    let next = now + wait.as_millis() as i64;
                    lock(&self.store)
                        .release(&ids, next, &e.error.to_string(), now)
                        .map_err(local)?;
                    return Err(e);
                }
            };
            let mut by_key: HashMap<String, _> = resp
                .results
                .into_iter()
                .map(|r| (r.idempotency_key.clone(), r))
                .collect();
            let answers: Vec<_> = claimed
                .into_iter()
                .map(|row| {
                    let o = match by_key.remove(&row.idempotency_key) {
                        Some(r) => classify(&r),
                        None => Outcome::Retry("the server sent no answer for this request".into()),
                    };
                    (row, o)
                })
                .collect();
            report.sent += answers.len();
            let now = self.clock.now_ms();
            let delay = |row: &crate::model::OutboxRow| {
                let d = self
                    .backoff
                    .delay(row.try_count.saturating_sub(1), (self.jitter)(), None);
                now + d.as_millis() as i64
            };
            let mut store = lock(&self.store);
            let mut changed = store.record_answers(&answers, delay, now).map_err(local)?;
            changed.extend(
                store
                    .apply_changes(&resp.changes, &resp.cursor)
                    .map_err(local)?,
            );
            drop(store);
            tracing::debug!(local = ?sent_at.elapsed(), "batch recorded");
            report.pulled += resp.changes.len();
            self.changed(&changed);
        }
        report.pulled += self.pull().await?;
        Ok(report)
    }

    /// Pulls the change feed from the stored cursor until the server has no more.
    async fn pull(&self) -> Result<usize, CallError> {
        let mut pulled = 0;
        loop {
            let since = lock(&self.store).get(CURSOR).map_err(local)?;
            let page = match self.client.changes(since.as_deref(), PULL_LIMIT).await {
                Err(e) if is_invalid_cursor(&e) && since.is_some() => {
                    lock(&self.store).set(CURSOR, None).map_err(local)?;
                    continue;
                }
                r => r?,
            };
            let changed = lock(&self.store)
                .apply_changes(&page.changes, &page.cursor)
                .map_err(local)?;
            pulled += page.changes.len();
            self.changed(&changed);
            if !page.has_more || page.changes.is_empty() {
                return Ok(pulled);
            }
        }
    }

    fn changed(&self, uuids: &[uuid::Uuid]) {
        for &uuid in uuids {
            let _ = self.events.send(Event::TaskChanged { uuid });
        }
    }
}

fn is_invalid_cursor(e: &CallError) -> bool {
    matches!(&e.error, Error::Server(p) if p.code == ErrorCode::InvalidCursor)
}

fn local(error: Error) -> CallError {
    CallError {
        error,
        retry_after: None,
    }
}

/// How long the loop waits after a failed pass that left no row waiting (e.g. a failed pull).
pub fn after_failure(backoff: &Backoff, failures: u32, jitter: f64, e: &CallError) -> Duration {
    backoff.delay(failures, jitter, e.retry_after)
}
