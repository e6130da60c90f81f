//! Held `GET /v1/changes?wait=S` requests: a request that finds nothing newer than its cursor
//! waits until a change commits in its account (then reads again and answers at once), `S`
//! passes, or the server shuts down (then it reads once more and answers, most often with no
//! changes and the same cursor).
//!
//! Each account with held requests has one `watch` channel; a commit in the account bumps it
//! ([`Feed::changed`], through `AppState::feed_changed` after each create or update commit,
//! rename and reaper settle), waking only that account's requests, so an idle server with any
//! number of held requests does no work. A request subscribes before it reads the feed, so a
//! commit between its read and its wait still wakes it. On PostgreSQL `feed_changed` also
//! announces the commit to the other nodes, off the request path
//! (`AllocStore::announce_change`: `NOTIFY callsign_feed`), and each node's
//! `callsign_storage_postgres::listen` connection wakes its own. A change this process never
//! hears of (an admin command in another process) is still answered when the wait ends, since
//! the feed is read again then.
//!
//! The client's sync loop keeps one held request open while online and passes when it answers,
//! so a teammate's key reaches an open app within about a second (`callsign_sync::sync_loop`;
//! figures in docs/PERFORMANCE.md).
//!
//! Bounded: at most [`Limits::per_account`] held requests per account and [`Limits::total`]
//! in all (never more than half the server's connections, [`Limits::within_connections`]);
//! beyond that `429 too_many_requests` with `Retry-After`.
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use callsign_core::ErrorCode;
use tokio::sync::watch;

use crate::error::ApiError;
use callsign_storage::AccountId;

/// The longest a request may be held.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub per_account: usize,
    pub total: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            per_account: 200,
            total: 10_000,
        }
    }
}

impl Limits {
    /// `self` with the total cut to half of `max_connections`: every held request keeps a
    /// connection open, and a server whose connections are all held accepts no push at all,
    /// while a device refused a held request only falls back to pulling.
    pub fn within_connections(self, max_connections: usize) -> Limits {
        Limits {
            total: self.total.min(max_connections / 2),
            ..self
        }
    }
}

#[derive(Debug)]
pub struct Feed {
    limits: Limits,
    accounts: Mutex<HashMap<AccountId, Arc<watch::Sender<u64>>>>,
    held: AtomicUsize,
    shutdown: watch::Sender<bool>,
}

/// Which accounts have an announcement to the other nodes on the way (PostgreSQL's `NOTIFY`),
/// so that commits meanwhile fold into one more instead of one each: under load one account's
/// batches commit faster than a `NOTIFY` each would go out.
#[derive(Debug, Default)]
pub struct Announcing {
    /// Account → whether another commit came while its announcement was on the way.
    accounts: Mutex<HashMap<AccountId, bool>>,
}

impl Announcing {
    /// A commit in `account`: true when the caller should send an announcement (none on the
    /// way), false when the one on the way will be followed by another.
    pub fn begin(&self, account: AccountId) -> bool {
        let mut a = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        match a.get_mut(&account) {
            Some(again) => {
                *again = true;
                false
            }
            None => {
                a.insert(account, false);
                true
            }
        }
    }

    /// The announcement was sent: true when commits came meanwhile and the caller should send
    /// one more (it stays on the way), false when `account` is done.
    pub fn sent(&self, account: AccountId) -> bool {
        let mut a = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        match a.get_mut(&account) {
            Some(again) if *again => {
                *again = false;
                true
            }
            _ => {
                a.remove(&account);
                false
            }
        }
    }
}

/// A held request's place: dropping it lets another request be held.
pub struct Held<'a> {
    feed: &'a Feed,
    account: AccountId,
    changes: watch::Receiver<u64>,
    shutdown: watch::Receiver<bool>,
}

impl Feed {
    pub fn new(limits: Limits) -> Feed {
        Feed {
            limits,
            accounts: Mutex::default(),
            held: AtomicUsize::new(0),
            shutdown: watch::channel(false).0,
        }
    }

