//! `GET /v1/changes?since=<cursor>&limit=<n>`: tasks changed since the cursor, with their keys.
//! The cursor is opaque to clients: the last change-feed position they saw, enciphered for
//! their account ([`crate::cursor`]).
use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::Json;
use callsign_core::dto::ChangesPage;
use callsign_core::ErrorCode;
use serde::Deserialize;
use uuid::Uuid;

use super::auth::Account;
use crate::error::{ApiError, ApiResult};
use crate::protocol::load_tasks;
use crate::state::AppState;
use callsign_storage::AccountId;

pub const DEFAULT_LIMIT: usize = 500;
pub const MAX_LIMIT: usize = 1000;

/// Unknown parameters are refused (`400 invalid_query`), as unknown body fields are.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ChangesQuery {
    /// The cursor of the last page read; none (or `0`) for the start of the feed.
    pub since: Option<String>,
    /// Tasks per page (default 500); 0 is read as 1, more than 1000 as 1000.
    #[param(value_type = Option<i64>, minimum = 0)]
    pub limit: Option<String>,
    /// Seconds to hold the request, 0-60, when nothing is newer than `since`: it answers as
    /// soon as a change commits in the account, else after this long with no changes and the
    /// same cursor.
    #[param(value_type = Option<i64>, minimum = 0, maximum = 60)]
    pub wait: Option<String>,
}

/// `wait`: absent (no wait), or whole seconds 0-60; else `400 invalid_query`.
pub fn parse_wait(wait: Option<&str>) -> ApiResult<std::time::Duration> {
    let max = crate::feed::MAX_WAIT.as_secs();
    match wait.map(str::trim) {
        None => Ok(std::time::Duration::ZERO),
        Some(s) => s
            .parse::<u64>()
            .ok()
            .filter(|n| *n <= max)
            .map(std::time::Duration::from_secs)
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::InvalidQuery,
                    format!("wait={s:?}: give whole seconds, 0-{max}"),
                )
            }),
    }
}

/// `limit`: absent, or an integer from 0 to `i64::MAX`, clamped to 1..=[`MAX_LIMIT`]; else
/// (`limit=` included) `400 invalid_query`.
pub fn parse_limit(limit: Option<&str>) -> ApiResult<usize> {
    match limit.map(str::trim) {
        None => Ok(DEFAULT_LIMIT),
        Some(s) => s
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .map(|n| usize::try_from(n).unwrap_or(MAX_LIMIT).clamp(1, MAX_LIMIT))
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::InvalidQuery,
                    format!("limit={s:?}: give a number of tasks, 1-{MAX_LIMIT}"),
                )
            }),
    }
}

/// The feed position of `since` ([`parse_cursor`]), checked against the feed: a position past
/// its end reveals a rollback ([`crate::recovery::check_cursor`]).
pub async fn cursor_after(
    state: &AppState,
    account: AccountId,
    since: Option<&str>,
) -> ApiResult<i64> {
    // Learns of a rollback another node or the admin recorded (read at most every few seconds).
    state
        .checkins
        .rollback_at(&*state.alloc, callsign_storage::now_ms())
        .await?;
    let after = parse_cursor(state, account, since)?;
    if after > 0 {
        crate::recovery::check_cursor(state, account, after).await?;
    }
    Ok(after)
}

/// The feed position of `since` (none, empty or `0`: the start).
pub fn parse_cursor(state: &AppState, account: AccountId, since: Option<&str>) -> ApiResult<i64> {
    match since.map(str::trim) {
        None | Some("") | Some("0") => Ok(0),
        Some(s) => state
            .cursors
            .decode(account, s, state.checkins.epoch())
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::InvalidCursor,
                    format!("{s:?} is not a cursor this server gave out"),
                )
            }),
    }
}

/// One page of the feed after `after`. A task whose latest change is the entry `answered`
/// names for it is left out (the caller's answers already carry it); the cursor still moves
/// past it.
pub async fn page(
    state: &AppState,
    account: AccountId,
    after: i64,
    limit: usize,
    answered: &HashMap<Uuid, i64>,
) -> ApiResult<ChangesPage> {
    let (rows, has_more) = state.alloc.changes_since(account, after, limit).await?;
    let cursor = rows.last().map_or(after, |r| r.seq);
    state.checkins.reached(account, cursor);
    let uuids = rows
        .iter()
        .filter(|r| answered.get(&r.task_uuid) != Some(&r.seq))
        .map(|r| r.task_uuid)
        .collect();
    let tasks = load_tasks(state, account, uuids).await?;
    Ok(ChangesPage {
        changes: tasks.into_iter().flatten().collect(),
        cursor: state
            .cursors
            .encode(account, cursor, state.checkins.epoch()),
        has_more,
        rollback_at: None,
    })
}

#[utoipa::path(get, path = "/v1/changes", operation_id = "listChanges", params(ChangesQuery),
    description = "With `wait`, a request that finds nothing newer than `since` is held until a \
        change commits in the account (any node) or `wait` seconds pass; the server holds a \
        bounded number of such requests (`429` with `Retry-After` beyond) and answers them at \
        once when it stops.",
    responses((status = 200, body = ChangesPage),
    (status = 400, body = callsign_core::Problem, description = "invalid_cursor, invalid_query")))]
pub async fn list(
    State(state): State<AppState>,
    Account(account): Account,
    query: Result<Query<ChangesQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<ChangesPage>> {
    let Query(q) = query.map_err(|e| ApiError::new(ErrorCode::InvalidQuery, e.body_text()))?;
    let after = cursor_after(&state, account, q.since.as_deref()).await?;
    let limit = parse_limit(q.limit.as_deref())?;
    let wait = parse_wait(q.wait.as_deref())?;
    let mut answer = held_page(&state, account, after, limit, wait).await?;
    answer.rollback_at = state
        .checkins
        .rollback_at(&*state.alloc, callsign_storage::now_ms())
        .await?;
    Ok(Json(answer))
}

/// A page after `after`; with `wait`, one that finds nothing is held until a change commits
/// in the account or `wait` passes.
async fn held_page(
    state: &AppState,
    account: callsign_storage::AccountId,
    after: i64,
    limit: usize,
    wait: std::time::Duration,
) -> ApiResult<ChangesPage> {
    if wait.is_zero() {
        return page(state, account, after, limit, &HashMap::new()).await;
    }
    // Subscribed before the read, so a commit between the read and the wait still wakes it.
    let mut held = state.feed.hold(account)?;
    let first = page(state, account, after, limit, &HashMap::new()).await?;
    if !first.changes.is_empty() || first.has_more {
        return Ok(first);
    }
    held.wait(wait).await;
    page(state, account, after, limit, &HashMap::new()).await
}
