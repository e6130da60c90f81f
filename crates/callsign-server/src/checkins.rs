//! What the server keeps in memory for recovery after a rollback (docs/RECOVERY.md): the
//! settings a recovery waits by, the tokens' sightings written, the rollback notice and the
//! cursors' rollback epoch, and how far this node has seen each account's feed reach. The
//! steps that use them are in [`crate::recovery`].
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use callsign_storage::{AccountId, AllocStore};

/// How long a recovery waits, and for whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// A recovery ends at the latest this long after it began, whoever has checked in.
    pub grace: Duration,
    /// The devices waited for: those seen in this period before the backup was taken.
    pub active: Duration,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            grace: Duration::from_secs(72 * 3600),
            active: Duration::from_secs(30 * 24 * 3600),
        }
    }
}

/// How long after a rollback devices are told of it.
pub const NOTICE_MS: i64 = 90 * 24 * 3600 * 1000;
/// How often a token's last sighting is written.
const SEEN_EVERY_MS: i64 = 3600 * 1000;
/// How long a read of the latest rollback serves the sync answers.
const NOTICE_TTL: Duration = Duration::from_secs(5);

/// The check-ins this process records, the rollback notice it serves, and how far it has
/// seen each account's feed reach.
#[derive(Default)]
pub struct Checkins {
    /// When each token's sighting was last written, by token hash.
    written: Mutex<HashMap<Vec<u8>, i64>>,
    notice: Mutex<Option<(Instant, Option<i64>)>>,
    /// The furthest feed position this node has given out, per account.
    reached: Mutex<HashMap<AccountId, i64>>,
    /// When the database was last rolled back (0: never): the epoch of the cursors it gives
    /// out (`crate::cursor`).
    epoch: AtomicI64,
}

impl Checkins {
    /// Records that the token hashing to `hash` was used at `now`, if its last sighting
    /// written here is an hour old (a failed write is tried again on its next request).
    pub async fn seen(&self, alloc: &dyn AllocStore, hash: &[u8], now: i64) {
        {
            let mut w = self.written.lock().unwrap_or_else(|p| p.into_inner());
            if w.get(hash).is_some_and(|&at| now - at < SEEN_EVERY_MS) {
                return;
            }
            w.insert(hash.to_vec(), now);
        }
        if let Err(e) = alloc.token_seen(hash, now).await {
            tracing::warn!(error = %e, "could not record a token's use");
            let mut w = self.written.lock().unwrap_or_else(|p| p.into_inner());
            w.remove(hash);
        }
    }

    /// When the database was last rolled back, within the notice period.
    pub async fn rollback_at(&self, alloc: &dyn AllocStore, now: i64) -> Option<i64> {
        {
            let n = self.notice.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((read, at)) = *n {
                if read.elapsed() < NOTICE_TTL {
                    return at;
                }
            }
        }
        let at = match alloc.last_rollback().await {
            Ok(r) => {
                self.epoch
                    .fetch_max(r.map_or(0, |r| r.at), Ordering::Relaxed);
                r.map(|r| r.at).filter(|&at| now - at < NOTICE_MS)
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not read the latest rollback");
                return None;
            }
        };
        *self.notice.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), at));
        at
    }

    /// A rollback at `at`: the notice is read again, and cursors from before it are retired.
    pub fn rollback_changed(&self, at: i64) {
        self.epoch.fetch_max(at, Ordering::Relaxed);
        *self.notice.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// The rollback epoch of the cursors given out now (see `crate::cursor`): when the
    /// database was last rolled back, as this node last read it (at most `NOTICE_TTL` ago on
    /// a request that reads a cursor).
    pub fn epoch(&self) -> i64 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// Every account's furthest feed position this node has seen.
    pub fn reached_all(&self) -> Vec<(AccountId, i64)> {
        let r = self.reached.lock().unwrap_or_else(|p| p.into_inner());
        r.iter().map(|(a, s)| (*a, *s)).collect()
    }

    /// Sets how far the feed of `account` reaches now (after a rollback took it back).
    pub fn reset_reached(&self, account: AccountId, seq: i64) {
        let mut r = self.reached.lock().unwrap_or_else(|p| p.into_inner());
        r.insert(account, seq);
    }

    /// Records that the feed of `account` reached `seq` (a page this node served).
    pub fn reached(&self, account: AccountId, seq: i64) {
        let mut r = self.reached.lock().unwrap_or_else(|p| p.into_inner());
        let at = r.entry(account).or_insert(seq);
        *at = (*at).max(seq);
    }

    /// How far this node has seen the feed of `account` reach.
    pub fn reached_of(&self, account: AccountId) -> Option<i64> {
        let r = self.reached.lock().unwrap_or_else(|p| p.into_inner());
        r.get(&account).copied()
    }
}
