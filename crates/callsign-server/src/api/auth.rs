//! Bearer-token authentication: the extractors every `/v1` handler starts with. A token
//! belongs to one member of one account ([`Caller`]); [`Account`] is the account alone.
//!
//! A token found in the database is remembered for [`TokenCache::TTL`], so a device's requests
//! do not each pay a database read on a blocking thread. Removing a member must stop their
//! tokens from the next request on, wherever the removal was made, so every cached entry
//! carries the [`Revocations`] stamp it was read under and counts only while the stamp is
//! unchanged: a removal in this process bumps it, the admin CLI on SQLite rewrites the data
//! dir's marker file ([`mark_revoked`]), and on PostgreSQL every node hears the removal's
//! `NOTIFY` (`callsign_storage_postgres::listen`).
//!
//! Failed authentications are limited per client address ([`crate::throttle`]): past the
//! limit, a token not in the cache is answered `429 too_many_requests` with `Retry-After`,
//! unchecked. A request with two `Authorization` headers is `400 duplicate_header`.
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Instant;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::{header, request::Parts, HeaderName};
use callsign_core::{ErrorCode, Role};

use crate::error::ApiError;
use crate::state::AppState;
use callsign_storage::rows::hash_token;
use callsign_storage::{now_ms, AccountId, Caller, Rollback};

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

/// `401` for a token the database does not know, after a rollback: most likely a device set up
/// after the backup was taken. Its tasks are safe on the device; it needs a new token.
fn after_rollback(r: &Rollback) -> ApiError {
    let day = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
            .unwrap_or_else(|| ms.to_string())
    };
    let what = match r.taken_at {
        Some(taken) => format!(
            "this server was restored on {} from a backup taken {}",
            day(r.at),
            day(taken)
        ),
        None => format!("this server's database was rolled back on {}", day(r.at)),
    };
    ApiError::new(
        ErrorCode::Unauthorized,
        format!(
            "the server does not know this device's token: {what}, so a device set up after \
             that is no longer known. Your tasks are kept on this device; log in again with a \
             new token from an owner (`callsign-server token create`) or an invite code, and \
             they sync"
        ),
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

pub use crate::tokens::{mark_revoked, Revocations, TokenCache, REVOKED_MARKER};

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
        let hash = bearer(parts).map(hash_token);
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
        let Some(caller) = state.alloc.caller_by_token_hash(&hash).await? else {
            let plain = failed();
            return Err(match state.alloc.last_rollback().await {
                Ok(Some(r)) if now_ms() - r.at < crate::checkins::NOTICE_MS => after_rollback(&r),
                _ => plain,
            });
        };
        crate::checkins::seen(&*state.alloc, &caller, &hash, now_ms()).await;
        state.tokens.put(hash, caller.clone(), stamp);
        Ok(caller)
    }
}

/// The hash of the request's bearer token, for a handler that records something of the
/// device itself; take it after [`Caller`], which checks the token.
pub struct TokenHash(pub Vec<u8>);

impl FromRequestParts<AppState> for TokenHash {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        bearer(parts)
            .map(|t| TokenHash(hash_token(t)))
            .ok_or_else(unauthorized)
    }
}

/// The request's bearer token, if it sent one.
fn bearer(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}
