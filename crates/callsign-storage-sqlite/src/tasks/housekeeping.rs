//! Housekeeping, on the worker after a group's answers are sent (or when it has nothing else
//! to do): replicas unused for [`Settings::idle_close`] are closed ([`Worker::close_idle`]); an
//! open replica's operations log loses what is older than [`Settings::history_retention`], one
//! batch of at most 1,000 operations at a time and at most one batch every 100 ms
//! (`callsign_tcstore` trims; tasks are never touched), checked when the replica is opened and
//! then every minute; and an account's working set is rebuilt once it holds more than twice its
//! live (pending) tasks, so neither the file nor the in-memory copy keeps every task ever
//! created.
//!
//! [`Settings::idle_close`]: super::Settings::idle_close
//! [`Settings::history_retention`]: super::Settings::history_retention
use std::time::{Duration, Instant};

use callsign_storage::AccountId;
use chrono::Utc;

use super::pool;
use super::replicas::Closed;
use super::worker::Worker;

/// The most operations one trim deletes (one short transaction on the worker).
const TRIM_BATCH: usize = 1000;

/// The least time between two trims, so that a backlog never holds the worker long.
pub(super) const TRIM_PAUSE: Duration = Duration::from_millis(100);

/// How often an open replica's log is looked at again once nothing was left to trim: a
/// quarter of the history kept, within [50 ms, 1 min].
fn trim_every(history: Duration) -> Duration {
    (history / 4).clamp(Duration::from_millis(50), Duration::from_secs(60))
}

impl Worker {
    /// Rebuilds the account's working set once it holds more than twice its live tasks
    /// (`InlineStorage::compact_working_set`), after the commit that grew it was answered.
    pub(super) fn compact_working_set(&mut self, account: AccountId) {
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
    pub(super) async fn housekeeping_due(&self) {
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
    pub(super) fn trim_some(&mut self) {
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
    pub(super) fn close_idle(&mut self) {
        let Some(after) = self.idle_close else {
            return;
        };
        let now = Instant::now();
        if now < self.next_idle_sweep {
            return;
        }
        self.next_idle_sweep = now + pool::sweep_every(after);
        for (account, r) in self.replicas.idle(now, after) {
            self.close(account, r, Closed::Idle);
        }
    }
}
