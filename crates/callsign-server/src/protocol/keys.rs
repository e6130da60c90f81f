//! The order of key writes onto TaskChampion tasks within this process.
//!
//! A key write reads keys in one transaction and writes them onto the tasks later, so a move or
//! a rename can commit in between and make it stale. `mark_in_store` then leaves (or puts)
//! the row unmarked, for the reaper to write the current key. What it cannot see is a stale
//! write that lands *after* the fresh one and is marked before it: so a write that changes keys
//! (a move's, a rename's) runs alone per account, and the others share ([`KeyWrites`]): a
//! stale write either lands before the fresh one or is unmarked after it. Across PostgreSQL
//! nodes the same race is left to that unmarking and the reaper.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

use callsign_storage::AccountId;

/// Per account: shared for ordinary key writes, exclusive for those that change keys.
#[derive(Default)]
pub struct KeyWrites(Mutex<HashMap<AccountId, Arc<RwLock<()>>>>);

impl KeyWrites {
    fn lock_of(&self, account: AccountId) -> Arc<RwLock<()>> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        // Forget the locks nobody holds (one entry per account that is writing keys now).
        if map.len() > 64 {
            map.retain(|_, l| Arc::strong_count(l) > 1);
        }
        map.entry(account).or_default().clone()
    }

    /// For a write of keys as they were read (a create's, the reaper's).
    pub async fn shared(&self, account: AccountId) -> OwnedRwLockReadGuard<()> {
        self.lock_of(account).read_owned().await
    }

    /// For a write of keys a move or rename just changed.
    pub async fn exclusive(&self, account: AccountId) -> OwnedRwLockWriteGuard<()> {
        self.lock_of(account).write_owned().await
    }
}
