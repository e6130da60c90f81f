//! The worker's replicas, opened when an account's command needs one and kept in a bounded
//! pool ([`super::pool`]): at most [`Settings::max_open`] open at once (the least recently used
//! is closed to make room), and each closed once unused for [`Settings::idle_close`]
//! ([`super::housekeeping`]). Closing one tells the checkpoint thread to close its connection
//! too, so the last connection's close checkpoints the WAL into the database and removes it;
//! nothing committed depends on a replica staying open (a group that spans more accounts than
//! the pool holds opens again, for its commit, those closed while it was applied). Every open
//! checks the replica's binding again ([`bind_replica`]). When an open fails for want of file
//! descriptors, the worker closes the least recently used half of the pool and tries once more;
//! if that fails too the command is answered [`StoreError::OutOfFiles`] (`503` with
//! `Retry-After`), and the next command tries again.
//!
//! [`Settings::max_open`]: super::Settings::max_open
//! [`Settings::idle_close`]: super::Settings::idle_close
use std::time::Instant;

use callsign_storage::{AccountId, Error as StoreError};
use callsign_tcstore::InlineStorage;

use super::bind::bind_replica;
use super::worker::Worker;
use super::{backend, Result};

/// Why a replica was closed (`callsign_replicas_closed_total{reason}`).
#[derive(Clone, Copy)]
pub(super) enum Closed {
    /// To make room in a full pool.
    Lru,
    /// Unused for the idle time.
    Idle,
    /// To free descriptors after an open failed for want of them.
    Pressure,
}

impl Closed {
    fn as_str(self) -> &'static str {
        match self {
            Closed::Lru => "lru",
            Closed::Idle => "idle",
            Closed::Pressure => "pressure",
        }
    }
}

impl Worker {
    /// Closes a replica taken out of the pool. Its checkpoint connection goes too, so the
    /// last close checkpoints the WAL and removes it (a reader elsewhere, Taskwarrior say,
    /// keeps it for that reader's own close).
    pub(super) fn close(&mut self, account: AccountId, replica: InlineStorage, why: Closed) {
        let path = replica.path().map(std::path::Path::to_owned);
        drop(replica);
        self.trim_due.remove(&account);
        if let Some(path) = path {
            self.checkpointer.closed(&path);
        }
        tracing::debug!(account, reason = why.as_str(), "closed a replica");
        self.stats.closed(why.as_str());
        self.stats.open.set(self.replicas.len() as i64);
    }

    pub(super) async fn replica(&mut self, account: AccountId) -> Result<&mut InlineStorage> {
        if !self.replicas.contains(account) {
            if let Some((lru, r)) = self.replicas.make_room() {
                self.close(lru, r, Closed::Lru);
            }
            let opened = self.open_under_pressure(account).await;
            self.failing.record(account, &opened);
            let now = Instant::now();
            self.replicas.insert(account, opened?, now);
            if self.history.is_some() {
                self.trim_due.insert(account, now);
            }
            self.stats.open.set(self.replicas.len() as i64);
            self.hand_off(account);
        }
        Ok(self
            .replicas
            .get(account, Instant::now())
            .expect("inserted above"))
    }

    /// Opens the replica; if that fails while the process is out of descriptors, closes the
    /// least recently used half of the pool and tries once more.
    async fn open_under_pressure(&mut self, account: AccountId) -> Result<InlineStorage> {
        let first = match self.open_replica(account).await {
            Err(StoreError::Backend(e)) if crate::files::exhausted() => e,
            other => return other,
        };
        let freed = self.replicas.oldest(self.replicas.len().div_ceil(2));
        let closed = freed.len();
        for (a, r) in freed {
            self.close(a, r, Closed::Pressure);
        }
        match self.open_replica(account).await {
            Err(StoreError::Backend(e)) if crate::files::exhausted() => {
                let limit = crate::files::limit().map(|(soft, _)| soft);
                let err = StoreError::OutOfFiles {
                    account,
                    // Counting them takes a descriptor too.
                    open: crate::files::open_files()
                        .map_or_else(|_| "all".to_owned(), |n| n.to_string()),
                    limit: limit.map_or_else(|| "no limit".to_owned(), |n| n.to_string()),
                    replicas: self.replicas.len(),
                    closed,
                };
                tracing::warn!(first = %first, last = %e, "{err}");
                Err(err)
            }
            other => other,
        }
    }

    async fn open_replica(&self, account: AccountId) -> Result<InlineStorage> {
        let dir = self
            .data_dir
            .join(crate::datadir::ACCOUNTS_DIR)
            .join(account.to_string());
        crate::datadir::create_private_dir(&dir).map_err(backend)?;
        crate::datadir::make_private_db_file(&dir.join(callsign_tcstore::FILE_NAME))
            .map_err(backend)?;
        let storage = InlineStorage::open(&dir).await.map_err(backend)?;
        bind_replica(
            &dir.join(callsign_tcstore::FILE_NAME),
            &self.instance,
            account,
        )?;
        storage
            .set_wal_autocheckpoint(crate::alloc::WAL_CHECKPOINT_PAGES)
            .map_err(backend)?;
        Ok(storage)
    }

    /// Tells the checkpoint thread that `account`'s replica has frames in its WAL: a commit
    /// went into it, or it has just been opened (a crash may have left a WAL behind).
    pub(super) fn hand_off(&self, account: AccountId) {
        if let Some(path) = self.replicas.peek(account).and_then(|r| r.path()) {
            self.checkpointer.committed(path);
        }
    }
}
