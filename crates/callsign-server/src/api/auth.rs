//! Bearer-token authentication: the extractor every `/v1` handler starts with.
//!
//! A token found in the database is remembered for [`TokenCache::TTL`], so a device's requests
//! do not each pay a database read on a blocking thread. Tokens cannot be revoked yet; whoever
//! adds revocation must clear this cache.
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::FromRequestParts;
use axum::http::{header, request::Parts};
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

impl FromRequestParts<AppState> for Account {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .ok_or_else(unauthorized)?;
        let hash = accounts::hash_token(&token);
        if let Some(a) = state.tokens.get(&hash) {
            return Ok(Account(a));
        }
        let key = hash.clone();
        let account = state
            .db
            .read(move |c| accounts::account_by_token_hash(c, &key))
            .await?
            .ok_or_else(unauthorized)?;
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
