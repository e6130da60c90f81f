//! One sync pass: push the outbox in planned batches, record the answers, pull the change feed.
//!
//! Protocol, per batch: [`plan`] picks the rows, [`Store::claim`] marks them `in_progress` and
//! freezes them (one transaction) *before* the request leaves, the request goes out, and the
//! answers are recorded in one transaction. A crash anywhere in between leaves rows
//! `in_progress`; the next lock holder resets them to `pending` and resends the same bodies under
//! the same keys, which the server replays. A request that gets no answer releases its rows to
//! `pending` with a backoff time, so the plan waits for them and keeps capture order.
//!
//! Pipelining: while a batch is out, the next one is planned (from the rows not out) and
//! claimed. It is sent as soon as every row of the batch out is answered 2xx, with that answer's
//! cursor as `since`, and the answers are recorded while it travels; so the server still gets
//! the queue in order, one request at a time, and the cursor only moves forward. Any other answer
//! (a refusal, a transient error, no answer) puts the batch claimed ahead back exactly as it was
//! ([`Store::unclaim`]): not sent, so not frozen, and no try counted.
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use callsign_core::dto::{Mutation, SyncRequest, MAX_BATCH};
use callsign_core::ErrorCode;
use tokio::sync::broadcast;

use crate::backoff::Backoff;
use crate::client::{CallError, Client, Page, SyncAnswer};
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::events::Event;
use crate::model::OutboxRow;
use crate::outbox_state::{classify, retry_floor, Outcome};
use crate::plan::plan;
use crate::status;
use crate::store::{Store, CURSOR};
use crate::verify;
use crate::witness;

/// Mutations per `POST /v1/sync` (the server takes up to [`MAX_BATCH`]).
pub const DEFAULT_BATCH: usize = 500;
/// Tasks per `GET /v1/changes` page.
pub const PULL_LIMIT: usize = 1000;
/// Pages of the change feed one pass pulls at most; a longer feed is pulled by the next pass
/// ([`PassReport::more`]), so a feed that never ends cannot hold a pass forever.
pub const MAX_PULL_PAGES: usize = 50;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassReport {
    pub sent: usize,
    pub pulled: usize,
    /// When the first waiting row may go (Unix ms), if the pass stopped on one.
    pub wake_at: Option<i64>,
    /// The change feed has more than this pass pulled ([`MAX_PULL_PAGES`]): pass again soon.
    pub more: bool,
    /// When the server was last rolled back, as its change feed said ([`crate::witness`]).
    pub rollback_at: Option<i64>,
}

pub struct Syncer {
    pub store: Arc<Mutex<Store>>,
    pub client: Client,
    pub clock: Arc<dyn Clock>,
    pub backoff: Backoff,
    pub jitter: Arc<dyn Fn() -> f64 + Send + Sync>,
    pub events: broadcast::Sender<Event>,
    pub batch: usize,
    /// When this pass last told subscribers the counts (see [`Syncer::changed`]).
    pub status_sent: Mutex<Option<Instant>>,
}

