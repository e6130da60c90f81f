//! The open replicas: at most a fixed number, the least recently used leaving first.
//!
//! Pure bookkeeping: the caller passes the time and closes what comes out. An entry is "used"
//! each time it is looked up; [`Pool::make_room`] hands back the least recently used once the
//! pool is full, [`Pool::idle`] those unused for a while (looked for every [`sweep_every`]),
//! [`Pool::oldest`] a share of the least recently used (to free descriptors when the process
//! runs out of them).
use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::alloc::AccountId;

pub struct Pool<V> {
    cap: usize,
    entries: HashMap<AccountId, Entry<V>>,
    /// Bumped on every use: orders uses even within one clock tick.
    uses: u64,
}

struct Entry<V> {
    value: V,
    use_no: u64,
    used_at: Instant,
}

impl<V> Pool<V> {
    /// A pool of at most `cap` entries (at least one).
    pub fn new(cap: usize) -> Pool<V> {
        Pool {
            cap: cap.max(1),
            entries: HashMap::new(),
            uses: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn contains(&self, account: AccountId) -> bool {
        self.entries.contains_key(&account)
    }

    /// The entry, marked used at `now`.
    pub fn get(&mut self, account: AccountId, now: Instant) -> Option<&mut V> {
        let e = self.entries.get_mut(&account)?;
        self.uses += 1;
        e.use_no = self.uses;
        e.used_at = now;
        Some(&mut e.value)
    }

    /// The entry without marking it used.
    pub fn peek(&self, account: AccountId) -> Option<&V> {
        self.entries.get(&account).map(|e| &e.value)
    }

    /// The entry, changed without marking it used (housekeeping).
    pub fn peek_mut(&mut self, account: AccountId) -> Option<&mut V> {
        self.entries.get_mut(&account).map(|e| &mut e.value)
    }

    /// When the pool is full, takes out the least recently used entry, to make room for one
    /// more.
    pub fn make_room(&mut self) -> Option<(AccountId, V)> {
        if self.entries.len() < self.cap {
            return None;
        }
        self.oldest(1).pop()
    }

    /// Adds an entry, used at `now`. The caller made room first; a pool over its cap gives up
    /// its least recently used entries at the next [`Pool::make_room`].
    pub fn insert(&mut self, account: AccountId, value: V, now: Instant) {
        self.uses += 1;
        let entry = Entry {
            value,
            use_no: self.uses,
            used_at: now,
        };
        self.entries.insert(account, entry);
    }

    /// Takes out every entry not used since `now - after`, least recently used first.
    pub fn idle(&mut self, now: Instant, after: Duration) -> Vec<(AccountId, V)> {
        let mut idle: Vec<(u64, AccountId)> = self
            .entries
            .iter()
            .filter(|(_, e)| now.saturating_duration_since(e.used_at) >= after)
            .map(|(a, e)| (e.use_no, *a))
            .collect();
        idle.sort_unstable();
        self.take(idle)
    }

    /// Takes out the `n` least recently used entries (fewer if the pool holds fewer), least
    /// recently used first.
    pub fn oldest(&mut self, n: usize) -> Vec<(AccountId, V)> {
        let mut all: Vec<(u64, AccountId)> =
            self.entries.iter().map(|(a, e)| (e.use_no, *a)).collect();
        all.sort_unstable();
        all.truncate(n);
        self.take(all)
    }

    fn take(&mut self, order: Vec<(u64, AccountId)>) -> Vec<(AccountId, V)> {
        order
            .into_iter()
            .filter_map(|(_, a)| self.entries.remove(&a).map(|e| (a, e.value)))
            .collect()
    }
}

/// How often the worker looks for idle replicas ([`Pool::idle`]): a replica unused for `idle` is
/// closed within `idle` and a quarter.
pub fn sweep_every(idle: Duration) -> Duration {
    (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(60))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accounts<V>(taken: Vec<(AccountId, V)>) -> Vec<AccountId> {
        taken.into_iter().map(|(a, _)| a).collect()
    }

    /// Opens `account` as the store does: make room, then insert.
    fn open(pool: &mut Pool<()>, account: AccountId, now: Instant) -> Option<AccountId> {
        let out = pool.make_room().map(|(a, _)| a);
        pool.insert(account, (), now);
        out
    }

    #[test]
    fn the_least_recently_used_leaves_when_the_pool_is_full() {
        let t = Instant::now();
        let mut pool = Pool::new(3);
        for a in 1..=3 {
            assert_eq!(open(&mut pool, a, t), None);
        }
        // 1 is used again: 2 is now the least recently used, then 3, then 1.
        assert!(pool.get(1, t).is_some());
        assert_eq!(open(&mut pool, 4, t), Some(2));
        assert_eq!(open(&mut pool, 5, t), Some(3));
        assert_eq!(open(&mut pool, 6, t), Some(1));
        assert_eq!(pool.len(), 3);
        assert!(!pool.contains(1) && pool.contains(4) && pool.contains(6));
        // A look that does not use it leaves the order alone.
        assert!(pool.peek(4).is_some());
        assert_eq!(open(&mut pool, 7, t), Some(4));
    }

    #[test]
    fn idle_entries_are_taken_out_oldest_first_and_used_ones_stay() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut pool = Pool::new(10);
        pool.insert(1, (), t0);
        pool.insert(2, (), t0 + s);
        pool.insert(3, (), t0 + 2 * s);
        pool.get(1, t0 + 3 * s);
        // At 4 s with 2 s of idleness allowed: 2 (used at 1 s) and 3 (at 2 s) go, 1 stays.
        assert_eq!(accounts(pool.idle(t0 + 4 * s, 2 * s)), vec![2, 3]);
        assert_eq!(
            accounts(pool.idle(t0 + 4 * s, 2 * s)),
            Vec::<AccountId>::new()
        );
        assert_eq!(accounts(pool.idle(t0 + 5 * s, 2 * s)), vec![1]);
        assert_eq!(pool.len(), 0);
    }

    #[test]
    fn oldest_takes_a_share_of_the_least_recently_used() {
        let t = Instant::now();
        let mut pool = Pool::new(10);
        for a in [5, 3, 9, 1] {
            pool.insert(a, (), t);
        }
        pool.get(5, t);
        assert_eq!(accounts(pool.oldest(2)), vec![3, 9]);
        assert_eq!(accounts(pool.oldest(5)), vec![1, 5]);
        assert_eq!(pool.len(), 0);
    }

    #[test]
    fn a_pool_holds_at_least_one() {
        let t = Instant::now();
        let mut pool = Pool::new(0);
        assert_eq!(open(&mut pool, 1, t), None);
        assert_eq!(open(&mut pool, 2, t), Some(1));
    }
}
