//! Bearer-token authentication: the extractor every `/v1` handler starts with.
//!
//! A token found in the database is remembered for [`TokenCache::TTL`], so a device's requests
//! do not each pay a database read on a blocking thread. Tokens cannot be revoked yet; whoever
//! adds revocation must clear this cache.
//!
//! Failed authentications are limited per client address ([`crate::throttle`]): past the
//! limit, a token not in the cache is answered `429 too_many_requests` with `Retry-After`,
//! unchecked. A request with two `Authorization` headers is `400 duplicate_header`.
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::{header, request::Parts, HeaderName};
use callsign_core::ErrorCode;

use crate::db::{accounts, AccountId};
use crate::error::ApiError;
use crate::AppState;

/// The account the request's bearer token belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Account(pub AccountId);

fn unauthorized() -> ApiError {
    ApiError::new(
        ErrorCode::Unauthorized,
        "send Authorization: Bearer <token> with a token from `callsign-server token create`",
    )
}

/// Accounts of recently seen tokens, by the token's SHA-256 (the token itself is not kept).
#[derive(Default)]
pub struct TokenCache {
    seen: Mutex<HashMap<Vec<u8>, (AccountId, Instant)>>,
}

impl TokenCache {
    pub const TTL: Duration = Duration::from_secs(60);
    /// Entries kept at most; the cache starts over when full.
    const CAP: usize = 10_000;

    fn get(&self, hash: &[u8]) -> Option<AccountId> {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.get(hash)
            .filter(|(_, at)| at.elapsed() < Self::TTL)
            .map(|(a, _)| *a)
    }

    fn put(&self, hash: Vec<u8>, account: AccountId) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() >= Self::CAP {
            seen.clear();
        }
        seen.insert(hash, (account, Instant::now()));
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

impl FromRequestParts<AppState> for Account {
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
        if let Some(a) = hash.as_deref().and_then(|h| state.tokens.get(h)) {
            return Ok(Account(a));
        }
        if present {
            if let Some(wait) = state.auth_failures.blocked(ip, Instant::now()) {
                return Err(ApiError {
                    retry_after: Some(wait.as_secs().max(1)),
                    ..ApiError::new(
                        ErrorCode::TooManyRequests,
                        "too many failed authentications from this address; wait and retry",
                    )
                });
            }
        }
        let hash = hash.ok_or_else(failed)?;
        let account = state
            .alloc
            .account_by_token_hash(&hash)
            .await?
            .ok_or_else(failed)?;
        state.tokens.put(hash, account);
        Ok(Account(account))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_answers_only_for_tokens_it_was_given_and_starts_over_when_full() {
        let cache = TokenCache::default();
        assert_eq!(cache.get(b"a"), None);
        cache.put(b"a".to_vec(), 7);
        assert_eq!(cache.get(b"a"), Some(7));
        assert_eq!(cache.get(b"b"), None);
        for i in 0..TokenCache::CAP {
            cache.put(i.to_le_bytes().to_vec(), 1);
        }
        assert_eq!(cache.get(b"a"), None, "forgotten when the cache filled up");
        assert!(cache.seen.lock().unwrap().len() <= TokenCache::CAP);
    }
}