    /// A change committed in `account`: its held requests read the feed again.
    pub fn changed(&self, account: AccountId) {
        let accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = accounts.get(&account) {
            tx.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Every account may have changed (a lost connection to the other nodes).
    pub fn changed_everywhere(&self) {
        let accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        for tx in accounts.values() {
            tx.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// The server is stopping: every held request answers now.
    pub fn shut_down(&self) {
        self.shutdown.send_replace(true);
    }

    /// Requests held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }

    /// A place for one held request of `account`, subscribed from now on; `429` beyond the
    /// limits.
    pub fn hold(&self, account: AccountId) -> Result<Held<'_>, ApiError> {
        let busy = |what: &str| ApiError {
            retry_after: Some(5),
            ..ApiError::new(
                ErrorCode::TooManyRequests,
                format!("too many held change requests {what}; retry, or poll without wait"),
            )
        };
        let mut accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        if self.held.load(Ordering::SeqCst) >= self.limits.total {
            return Err(busy("on this server"));
        }
        let tx = accounts
            .entry(account)
            .or_insert_with(|| Arc::new(watch::channel(0).0));
        if tx.receiver_count() >= self.limits.per_account {
            return Err(busy("for this account"));
        }
        let changes = tx.subscribe();
        self.held.fetch_add(1, Ordering::SeqCst);
        Ok(Held {
            feed: self,
            account,
            changes,
            shutdown: self.shutdown.subscribe(),
        })
    }
}

impl Held<'_> {
    /// Waits until a change in the account since [`Feed::hold`], `wait` passes or the server
    /// stops; true for a change.
    pub async fn wait(&mut self, wait: Duration) -> bool {
        if *self.shutdown.borrow() {
            return false;
        }
        tokio::select! {
            r = self.changes.changed() => r.is_ok(),
            _ = tokio::time::sleep(wait) => false,
            _ = self.shutdown.changed() => false,
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut accounts = self.feed.accounts.lock().unwrap_or_else(|p| p.into_inner());
        self.feed.held.fetch_sub(1, Ordering::SeqCst);
        // This request's receiver is still counted until the fields drop: 1 means "only us".
        if accounts
            .get(&self.account)
            .is_some_and(|tx| tx.receiver_count() <= 1)
        {
            accounts.remove(&self.account);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_change_wakes_only_its_accounts_requests() {
        let feed = Feed::new(Limits::default());
        let mut a = feed.hold(1).unwrap();
        let mut b = feed.hold(2).unwrap();
        feed.changed(1);
        assert!(a.wait(Duration::from_secs(5)).await, "woken");
        assert!(
            !b.wait(Duration::from_millis(20)).await,
            "another account: timed out"
        );
        assert_eq!(feed.held(), 2);
        drop((a, b));
        assert_eq!(feed.held(), 0);
        assert!(
            feed.accounts.lock().unwrap().is_empty(),
            "nothing kept for idle accounts"
        );
    }

    #[test]
    fn commits_while_an_announcement_is_on_the_way_fold_into_one_more() {
        let a = Announcing::default();
        assert!(a.begin(1), "the first commit announces");
        assert!(!a.begin(1), "a second waits for the first");
        assert!(!a.begin(1), "and a third folds into the same");
        assert!(a.begin(2), "another account announces on its own");
        assert!(a.sent(1), "one more after the first: the later commits");
        assert!(!a.sent(1), "nothing came meanwhile: done");
        assert!(a.begin(1), "the next commit announces again");
        assert!(!a.sent(1));
        assert!(!a.sent(2));
        assert!(a.accounts.lock().unwrap().is_empty(), "nothing kept");
    }

    #[test]
    fn held_requests_leave_half_the_connections_free() {
        let asked = Limits {
            per_account: 200,
            total: 10_000,
        };
        assert_eq!(asked.within_connections(512).total, 256);
        assert_eq!(asked.within_connections(512).per_account, 200);
        assert_eq!(asked.within_connections(50_000), asked);
        assert_eq!(asked.within_connections(1).total, 0);
    }

    #[tokio::test]
    async fn a_change_before_the_wait_is_not_lost() {
        let feed = Feed::new(Limits::default());
        let mut a = feed.hold(1).unwrap();
        feed.changed(1); // between the request's read and its wait
        assert!(a.wait(Duration::from_millis(20)).await);
    }

    #[tokio::test]
    async fn held_requests_are_bounded_and_end_on_shutdown() {
        let feed = Feed::new(Limits {
            per_account: 2,
            total: 3,
        });
        let a1 = feed.hold(1).unwrap();
        let _a2 = feed.hold(1).unwrap();
        let e = feed.hold(1).err().unwrap();
        assert_eq!(
            (e.code, e.retry_after),
            (ErrorCode::TooManyRequests, Some(5))
        );
        let mut b = feed.hold(2).unwrap();
        assert!(feed.hold(3).is_err(), "the total");
        drop(a1);
        let _c = feed.hold(3).unwrap();
        let started = std::time::Instant::now();
        let (changed, ()) = tokio::join!(b.wait(Duration::from_secs(30)), async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            feed.shut_down();
        });
        let took = started.elapsed();
        assert!(!changed && took < Duration::from_secs(5));
    }
}
