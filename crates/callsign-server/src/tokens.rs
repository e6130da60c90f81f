//! What a server remembers of tokens between requests: members of recently seen tokens
//! ([`TokenCache`]), and the revocations that invalidate them ([`Revocations`]): a removal in
//! this process, the admin CLI's marker file in an SQLite data dir ([`mark_revoked`]), or a
//! PostgreSQL `NOTIFY` heard from another node. The extractors that use them are in
//! [`crate::api::auth`].
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use callsign_storage::Caller;

/// The file an admin command rewrites after removing a member, in an SQLite data dir.
pub const REVOKED_MARKER: &str = "members.revoked";

/// Tells a running server on `data_dir` that tokens were revoked: rewrites the marker file
/// (a new inode each time, so even a coarse clock changes its identity).
pub fn mark_revoked(data_dir: &Path) -> std::io::Result<()> {
    let tmp = data_dir.join(format!("{REVOKED_MARKER}.tmp"));
    std::fs::write(&tmp, callsign_storage::now_ms().to_string())?;
    std::fs::rename(&tmp, data_dir.join(REVOKED_MARKER))
}

/// What a cached token was read under; a different stamp now means a member may have been
/// removed since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    local: u64,
    marker: Option<(u64, i64, i64)>,
}

/// The revocations this process can see: its own count, and the marker file on SQLite.
#[derive(Debug, Default)]
pub struct Revocations {
    local: AtomicU64,
    marker: Option<PathBuf>,
}

impl Revocations {
    /// Revocations announced by `data_dir`'s marker file as well as in this process.
    pub fn watching(data_dir: &Path) -> Revocations {
        Revocations {
            local: AtomicU64::new(0),
            marker: Some(data_dir.join(REVOKED_MARKER)),
        }
    }

    /// A member was removed (here, or on another node that said so).
    pub fn bump(&self) {
        self.local.fetch_add(1, Ordering::SeqCst);
    }

    /// Now's stamp: one `stat` of the marker file on SQLite.
    pub fn stamp(&self) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        let marker = self
            .marker
            .as_deref()
            .and_then(|p| std::fs::metadata(p).ok());
        Stamp {
            local: self.local.load(Ordering::SeqCst),
            marker: marker.map(|m| (m.ino(), m.mtime(), m.mtime_nsec())),
        }
    }
}

type Entry = (Caller, Instant, Stamp);

/// Members of recently seen tokens, by the token's SHA-256 (the token itself is not kept).
#[derive(Default)]
pub struct TokenCache {
    seen: Mutex<HashMap<Vec<u8>, Entry>>,
}

impl TokenCache {
    pub const TTL: Duration = Duration::from_secs(60);
    /// Entries kept at most; the cache starts over when full.
    const CAP: usize = 10_000;

    pub(crate) fn get(&self, hash: &[u8], stamp: Stamp) -> Option<Caller> {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.get(hash)
            .filter(|(_, at, was)| at.elapsed() < Self::TTL && *was == stamp)
            .map(|(c, _, _)| c.clone())
    }

    pub(crate) fn put(&self, hash: Vec<u8>, caller: Caller, stamp: Stamp) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() >= Self::CAP {
            seen.clear();
        }
        seen.insert(hash, (caller, Instant::now(), stamp));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use callsign_core::Role;

    fn caller(n: i64) -> Caller {
        Caller {
            account: n,
            member: n,
            name: callsign_core::MemberName::parse("bob").unwrap(),
            role: Role::Member,
            last_seen_at: None,
        }
    }

    #[test]
    fn the_cache_answers_only_for_tokens_it_was_given_and_starts_over_when_full() {
        let cache = TokenCache::default();
        let now = Revocations::default().stamp();
        assert_eq!(cache.get(b"a", now), None);
        cache.put(b"a".to_vec(), caller(7), now);
        assert_eq!(cache.get(b"a", now), Some(caller(7)));
        assert_eq!(cache.get(b"b", now), None);
        for i in 0..TokenCache::CAP {
            cache.put(i.to_le_bytes().to_vec(), caller(1), now);
        }
        assert_eq!(
            cache.get(b"a", now),
            None,
            "forgotten when the cache filled up"
        );
        assert!(cache.seen.lock().unwrap().len() <= TokenCache::CAP);
    }

    #[test]
    fn an_entry_read_before_a_revocation_no_longer_counts() {
        let dir = tempfile::tempdir().unwrap();
        let revs = Revocations::watching(dir.path());
        let cache = TokenCache::default();
        let before = revs.stamp();
        cache.put(b"a".to_vec(), caller(7), before);
        assert_eq!(cache.get(b"a", revs.stamp()), Some(caller(7)));
        revs.bump();
        assert_eq!(cache.get(b"a", revs.stamp()), None, "a removal here");
        let now = revs.stamp();
        cache.put(b"a".to_vec(), caller(7), now);
        mark_revoked(dir.path()).unwrap();
        assert_eq!(
            cache.get(b"a", revs.stamp()),
            None,
            "the marker file appeared"
        );
        let now = revs.stamp();
        cache.put(b"a".to_vec(), caller(7), now);
        mark_revoked(dir.path()).unwrap();
        assert_ne!(revs.stamp(), now, "the marker file was rewritten");
        assert_eq!(cache.get(b"a", revs.stamp()), None);
    }
}
