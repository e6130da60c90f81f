//! Bearer-token authentication: the extractors every `/v1` handler starts with. A token
//! belongs to one member of one account ([`Caller`]); [`Account`] is the account alone.
//!
//! A token found in the database is remembered for [`TokenCache::TTL`], so a device's requests
//! do not each pay a database read on a blocking thread. Removing a member must stop their
//! tokens from the next request on, wherever the removal was made, so every cached entry
//! carries the [`Revocations`] stamp it was read under and counts only while the stamp is
//! unchanged: a removal in this process bumps it, the admin CLI on SQLite rewrites the data
//! dir's marker file ([`mark_revoked`]), and on PostgreSQL every node hears the removal's
//! `NOTIFY` ([`crate::pg::listen`]).
//!
//! Failed authentications are limited per client address ([`crate::throttle`]): past the
//! limit, a token not in the cache is answered `429 too_many_requests` with `Retry-After`,
//! unchecked. A request with two `Authorization` headers is `400 duplicate_header`.
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::{header, request::Parts, HeaderName};
use callsign_core::{ErrorCode, Role};

use crate::db::{accounts, AccountId, Caller};
use crate::error::ApiError;
use crate::AppState;

/// The account the request's bearer token belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Account(pub AccountId);

fn unauthorized() -> ApiError {
    ApiError::new(
        ErrorCode::Unauthorized,
        "send Authorization: Bearer <token> with a token from `callsign-server member add` \
         (a removed member's tokens no longer work)",
    )
}

/// `403 forbidden` unless the caller is one of the team's owners.
pub fn owners_only(caller: &Caller, what: &str) -> Result<(), ApiError> {
    if caller.role == Role::Owner {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::Forbidden,
        format!(
            "only the team's owners may {what}; {} is a member (ask an owner)",
            caller.name
        ),
    ))
}

/// The file an admin command rewrites after removing a member, in an SQLite data dir.
pub const REVOKED_MARKER: &str = "members.revoked";

/// Tells a running server on `data_dir` that tokens were revoked: rewrites the marker file
/// (a new inode each time, so even a coarse clock changes its identity).
pub fn mark_revoked(data_dir: &Path) -> std::io::Result<()> {
    let tmp = data_dir.join(format!("{REVOKED_MARKER}.tmp"));
    std::fs::write(&tmp, crate::db::now_ms().to_string())?;
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

    fn get(&self, hash: &[u8], stamp: Stamp) -> Option<Caller> {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.get(hash)
            .filter(|(_, at, was)| at.elapsed() < Self::TTL && *was == stamp)
            .map(|(c, _, _)| c.clone())
    }

    fn put(&self, hash: Vec<u8>, caller: Caller, stamp: Stamp) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() >= Self::CAP {
            seen.clear();
        }
        seen.insert(hash, (caller, Instant::now(), stamp));
    }
}

/// `400 duplicate_header` when `name` appears more than once: which one counts would
/// depend on the proxy in front.
pub fn single_header(parts: &Parts, name: &HeaderName) -> Result<(), ApiError> {
    if parts.headers.get_all(name).iter().nth(1).is_some() {
        return Err(ApiError::new(
            ErrorCode::DuplicateHeader,
            format!("send the {name} header once"),
        ));
    }
    Ok(())
}

/// The client's address: the connection's peer (set by the server's accept loop); requests
/// that come from no socket (route tests) share one.
pub fn client_ip(parts: &Parts) -> IpAddr {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED), |c| c.0.ip())
}

/// The client's address ([`client_ip`]), for a handler that limits failures itself.
pub struct ClientIp(pub IpAddr);

impl FromRequestParts<AppState> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        Ok(ClientIp(client_ip(parts)))
    }
}

/// `429 too_many_requests` with `Retry-After` while `ip` is past its failure limit.
pub fn not_blocked(state: &AppState, ip: IpAddr) -> Result<(), ApiError> {
    match state.auth_failures.blocked(ip, Instant::now()) {
        Some(wait) => Err(ApiError {
            retry_after: Some(wait.as_secs().max(1)),
            ..ApiError::new(
                ErrorCode::TooManyRequests,
                "too many failed authentications from this address; wait and retry",
            )
        }),
        None => Ok(()),
    }
}

/// Counts a failed authentication (or invite code) from `ip`.
pub fn failed_from(state: &AppState, ip: IpAddr) {
    state.auth_failures.failed(ip, Instant::now());
}

impl FromRequestParts<AppState> for Account {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = Caller::from_request_parts(parts, state).await?;
        Ok(Account(caller.account))
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        single_header(parts, &header::AUTHORIZATION)?;
        let present = parts.headers.contains_key(header::AUTHORIZATION);
        let ip = client_ip(parts);
        let failed = || {
            if present {
                state.auth_failures.failed(ip, Instant::now());
            }
            unauthorized()
        };
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty());
        let hash = token.as_deref().map(accounts::hash_token);
        // Read before the database: a removal that lands after the read below leaves the entry
        // with a stamp that is already old.
        let stamp = state.revocations.stamp();
        if let Some(c) = hash.as_deref().and_then(|h| state.tokens.get(h, stamp)) {
            return Ok(c);
        }
        if present {
            not_blocked(state, ip)?;
        }
        let hash = hash.ok_or_else(failed)?;
        let caller = state
            .alloc
            .caller_by_token_hash(&hash)
            .await?
            .ok_or_else(failed)?;
        state.tokens.put(hash, caller.clone(), stamp);
        Ok(caller)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(n: i64) -> Caller {
        Caller {
            account: n,
            member: n,
            name: callsign_core::MemberName::parse("bob").unwrap(),
            role: Role::Member,
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
