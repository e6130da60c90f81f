//! Coalescing single requests into batches (PostgreSQL).
//!
//! On SQLite the writer threads group-commit, so concurrent single requests already share
//! transactions. On PostgreSQL each request ran its own: about eight transactions and four WAL
//! flushes a create, all serialized on the account's counter row. A [`Coalescer`] queues the
//! single creates (or updates) of one account on this node and runs whatever is waiting as one
//! `create_many` / `update_many` batch, the same code a `POST /v1/sync` batch runs, so each
//! mutation keeps exactly its single-request answer (a key repeated in the batch answers as a
//! replay of the first copy, or `422` for another request; see `Batch::phase1`).
//!
//! A batch runs in a task of its own (`tokio::spawn`), never in a caller's future: axum drops a
//! handler's future when its client disconnects, and that must not cancel a batch others wait
//! on. The worker takes everything waiting (at most `cap`), runs it, answers each caller through
//! a oneshot, and loops while more arrived meanwhile. At most `max_running` workers run per
//! queue. A caller whose answer is lost (the batch panicked) gets `503` (retryable).
//!
//! A step of a batch fails for all its mutations (one transaction), so one request the database
//! refuses (PostgreSQL's `jsonb` takes no `\u0000`, say) would fail the others with it.
//! [`isolating`] runs each request that answered `503` in a batch of several again by itself,
//! waiting up to [`ALONE_WAIT`] for its claim from the batch to be released: it fails alone, as
//! it would uncoalesced.
//!
//! Queues are per account and per kind (`PUT`s and `PATCH`es apart), each batch at most
//! [`COALESCE_CAP`]. The server coalesces only when the allocation store asks for it
//! (`AllocStore::wants_coalescing`: PostgreSQL, never SQLite) and `--coalesce-requests` is on
//! (the default); `callsign_coalesced_batch_size{op}` on `/metrics` counts the batches.
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use callsign_core::ErrorCode;
use tokio::sync::oneshot;

use super::req::{CreateReq, UpdateReq};
use crate::error::{ApiError, ApiResult};
use callsign_storage::AccountId;
use callsign_storage::Reply;

/// One mutation's answer.
pub type Answer = ApiResult<Reply>;

/// The requests of one queue waiting for a batch, and how many workers it has.
///
/// The pure part of the coalescer: which arrival starts a worker, and what a worker takes.
#[derive(Debug)]
struct Queue<T> {
    waiting: Vec<T>,
    running: usize,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            waiting: Vec::new(),
            running: 0,
        }
    }
}

impl<T> Queue<T> {
    /// Queues an arrival. True if a worker is to start for it (fewer than `max_running` run);
    /// otherwise a running worker takes it with its next batch.
    fn arrive(&mut self, item: T, max_running: usize) -> bool {
        self.waiting.push(item);
        if self.running < max_running.max(1) {
            self.running += 1;
            true
        } else {
            false
        }
    }

    /// A worker's next batch: the oldest `cap` waiting. Empty when none wait, and then the
    /// worker has stopped (it must not run again without a new [`Queue::arrive`]).
    fn next_batch(&mut self, cap: usize) -> Vec<T> {
        let n = self.waiting.len().min(cap.max(1));
        if n == 0 {
            self.running = self.running.saturating_sub(1);
        }
        self.waiting.drain(..n).collect()
    }

    fn idle(&self) -> bool {
        self.running == 0 && self.waiting.is_empty()
    }
}

type Waiter<R> = (R, oneshot::Sender<Answer>);

/// Per-account queues of one kind of request (`R`: a create or an update).
pub struct Coalescer<R> {
    queues: Mutex<HashMap<AccountId, Queue<Waiter<R>>>>,
    /// Most mutations in one batch.
    cap: usize,
    /// Most batches of one account running at once.
    max_running: usize,
}