/// How often a pass tells subscribers the counts while it records answers (each read groups
/// the open outbox; the pass's end always reports).
const STATUS_EVERY: Duration = Duration::from_millis(250);

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
        let mut untrusted = Vec::new();
        let mut listed = false;
        let report = self.push(force, &mut untrusted, &mut listed).await?;
        let mut report = self.pull(report, &mut untrusted, &mut listed).await?;
        if self.bring_back_keys(report.rollback_at).await? {
            // What the server bound comes back through the feed.
            report = self.pull(report, &mut untrusted, &mut listed).await?;
        }
        if untrusted.is_empty() {
            if !listed {
                self.learn_default_project().await;
            }
            return Ok(report);
        }
        let n = untrusted.len();
        let mut what = untrusted.into_iter().take(3).collect::<Vec<_>>().join("; ");
        if n > 3 {
            what.push_str(&format!("; and {} more", n - 3));
        }
        Err(local(Error::Untrusted(what)))
    }

    /// Once per rollback of the server, sends it every key this device holds
    /// ([`crate::witness`]); whether it sent them.
    async fn bring_back_keys(&self, rollback_at: Option<i64>) -> Result<bool, CallError> {
        let owed = {
            let store = lock(&self.store);
            witness::owed(&store, rollback_at)
                .and_then(|at| {
                    at.map(|at| Ok((at, witness::witnesses(&store, at)?)))
                        .transpose()
                })
                .map_err(local)?
        };
        let Some((at, tasks)) = owed else {
            return Ok(false);
        };
        let n = tasks.len();
        let checked_in = match witness::send(&self.client, tasks).await {
            Ok(c) => c,
            // The notice has passed meanwhile: nothing to bring back.
            Err(e) if matches!(&e.error, Error::Server(p) if p.code == ErrorCode::NoRollback) => {
                true
            }
            Err(e) => return Err(e),
        };
        tracing::info!(
            tasks = n,
            checked_in,
            "brought back this device's keys after a rollback"
        );
        if checked_in {
            lock(&self.store)
                .set(witness::WITNESSED, Some(&at.to_string()))
                .map_err(local)?;
        }
        Ok(true)
    }

    /// After a successful pass with no default project (a login that could not reach the
    /// server), learn the account's projects: the first becomes the default, so a capture
    /// without a project goes to the server again instead of the local inbox.
    async fn learn_default_project(&self) {
        match crate::settings::Settings::load(&lock(&self.store)) {
            Ok(s) if s.project.is_none() => {}
            _ => return,
        }
        self.list_projects().await;
    }

    /// Lists the account's projects and remembers them (a failure is logged: the pass goes on).
    async fn list_projects(&self) {
        let list = match self.client.projects().await {
            Ok(list) => list.projects,
            Err(e) => {
                tracing::info!("could not list the projects: {}", e.error);
                return;
            }
        };
        let store = lock(&self.store);
        if let Err(e) = crate::projects::remember(&store, &list) {
            tracing::warn!("could not store the projects: {e}");
        }
    }

    /// Tasks the server sent in a project this device does not know by any of its prefixes
    /// (renamed, or made on another device, since the list was last read): list the projects
    /// again, at most once a pass (`listed`), so a renamed project's new prefix is known
    /// before answers in it are checked, and the default project follows the rename.
    async fn learn_projects<'t>(
        &self,
        tasks: impl IntoIterator<Item = &'t callsign_core::dto::Task>,
        listed: &mut bool,
    ) {
        if *listed {
            return;
        }
        let known = crate::projects::cached(&lock(&self.store)).unwrap_or_default();
        let unknown = tasks.into_iter().any(|t| {
            t.project != callsign_core::LOCAL_PROJECT
                && !known.iter().any(|p| p.is_named(&t.project))
        });
        if unknown {
            *listed = true;
            self.list_projects().await;
        }
    }

    /// Pushes the outbox in planned batches (see the module doc). Answers that do not match
    /// their requests leave their rows queued and are added to `untrusted`.
    async fn push(
        &self,
        force: bool,
        untrusted: &mut Vec<String>,
        listed: &mut bool,
    ) -> Result<PassReport, CallError> {
        let mut report = PassReport::default();
        let mut batch = self.batch.clamp(1, MAX_BATCH);
        // `force` lifts the backoff of rows waiting when the pass starts, not of rows this pass
        // puts back to wait (that would resend them in a tight loop).
        let mut force = force;
        let mut next: Option<Flight> = None;
        loop {
            let flight = match next.take() {
                Some(f) => f,
                None => {
                    let cutoff = if force { i64::MAX } else { self.clock.now_ms() };
                    force = false;
                    let none = HashSet::new();
                    let Some(claimed) = self.take_batch(cutoff, batch, &none, &mut report)? else {
                        break;
                    };
                    let since = lock(&self.store).get(CURSOR).map_err(local)?;
                    self.send(claimed, since)
                }
            };
            // While this batch is out, claim the one after it. It goes only once every row of
            // this one is answered 2xx, so the server still sees the queue in order; otherwise
            // it is put back untouched.
            let out: HashSet<i64> = flight.rows.iter().map(|r| r.row.id).collect();
            let ahead = self
                .take_batch(self.clock.now_ms(), batch, &out, &mut report)
                .unwrap_or_else(|e| {
                    tracing::warn!("could not claim the next batch early: {}", e.error);
                    None
                });
            let Flight {
                rows,
                since_was_set,
                request,
                sent_at,
            } = flight;
            let claimed: Vec<OutboxRow> = rows.iter().map(|r| r.row.clone()).collect();
            let ids: Vec<i64> = claimed.iter().map(|r| r.id).collect();
            let answer = match request.await {
                Ok(answer) => answer,
                Err(e) => Err(CallError {
                    error: Error::Unreachable {
                        url: self.client.base().to_owned(),
                        reason: format!("the request was cut short: {e}"),
                    },
                    retry_after: None,
                }),
            };
            tracing::debug!(rows = ids.len(), round_trip = ?sent_at.elapsed(), "POST /v1/sync");
            let resp = match answer {
                Ok(resp) => resp,
                Err(e) => {
                    if let Some(a) = &ahead {
                        lock(&self.store).unclaim(&before(a)).map_err(local)?;
                    }
                    let attempt = claimed.iter().map(|r| r.try_count).max().unwrap_or(1);
                    let answer_too_big = matches!(&e.error, Error::AnswerTooLarge { .. });
                    let too_big = answer_too_big
                        || matches!(&e.error, Error::Server(p)
                        if p.status == 413 || (p.code == ErrorCode::InvalidBody && p.status == 422));
                    let now = self.clock.now_ms();
                    if is_invalid_cursor(&e) && since_was_set {
                        // The server does not know our cursor (its data was reset or rolled
                        // back): start the feed over. The pull goes first, so that after a
                        // rollback this device brings back its keys before it applies any of
                        // the feed (an answer here carries the feed from its start); the same
                        // rows go again right after, under the same keys.
                        let mut store = lock(&self.store);
                        store.set(CURSOR, None).map_err(local)?;
                        store
                            .release(&ids, now, &e.error.to_string(), now)
                            .map_err(local)?;
                        report.more = true;
                        break;
                    }
                    if too_big && claimed.len() > 1 {
                        // Split the batch until the culprit stands alone.
                        lock(&self.store)
                            .release(&ids, now, &e.error.to_string(), now)
                            .map_err(local)?;
                        batch = (claimed.len() / 2).max(1);
                        continue;
                    }
                    if too_big && !answer_too_big {
                        let answers = vec![(claimed[0].clone(), Outcome::Fail((&e.error).into()))];
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
            // Rows whose project is recovering on the server wait at least its hint.
            let mut floors: HashMap<i64, Duration> = HashMap::new();
            let answers: Vec<_> = claimed
                .into_iter()
                .map(|row| {
                    let o = match by_key.remove(&row.idempotency_key) {
                        Some(r) => {
                            if let Some(f) = retry_floor(&r) {
                                floors.insert(row.id, f);
                            }
                            classify(&r)
                        }
                        None => Outcome::Retry(
                            "the server sent no answer for this request".into(),
                            None,
                        ),
                    };
                    (row, o)
                })
                .collect();
            let answered = answers.iter().filter_map(|(_, o)| match o {
                Outcome::Done(Some(t)) => Some(t),
                _ => None,
            });
            self.learn_projects(answered.chain(&resp.page.changes), listed)
                .await;
            let answers = self.verified(answers, untrusted).map_err(local)?;
            let changes = checked(&resp.page, untrusted);
            let all_done = answers.iter().all(|(_, o)| matches!(o, Outcome::Done(_)));
            match ahead {
                // The feed up to this answer's cursor is about to be stored.
                Some(a) if all_done => next = Some(self.send(a, Some(resp.page.cursor.clone()))),
                Some(a) => lock(&self.store).unclaim(&before(&a)).map_err(local)?,
                None => {}
            }
            report.sent += answers.len();
            let now = self.clock.now_ms();
            let delay = |row: &OutboxRow| {
                let d = self.backoff.delay(
                    row.try_count.saturating_sub(1),
                    (self.jitter)(),
                    floors.get(&row.id).copied(),
                );
                now + d.as_millis() as i64
            };
            let recorded = {
                let mut store = lock(&self.store);
                status::record_answered(&store)
                    .and_then(|()| store.record_answers(&answers, delay, now))
                    .and_then(|mut changed| {
                        changed.extend(store.apply_changes(&changes, &resp.page.cursor)?);
                        Ok(changed)
                    })
            };
            let changed = match recorded {
                Ok(changed) => changed,
                Err(e) => {
                    if let Some(f) = next.take() {
                        self.abandon(f, &e);
                    }
                    return Err(local(e));
                }
            };
            tracing::debug!(local = ?sent_at.elapsed(), "batch recorded");
            report.pulled += changes.len();
            self.changed(&changed);
        }
        Ok(report)
    }

    /// Checks each success against its request ([`verify::answer`]), that no key is answered
    /// for two tasks, and that the answered key names no other task here. A success that
    /// fails is not one: its row stays queued under the same key, and why goes to `untrusted`.
    fn verified(
        &self,
        answers: Vec<(OutboxRow, Outcome)>,
        untrusted: &mut Vec<String>,
    ) -> Result<Vec<(OutboxRow, Outcome)>> {
        let shared = verify::shared_keys(answers.iter().filter_map(|(_, o)| match o {
            Outcome::Done(Some(t)) => Some(t),
            _ => None,
        }));
        let store = lock(&self.store);
        let projects = crate::projects::cached(&store)?;
        let mut out = Vec::with_capacity(answers.len());
        for (row, o) in answers {
            let Outcome::Done(task) = &o else {
                out.push((row, o));
                continue;
            };
            let mut why = verify::answer(&by_prefix_now(&row, &projects), task.as_ref()).err();
            if let (None, Some(k)) = (&why, task.as_ref().and_then(|t| t.key.as_ref())) {
                if shared.contains(k) {
                    why = Some(format!("key {k} was answered for more than one task"));
                } else if let Some(other) = store.key_owner(k)?.filter(|u| *u != row.uuid) {
                    why = Some(format!(
                        "key {k} was answered for task {}, but names task {other} here",
                        row.uuid
                    ));
                }
            }
            match why {
                None => out.push((row, o)),
                Some(why) => {
                    tracing::error!(uuid = %row.uuid, "UNTRUSTED ANSWER, row stays queued: {why}");
                    let msg = format!("the server's answer did not match the request: {why}");
                    untrusted.push(why);
                    out.push((row, Outcome::Retry(msg, None)));
                }
            }
        }
        Ok(out)
    }

    /// Plans and claims the next batch from the rows not in `skip` (a batch still out); `None`
    /// when nothing may go before `cutoff` (Unix ms).
    fn take_batch(
        &self,
        cutoff: i64,
        batch: usize,
        skip: &HashSet<i64>,
        report: &mut PassReport,
    ) -> Result<Option<Vec<Claimed>>, CallError> {
        let mut store = lock(&self.store);
        let rows = store
            .open_rows(batch * 2 + 64 + skip.len())
            .map_err(local)?;
        let rows: Vec<OutboxRow> = rows.into_iter().filter(|r| !skip.contains(&r.id)).collect();
        let parents = store.parents(rows.iter().map(|r| r.uuid)).map_err(local)?;
        let p = plan(&rows, &parents, cutoff, batch);
        report.wake_at = p.wake_at;
        if p.send.is_empty() {
            return Ok(None);
        }
        let before: HashMap<i64, &OutboxRow> = rows.iter().map(|r| (r.id, r)).collect();
        let claimed = store.claim(&p.send, self.clock.now_ms()).map_err(local)?;
        Ok(Some(
            claimed
                .into_iter()
                .map(|row| Claimed {
                    before: before[&row.id].clone(),
                    row,
                })
                .collect(),
        ))
    }

    /// Sends a claimed batch; the answer is awaited through the returned flight.
    fn send(&self, rows: Vec<Claimed>, since: Option<String>) -> Flight {
        let req = SyncRequest {
            since,
            mutations: rows
                .iter()
                .map(|c| Mutation {
                    idempotency_key: c.row.idempotency_key.clone(),
                    op: c.row.op,
                    uuid: c.row.uuid,
                    fields: c.row.body.clone(),
                })
                .collect(),
        };
        let client = self.client.clone();
        Flight {
            since_was_set: req.since.is_some(),
            rows,
            request: tokio::spawn(async move { client.sync(&req).await }),
            sent_at: Instant::now(),
        }
    }

    /// A batch sent ahead whose predecessor's answer could not be recorded: stop waiting for it
    /// and queue its rows again (a request that did reach the server is replayed under the same
    /// keys).
    fn abandon(&self, f: Flight, e: &Error) {
        f.request.abort();
        let ids: Vec<i64> = f.rows.iter().map(|c| c.row.id).collect();
        let now = self.clock.now_ms();
        if let Err(e2) = lock(&self.store).release(&ids, now, &e.to_string(), now) {
            tracing::warn!("could not queue a batch again: {e2}");
        }
    }

    /// Pulls the change feed from the stored cursor until the server has no more, or for
    /// [`MAX_PULL_PAGES`] pages. A page that says there is more but gives back the cursor it
    /// was asked with would repeat forever: that is an error. Tasks that break the field rules
    /// are skipped (and named in `untrusted`); the rest of their page is applied.
    async fn pull(
        &self,
        mut report: PassReport,
        untrusted: &mut Vec<String>,
        listed: &mut bool,
    ) -> Result<PassReport, CallError> {
        let mut limit = PULL_LIMIT;
        let mut pages = 0;
        let mut witnessed = false;
        loop {
            let since = lock(&self.store).get(CURSOR).map_err(local)?;
            let page = match self.client.changes(since.as_deref(), limit).await {
                Err(e) if is_invalid_cursor(&e) && since.is_some() => {
                    lock(&self.store).set(CURSOR, None).map_err(local)?;
                    continue;
                }
                Err(e) if matches!(e.error, Error::AnswerTooLarge { .. }) && limit > 1 => {
                    limit /= 2;
                    continue;
                }
                r => r?,
            };
            if page.has_more && since.as_deref() == Some(page.cursor.as_str()) {
                return Err(local(Error::Untrusted(format!(
                    "the change feed says there is more but does not advance (cursor {:?})",
                    verify::clip(&page.cursor)
                ))));
            }
            if page.rollback_at.is_some() {
                report.rollback_at = page.rollback_at;
                // The server was rolled back: its feed may carry older keys of tasks this
                // device holds (a move the backup lost), and applying it would replace them
                // here. The keys go back first; then this page is read again, with what the
                // server bound.
                if !witnessed {
                    witnessed = true;
                    if self.bring_back_keys(page.rollback_at).await? {
                        continue;
                    }
                }
            }
            let changes = checked(&page, untrusted);
            self.learn_projects(&changes, listed).await;
            let changed = lock(&self.store)
                .apply_changes(&changes, &page.cursor)
                .map_err(local)?;
            report.pulled += changes.len();
            pages += 1;
            self.changed(&changed);
            if !page.has_more || page.changes.is_empty() {
                return Ok(report);
            }
            if pages >= MAX_PULL_PAGES {
                report.more = true;
                return Ok(report);
            }
        }
    }

    /// Tasks changed: tell subscribers, then (at most every [`STATUS_EVERY`]) the counts, so
    /// the indicator keeps up with the rows during a long pass, not only at its end.
    fn changed(&self, uuids: &[uuid::Uuid]) {
        // A parent's subtask counts and a subtask's held state change with them.
        let related = lock(&self.store).related(uuids).unwrap_or_default();
        for &uuid in uuids.iter().chain(&related) {
            let _ = self.events.send(Event::TaskChanged { uuid });
        }
        if uuids.is_empty() {
            return;
        }
        let mut sent = self.status_sent.lock().unwrap_or_else(|p| p.into_inner());
        if sent.is_some_and(|at| at.elapsed() < STATUS_EVERY) {
            return;
        }
        *sent = Some(Instant::now());
        if let Ok(s) = status::read(&lock(&self.store)) {
            let _ = self.events.send(Event::SyncStatus(s));
        }
    }
}

/// A claimed row and the row as it was before the claim (to put it back if it does not go).
struct Claimed {
    row: OutboxRow,
    before: OutboxRow,
}

/// `row` as the server reads it now: a project it names by an earlier prefix (renamed since
/// the row was queued) by the project's prefix now, so its answer in that project matches.
fn by_prefix_now<'r>(
    row: &'r OutboxRow,
    projects: &[callsign_core::dto::Project],
) -> std::borrow::Cow<'r, OutboxRow> {
    let asked = row.body.get("project").and_then(|p| p.as_str());
    match asked.and_then(|a| Some((a, crate::projects::current_prefix(projects, a)?))) {
        Some((a, now)) if !a.eq_ignore_ascii_case(&now) => {
            let mut row = row.clone();
            row.body["project"] = serde_json::Value::String(now);
            std::borrow::Cow::Owned(row)
        }
        _ => std::borrow::Cow::Borrowed(row),
    }
}

fn before(rows: &[Claimed]) -> Vec<OutboxRow> {
    rows.iter().map(|c| c.before.clone()).collect()
}

/// A batch on its way: the request runs on its own task, so the next batch can be claimed (and
/// this one's predecessor recorded) meanwhile.
struct Flight {
    rows: Vec<Claimed>,
    since_was_set: bool,
    request: tokio::task::JoinHandle<Result<SyncAnswer, CallError>>,
    sent_at: Instant,
}

/// The tasks of a page that may be stored; why each other one is skipped goes to `untrusted`.
fn checked(page: &Page, untrusted: &mut Vec<String>) -> Vec<callsign_core::dto::Task> {
    let (good, skipped) = verify::feed(&page.changes);
    untrusted.extend(page.unreadable.iter().map(|u| verify::clip(u)));
    untrusted.extend(skipped);
    good
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
