//! `POST /v1/sync`: a batch of up to 1000 mutations, each with exactly the semantics of its
//! single request, followed by the changes since the client's cursor, less the ones this
//! request's own commits appended (their answers carry the same tasks).
//!
//! Creates run first, then updates (an update needs its create committed); each group goes
//! through the protocol as one batch, so the whole request costs two allocation-database
//! transactions and one TaskChampion commit per group, however many mutations it carries.
use std::collections::HashMap;

use axum::extract::State;
use axum::Json;
use callsign_core::dto::{
    MutationOp, MutationResult, NewTask, SyncRequest, SyncResponse, TaskPatch, MAX_BATCH,
};
use callsign_core::{validate, ErrorCode};
use uuid::Uuid;

use super::auth::Account;
use super::changes::{page, parse_cursor, DEFAULT_LIMIT};
use super::extract::ApiJson;
use super::tasks::{prepare_create, prepare_update};
use crate::error::{ApiError, ApiResult};
use crate::protocol::{self, Reply};
use crate::AppState;

#[utoipa::path(post, path = "/v1/sync", request_body = SyncRequest, responses(
    (status = 200, body = SyncResponse),
    (status = 413, body = callsign_core::Problem, description = "batch_too_large, payload_too_large"),
    (status = 422, body = callsign_core::Problem, description = "invalid_body")))]
pub async fn sync(
    State(state): State<AppState>,
    Account(account): Account,
    ApiJson(req): ApiJson<SyncRequest>,
) -> ApiResult<Json<SyncResponse>> {
    if req.mutations.len() > MAX_BATCH {
        return Err(ApiError::new(
            ErrorCode::BatchTooLarge,
            format!(
                "{} mutations; a batch carries at most {MAX_BATCH}",
                req.mutations.len()
            ),
        ));
    }
    let after = parse_cursor(&state, account, req.since.as_deref())?;
    let n = req.mutations.len();
    let mut answers: Vec<Option<ApiResult<Reply>>> = vec![None; n];
    let mut creates = (Vec::new(), Vec::new());
    let mut updates = (Vec::new(), Vec::new());
    let keys: Vec<String> = req
        .mutations
        .iter()
        .map(|m| m.idempotency_key.clone())
        .collect();
    for (i, m) in req.mutations.into_iter().enumerate() {
        let prepared = validate::idempotency_key(&m.idempotency_key)
            .map_err(|e| ApiError::new(ErrorCode::IdempotencyKeyInvalid, e.0));
        let prepared = prepared.and_then(|()| match m.op {
            MutationOp::Create => serde_json::from_value::<NewTask>(m.fields)
                .map_err(|e| ApiError::new(ErrorCode::InvalidBody, format!("fields: {e}")))
                .and_then(|b| prepare_create(m.idempotency_key, m.uuid, b))
                .map(|r| creates.1.push(r))
                .map(|()| creates.0.push(i)),
            MutationOp::Update => serde_json::from_value::<TaskPatch>(m.fields)
                .map_err(|e| ApiError::new(ErrorCode::InvalidBody, format!("fields: {e}")))
                .and_then(|p| prepare_update(m.idempotency_key, m.uuid, p))
                .map(|r| updates.1.push(r))
                .map(|()| updates.0.push(i)),
        });
        if let Err(e) = prepared {
            answers[i] = Some(Err(e));
        }
    }
    if !creates.1.is_empty() {
        let out = protocol::create_many(&state, account, creates.1).await;
        for (i, a) in creates.0.into_iter().zip(out) {
            answers[i] = Some(a);
        }
    }
    if !updates.1.is_empty() {
        let out = protocol::update_many(&state, account, updates.1).await;
        for (i, a) in updates.0.into_iter().zip(out) {
            answers[i] = Some(a);
        }
    }
    // The changes this request's own commits appended: the answers carry those tasks already.
    let mut answered: HashMap<Uuid, i64> = HashMap::new();
    let results = keys
        .into_iter()
        .zip(answers)
        .map(|(k, a)| {
            let r = result(
                &state,
                k,
                a.unwrap_or_else(|| Err(ApiError::unavailable("not processed"))),
            );
            if let (Some(seq), Some(task)) = (r.1, &r.0.task) {
                answered
                    .entry(task.uuid)
                    .and_modify(|s| *s = (*s).max(seq))
                    .or_insert(seq);
            }
            r.0
        })
        .collect();
    let changes = page(&state, account, after, DEFAULT_LIMIT, &answered).await?;
    Ok(Json(SyncResponse {
        results,
        changes: changes.changes,
        cursor: changes.cursor,
        has_more: changes.has_more,
    }))
}

/// The result to send, and the change-feed entry its commit appended (none for a replay).
fn result(
    state: &AppState,
    idempotency_key: String,
    a: ApiResult<Reply>,
) -> (MutationResult, Option<i64>) {
    match a {
        Ok(reply) => {
            if reply.replayed {
                state.metrics.replayed();
            }
            let r = MutationResult {
                idempotency_key,
                status: reply.status,
                replayed: reply.replayed,
                task: serde_json::from_str(&reply.body).ok(),
                error: None,
            };
            (r, reply.change)
        }
        Err(e) => {
            let r = MutationResult {
                idempotency_key,
                status: e.code.status(),
                replayed: false,
                task: None,
                error: Some(e.problem()),
            };
            (r, None)
        }
    }
}
