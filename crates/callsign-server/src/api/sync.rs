//! `POST /v1/sync`: a batch of up to 1000 mutations, each with exactly the semantics of its
//! single request, followed by the changes since the client's cursor, less the ones this
//! request's own commits appended (their answers carry the same tasks; `Reply::change` names
//! the entry each commit appended). The cursor still moves past those entries. A replayed
//! mutation's task (its answer is an old one) and a later change by anyone else are sent as
//! usual.
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

use super::changes::{cursor_after, page, DEFAULT_LIMIT};
use super::extract::ApiJson;
use super::tasks::{check_import, prepare_create, prepare_update, Team};
use crate::error::{ApiError, ApiResult};
use crate::protocol::{self, Reply};
use crate::state::AppState;
use callsign_storage::Caller;

#[utoipa::path(post, path = "/v1/sync", operation_id = "sync", request_body = SyncRequest, responses(
    (status = 200, body = SyncResponse),
    (status = 413, body = callsign_core::Problem, description = "batch_too_large, payload_too_large"),
    (status = 400, body = callsign_core::Problem, description = "invalid_cursor"),
    (status = 408, body = callsign_core::Problem, description = "request_timeout"),
    (status = 422, body = callsign_core::Problem, description = "invalid_body")))]
pub async fn sync(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(req): ApiJson<SyncRequest>,
) -> ApiResult<Json<SyncResponse>> {
    let account = caller.account;
    if req.mutations.len() > MAX_BATCH {
        return Err(ApiError::new(
            ErrorCode::BatchTooLarge,
            format!(
                "{} mutations; a batch carries at most {MAX_BATCH}",
                req.mutations.len()
            ),
        ));
    }
    let after = cursor_after(&state, account, req.since.as_deref()).await?;
    let n = req.mutations.len();
    let mut answers: Vec<Option<ApiResult<Reply>>> = vec![None; n];
    let mut creates = (Vec::new(), Vec::new());
    let mut updates = (Vec::new(), Vec::new());
    let assigns = req
        .mutations
        .iter()
        .any(|m| m.fields.get("assignee").is_some_and(|a| !a.is_null()));
    let team = Team::read(&state, account, assigns).await?;
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
                .and_then(|b| check_import(&caller, &b).map(|()| b))
                .and_then(|b| prepare_create(m.idempotency_key, m.uuid, b, &caller.name))
                .and_then(|r| team.check(r.body.assignee.as_deref()).map(|()| r))
                .map(|r| creates.1.push(r))
                .map(|()| creates.0.push(i)),
            MutationOp::Update => serde_json::from_value::<TaskPatch>(m.fields)
                .map_err(|e| ApiError::new(ErrorCode::InvalidBody, format!("fields: {e}")))
                .and_then(|p| prepare_update(m.idempotency_key, m.uuid, p))
                .and_then(|r| {
                    let assignee = r.patch.assignee.clone().flatten();
                    team.check(assignee.as_deref()).map(|()| r)
                })
                .map(|r| updates.1.push(r))
                .map(|()| updates.0.push(i)),
        });
        if let Err(e) = prepared {
            answers[i] = Some(Err(e));
        }
    }
    for (at, chunk) in chunks(creates.0, creates.1, |r| {
        new_task_bytes(&r.body) + r.idem.len()
    }) {
        let out = protocol::create_many(&state, account, chunk).await;
        for (i, a) in at.into_iter().zip(out) {
            answers[i] = Some(a);
        }
    }
    for (at, chunk) in chunks(updates.0, updates.1, |r| {
        patch_bytes(&r.patch) + r.idem.len()
    }) {
        let out = protocol::update_many(&state, account, chunk).await;
        for (i, a) in at.into_iter().zip(out) {
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

/// Text bytes a batch goes through the protocol with at most at once. A batch of ordinary
/// tasks (a few hundred bytes each) is one chunk, so it costs two allocation-database
/// transactions and one TaskChampion commit; a batch of large notes is cut into chunks of
/// about this much, one after another, because each stage holds several copies of what it
/// carries (parsed fields, fingerprinted request, TaskChampion operations, SQLite pages kept
/// until commit, stored answers): a 32 MB batch in one piece took the server's memory to
/// about 550 MiB. Each mutation keeps its single-request semantics either way.
pub const CHUNK_BYTES: usize = 2 * 1024 * 1024;

fn new_task_bytes(t: &NewTask) -> usize {
    t.description.len() + t.notes.len() + t.tags.iter().map(String::len).sum::<usize>()
}

fn patch_bytes(p: &TaskPatch) -> usize {
    p.description.as_ref().map_or(0, String::len)
        + p.notes.as_ref().map_or(0, String::len)
        + p.tags.iter().flatten().map(String::len).sum::<usize>()
        + p.base.as_ref().map_or(0, |b| {
            b.description.as_ref().map_or(0, String::len)
                + b.notes.as_ref().map_or(0, String::len)
                + b.tags.iter().flatten().map(String::len).sum::<usize>()
        })
}

/// Cuts `items` (with their places `at` in the batch) into runs of at most [`CHUNK_BYTES`]
/// by `size`, in order; an item larger than that is a run of its own.
fn chunks<T>(
    at: Vec<usize>,
    items: Vec<T>,
    size: impl Fn(&T) -> usize,
) -> Vec<(Vec<usize>, Vec<T>)> {
    let mut out: Vec<(Vec<usize>, Vec<T>)> = Vec::new();
    let mut bytes = 0;
    for (i, item) in at.into_iter().zip(items) {
        let n = size(&item);
        match out.last_mut() {
            Some((ats, run)) if bytes + n <= CHUNK_BYTES => {
                ats.push(i);
                run.push(item);
                bytes += n;
            }
            _ => {
                out.push((vec![i], vec![item]));
                bytes = n;
            }
        }
    }
    out
}

/// The result to send, and the change-feed entry its commit appended (none for a replay).
pub(super) fn result(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_keep_order_and_cut_at_the_byte_budget() {
        let sizes = vec![10, CHUNK_BYTES - 10, 1, CHUNK_BYTES * 2, 5, 6];
        let at: Vec<usize> = (0..sizes.len()).map(|i| i * 2).collect();
        let got = chunks(at, sizes.clone(), |n| *n);
        let runs: Vec<Vec<usize>> = got.iter().map(|(_, r)| r.clone()).collect();
        assert_eq!(
            runs,
            vec![
                vec![10, CHUNK_BYTES - 10],
                vec![1],
                vec![CHUNK_BYTES * 2],
                vec![5, 6]
            ]
        );
        let places: Vec<usize> = got.into_iter().flat_map(|(a, _)| a).collect();
        assert_eq!(places, vec![0, 2, 4, 6, 8, 10]);
        assert!(chunks(Vec::new(), Vec::<usize>::new(), |n| *n).is_empty());
        let small = chunks(vec![0, 1, 2], vec![100, 200, 300], |n| *n);
        assert_eq!(small.len(), 1, "ordinary batches stay one chunk");
    }
}