impl<R: Send + 'static> Coalescer<R> {
    pub fn new(cap: usize, max_running: usize) -> Coalescer<R> {
        Coalescer {
            queues: Mutex::new(HashMap::new()),
            cap: cap.max(1),
            max_running: max_running.max(1),
        }
    }

    /// Runs `req` in a batch with the other requests of `account` waiting now, and returns its
    /// answer. `run` runs a batch (answers in order, one per request); the worker this call
    /// starts, if any, uses it for every batch it runs.
    pub async fn submit<F, Fut>(self: &Arc<Self>, account: AccountId, req: R, run: F) -> Answer
    where
        F: Fn(Vec<R>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<Answer>> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let start = self
            .lock()
            .entry(account)
            .or_default()
            .arrive((req, tx), self.max_running);
        if start {
            tokio::spawn(Arc::clone(self).work(account, run));
        }
        rx.await
            .unwrap_or_else(|_| Err(ApiError::unavailable("the request's batch was lost")))
    }

    /// A worker: runs batches for `account` until none wait.
    async fn work<F, Fut>(self: Arc<Self>, account: AccountId, run: F)
    where
        F: Fn(Vec<R>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<Answer>> + Send + 'static,
    {
        loop {
            let batch = {
                let mut queues = self.lock();
                let Some(q) = queues.get_mut(&account) else {
                    return;
                };
                let batch = q.next_batch(self.cap);
                if q.idle() {
                    queues.remove(&account);
                }
                batch
            };
            if batch.is_empty() {
                return;
            }
            let (reqs, answer_to): (Vec<R>, Vec<_>) = batch.into_iter().unzip();
            // A task of its own, so a panic in the batch loses only its answers (503 to its
            // callers) and this worker goes on.
            let answers = tokio::spawn(run(reqs)).await.unwrap_or_default();
            let mut answers = answers.into_iter();
            for tx in answer_to {
                let a = answers
                    .next()
                    .unwrap_or_else(|| Err(ApiError::unavailable("the batch gave no answer")));
                // A caller that went away (client disconnected) no longer listens.
                let _ = tx.send(a);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<AccountId, Queue<Waiter<R>>>> {
        self.queues.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues with requests waiting or workers running (idle ones are dropped).
    pub fn queues(&self) -> usize {
        self.lock().len()
    }
}

/// Runs `reqs` as one batch with `run`; those that answered `503` (in a batch of more than
/// one) run again, each alone and all at once, and answer from that run. A `503` leaves its
/// slot pending with no number, so the second run is a retry; it waits for the first run's
/// claim to be released (on PostgreSQL just after the answer) while it answers `409
/// request_in_progress`, for up to [`ALONE_WAIT`].
pub async fn isolating<R, C, F, Fut>(reqs: Vec<R>, copy: C, run: F) -> Vec<Answer>
where
    R: Send + 'static,
    C: Fn(&R) -> R + Clone + Send + 'static,
    F: Fn(Vec<R>) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Vec<Answer>> + Send + 'static,
{
    if reqs.len() < 2 {
        return run(reqs).await;
    }
    let mut copies: Vec<Option<R>> = reqs.iter().map(|r| Some(copy(r))).collect();
    let mut answers = run(reqs).await;
    let failed: Vec<usize> = (0..answers.len())
        .filter(|&i| is(&answers[i], ErrorCode::Unavailable))
        .collect();
    if failed.is_empty() {
        return answers;
    }
    tracing::warn!(
        failed = failed.len(),
        batch = copies.len(),
        "a coalesced batch failed; running its failed requests one by one"
    );
    let alone: Vec<_> = failed
        .iter()
        .filter_map(|&i| copies[i].take())
        .map(|r| {
            let (copy, run) = (copy.clone(), run.clone());
            tokio::spawn(async move {
                let mut wait = Duration::from_millis(5);
                let mut waited = Duration::ZERO;
                loop {
                    let a = run(vec![copy(&r)]).await.pop();
                    match a {
                        Some(a) if is(&a, ErrorCode::RequestInProgress) && waited < ALONE_WAIT => {
                            tokio::time::sleep(wait).await;
                            waited += wait;
                            wait *= 2;
                        }
                        a => return a,
                    }
                }
            })
        })
        .collect();
    for (i, h) in failed.into_iter().zip(alone) {
        if let Ok(Some(a)) = h.await {
            answers[i] = a;
        }
    }
    answers
}

/// How long a request run again alone waits for its claim from the batch to be released.
pub const ALONE_WAIT: Duration = Duration::from_millis(300);

fn is(a: &Answer, code: ErrorCode) -> bool {
    matches!(a, Err(e) if e.code == code)
}

/// Most mutations in one coalesced batch.
pub const COALESCE_CAP: usize = 256;

/// The queues that coalesce single creates and updates into batches (PostgreSQL).
pub struct Coalescers {
    pub(super) creates: std::sync::Arc<Coalescer<CreateReq>>,
    pub(super) updates: std::sync::Arc<Coalescer<UpdateReq>>,
}

impl Coalescers {
    /// At most `max_running` batches of one account and kind run at once.
    pub fn new(max_running: usize) -> Coalescers {
        Coalescers {
            creates: std::sync::Arc::new(Coalescer::new(COALESCE_CAP, max_running)),
            updates: std::sync::Arc::new(Coalescer::new(COALESCE_CAP, max_running)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn reply(n: usize) -> Answer {
        Ok(Reply {
            status: 201,
            body: n.to_string(),
            replayed: false,
            change: None,
        })
    }

    #[test]
    fn the_first_arrival_starts_a_worker_the_rest_wait_for_its_next_batch() {
        let mut q = Queue::default();
        assert!(q.arrive(1, 1));
        assert!(!q.arrive(2, 1));
        assert!(!q.arrive(3, 1));
        assert_eq!(q.next_batch(256), vec![1, 2, 3]);
        assert!(!q.arrive(4, 1), "the worker still runs: it takes 4 next");
        assert_eq!(q.next_batch(256), vec![4]);
        assert!(q.next_batch(256).is_empty());
        assert!(q.idle(), "the worker stopped");
        assert!(q.arrive(5, 1), "a new arrival starts a new worker");
    }

    #[test]
    fn a_batch_takes_at_most_cap_oldest_first() {
        let mut q = Queue::default();
        for i in 0..5 {
            q.arrive(i, 1);
        }
        assert_eq!(q.next_batch(2), vec![0, 1]);
        assert_eq!(q.next_batch(2), vec![2, 3]);
        assert_eq!(q.next_batch(2), vec![4]);
        assert!(!q.idle());
        assert!(q.next_batch(2).is_empty());
        assert!(q.idle());
    }

    #[test]
    fn at_most_max_running_workers_start() {
        let mut q = Queue::default();
        assert!(q.arrive(1, 2));
        assert!(q.arrive(2, 2));
        assert!(!q.arrive(3, 2));
        assert_eq!(q.next_batch(256), vec![1, 2, 3]);
        assert!(q.next_batch(256).is_empty(), "the second worker stops");
        assert!(!q.idle(), "the first still runs");
        assert!(q.arrive(4, 2), "room for a second worker again");
    }

    /// A batch that fails because of one request (99): the others, run alone, succeed.
    #[tokio::test]
    async fn a_request_that_fails_a_batch_fails_alone() {
        let runs = Arc::new(Mutex::new(Vec::new()));
        let log = runs.clone();
        let run = move |reqs: Vec<usize>| {
            log.lock().unwrap().push(reqs.clone());
            async move {
                let fail = reqs.contains(&99);
                reqs.into_iter()
                    .map(|r| match fail {
                        true => Err(ApiError::unavailable("refused")),
                        false => reply(r),
                    })
                    .collect()
            }
        };
        let got = isolating(vec![1, 99, 2], |r| *r, run.clone()).await;
        let bodies: Vec<_> = got
            .iter()
            .map(|a| a.as_ref().map(|r| r.body.clone()))
            .collect();
        assert!(
            matches!(&bodies[..], [Ok(a), Err(_), Ok(b)] if a == "1" && b == "2"),
            "{got:?}"
        );
        let mut alone = runs.lock().unwrap()[1..].to_vec();
        alone.sort();
        assert_eq!(
            alone,
            vec![vec![1], vec![2], vec![99]],
            "each failed request ran alone"
        );
        runs.lock().unwrap().clear();
        assert_eq!(isolating(vec![99], |r| *r, run).await.len(), 1);
        assert_eq!(
            runs.lock().unwrap().len(),
            1,
            "a batch of one does not run twice"
        );
    }

    /// Run alone, a request whose claim from the batch is not yet released (409) tries again.
    #[tokio::test]
    async fn a_request_run_alone_waits_for_its_claim() {
        let attempts = Arc::new(AtomicUsize::new(0));
        let seen = attempts.clone();
        let run = move |reqs: Vec<usize>| {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            async move {
                let answer = |r| match n {
                    0 => Err(ApiError::unavailable("the batch failed")),
                    1 | 2 => Err(ApiError::in_progress()),
                    _ => reply(r),
                };
                reqs.into_iter().map(answer).collect()
            }
        };
        let got = isolating(vec![1, 2], |r| *r, run).await;
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(Result::is_ok), "{got:?}");
        assert!(attempts.load(Ordering::SeqCst) >= 4, "{attempts:?}");
    }

    /// Requests that arrive while a batch runs join the next one, and every caller gets the
    /// answer for its own request.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_callers_share_batches_and_get_their_own_answers() {
        let c = Arc::new(Coalescer::<usize>::new(256, 1));
        let batches = Arc::new(Mutex::new(Vec::new()));
        let (release, gate) = tokio::sync::watch::channel(false);
        let mut callers = Vec::new();
        for i in 0..20 {
            let (c, seen, gate) = (c.clone(), batches.clone(), gate.clone());
            callers.push(tokio::spawn(async move {
                c.submit(7, i, move |reqs: Vec<usize>| {
                    let (batches, mut gate) = (seen.clone(), gate.clone());
                    async move {
                        batches.lock().unwrap().push(reqs.len());
                        // The first batch waits until every caller has queued.
                        let _ = gate.wait_for(|open| *open).await;
                        reqs.into_iter().map(reply).collect()
                    }
                })
                .await
            }));
            if i == 0 {
                // Let the first batch start before the others arrive.
                while batches.lock().unwrap().is_empty() {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }
        while c.lock().get(&7).map_or(0, |q| q.waiting.len()) < 19 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        release.send(true).unwrap();
        for (i, h) in callers.into_iter().enumerate() {
            assert_eq!(h.await.unwrap().unwrap().body, i.to_string());
        }
        assert_eq!(*batches.lock().unwrap(), vec![1, 19]);
        assert_eq!(c.queues(), 0, "the idle queue was dropped");
    }

    /// A caller that goes away does not cancel the batch; a batch that panics answers 503 and
    /// the queue goes on serving.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dropped_caller_does_not_cancel_the_batch_and_a_panic_answers_503() {
        let c = Arc::new(Coalescer::<usize>::new(256, 1));
        let ran = Arc::new(AtomicUsize::new(0));
        let run = {
            let ran = ran.clone();
            move |reqs: Vec<usize>| {
                let ran = ran.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    assert!(!reqs.contains(&99), "a batch that panics");
                    ran.fetch_add(reqs.len(), Ordering::SeqCst);
                    reqs.into_iter().map(reply).collect::<Vec<_>>()
                }
            }
        };
        let caller = tokio::spawn({
            let (c, run) = (c.clone(), run.clone());
            async move { c.submit(1, 5, run).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        caller.abort();
        let _ = caller.await;
        let lost = c.submit(1, 99, run.clone()).await.unwrap_err();
        assert_eq!(lost.code, ErrorCode::Unavailable);
        assert_eq!(ran.load(Ordering::SeqCst), 1, "the abandoned batch ran");
        assert_eq!(c.submit(1, 6, run).await.unwrap().body, "6");
    }
}
