//! What the server keeps for recovery after a rollback (docs/RECOVERY.md): the settings a
//! recovery waits by, the tokens' sightings ([`seen`]), and in memory the rollback notice, the
//! cursors' rollback epoch and how far this node has seen each account's feed reach. The steps
//! that use them are in [`crate::recovery`].
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use callsign_storage::{AccountId, AllocStore, Caller};

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

/// The rollback notice this process serves, the cursors' epoch, and how far it has seen each
/// account's feed reach.
#[derive(Default)]
pub struct Checkins {
    notice: Mutex<Option<(Instant, Option<i64>)>>,
    /// The furthest feed position this node has given out, per account.
    reached: Mutex<HashMap<AccountId, i64>>,
    /// When the database was last rolled back (0: never): the epoch of the cursors it gives
    /// out (`crate::cursor`).
    epoch: AtomicI64,
}

/// Records that the token hashing to `hash`, just read from the database as `caller`, was
/// used at `now`, if its recorded sighting is an hour old. Called where the token is read (at
/// most once a minute per token: the token cache answers in between), so it costs a request
/// nothing else; a failed write is tried again at the next read.
pub async fn seen(alloc: &dyn AllocStore, caller: &Caller, hash: &[u8], now: i64) {
    if caller
        .last_seen_at
        .is_some_and(|at| now - at < SEEN_EVERY_MS)
    {
        return;
    }
    if let Err(e) = alloc.token_seen(hash, now).await {
        tracing::warn!(error = %e, "could not record a token's use");
    }
}

impl Checkins {
    /// When the database was last rolled back, within the notice period.
    pub async fn rollback_at(
        &self,
        alloc: &dyn AllocStore,
        now: i64,
    ) -> callsign_storage::Result<Option<i64>> {
        {
            let n = self.notice.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((read, at)) = *n {
                if read.elapsed() < NOTICE_TTL {
                    return Ok(at);
                }
            }
        }
        let last = alloc.last_rollback().await?.map(|r| r.at);
        self.epoch.fetch_max(last.unwrap_or(0), Ordering::Relaxed);
        let at = last.filter(|&at| now - at < NOTICE_MS);
        *self.notice.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), at));
        Ok(at)
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
