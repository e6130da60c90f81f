//! `POST /v1/recovery/witness`: after a rollback, each device brings back the keyed tasks it
//! holds (docs/RECOVERY.md). Each task is a witnessed create (`CreateReq::witness`) through
//! the key protocol, with the idempotency key the device gives it: the task is made from the
//! device's copy if the server lost it, and its keys are bound where no other task holds them.
//! Tasks run parents first (by key depth), so a subtask finds its parent's key.
//!
//! A device counts as checked in once it sends its last batch (`complete`) and every task in
//! it is answered (a key another task holds waits for the project's recovery to end: that
//! counts as answered). A device's check-in may end its account's recovery at once.
use std::collections::HashSet;

use axum::extract::State;
use axum::Json;
use callsign_core::dto::{MutationResult, WitnessRequest, WitnessResponse, MAX_BATCH};
use callsign_core::{validate, ErrorCode, MemberName, TaskKey};
use callsign_storage::{now_ms, Caller, Witness};

use super::auth::TokenHash;
use super::extract::ApiJson;
use super::sync::result;
use super::tasks::{prepare_create, Team};
use crate::error::{ApiError, ApiResult};
use crate::protocol::{self, CreateReq};
use crate::state::AppState;

#[utoipa::path(post, path = "/v1/recovery/witness", operation_id = "witness",
    request_body = WitnessRequest, responses(
    (status = 200, body = WitnessResponse),
    (status = 409, body = callsign_core::Problem, description = "no_rollback"),
    (status = 413, body = callsign_core::Problem, description = "batch_too_large, payload_too_large"),
    (status = 422, body = callsign_core::Problem, description = "invalid_body")))]
pub async fn witness(
    State(state): State<AppState>,
    caller: Caller,
    TokenHash(token): TokenHash,
    ApiJson(req): ApiJson<WitnessRequest>,
) -> ApiResult<Json<WitnessResponse>> {
    let account = caller.account;
    if req.tasks.len() > MAX_BATCH {
        return Err(ApiError::new(
            ErrorCode::BatchTooLarge,
            format!(
                "{} tasks; a batch carries at most {MAX_BATCH}",
                req.tasks.len()
            ),
        ));
    }
    // Outside a rollback's notice period a witness would only move counters by the numbers
    // it names: refused.
    if state
        .checkins
        .rollback_at(&*state.alloc, now_ms())
        .await?
        .is_none()
    {
        return Err(ApiError::new(
            ErrorCode::NoRollback,
            "this server has not been restored or rolled back in the last 90 days: there are \
             no keys to bring back",
        ));
    }
    let team = Team::read(&state, account, true).await?;
    // Creators are kept as the devices hold them (anyone who was ever on the team), while the
    // account recovers; afterwards a witness makes tasks as its caller's, like any create.
    let ever: HashSet<String> = if crate::protocol::recovering(&state, account).await? {
        state
            .alloc
            .list_members(account)
            .await?
            .unwrap_or_default()
            .into_iter()
            .map(|m| m.name.to_string())
            .collect()
    } else {
        HashSet::new()
    };
    let n = req.tasks.len();
    let keys: Vec<String> = req
        .tasks
        .iter()
        .map(|t| t.idempotency_key.clone())
        .collect();
    let mut answers: Vec<Option<ApiResult<protocol::Reply>>> = vec![None; n];
    // By depth: a subtask's parent is answered before it.
    let mut rounds: Vec<Vec<(usize, CreateReq)>> = Vec::new();
    for (i, t) in req.tasks.into_iter().enumerate() {
        match prepare(t, &caller, &team, &ever) {
            Ok((depth, r)) => {
                if rounds.len() <= depth {
                    rounds.resize_with(depth + 1, Vec::new);
                }
                rounds[depth].push((i, r));
            }
            Err(e) => answers[i] = Some(Err(e)),
        }
    }
    for round in rounds {
        let (at, reqs): (Vec<usize>, Vec<CreateReq>) = round.into_iter().unzip();
        for (i, a) in at
            .into_iter()
            .zip(protocol::create_many(&state, account, reqs).await)
        {
            answers[i] = Some(a);
        }
    }
    let results: Vec<MutationResult> = keys
        .into_iter()
        .zip(answers)
        .map(|(k, a)| {
            let a = a.unwrap_or_else(|| Err(ApiError::unavailable("not processed")));
            result(&state, k, a).0
        })
        .collect();
    let answered = results.iter().all(|r| {
        r.status < 300
            || r.error
                .as_ref()
                .is_some_and(|p| p.code == ErrorCode::Recovering)
    });
    let checked_in = req.complete && answered;
    if checked_in {
        state.alloc.token_witnessed(&token, now_ms()).await?;
        // The last device the recovery waited for ends it now, not at the reaper's next pass.
        let (ended, _) = crate::recovery::end_when_due(&state, now_ms()).await?;
        if !ended.is_empty() {
            let again = state.clone();
            tokio::spawn(async move {
                if let Err(e) = crate::reaper::run_after_recovery(&again).await {
                    tracing::warn!(error = %e, "reaper pass after a recovery failed");
                }
            });
        }
    }
    Ok(Json(WitnessResponse {
        results,
        checked_in,
    }))
}

/// Checks one witnessed task and makes its create: its fields as a create's (an assignee who
/// is no longer a member is dropped, not refused: the task is brought back all the same), its
/// project the one its key names, its creator the one the device holds when that name was
/// ever on the team (`ever`), else the caller. Returns its key's depth too.
fn prepare(
    t: callsign_core::dto::WitnessedTask,
    caller: &Caller,
    team: &Team,
    ever: &HashSet<String>,
) -> ApiResult<(usize, CreateReq)> {
    validate::idempotency_key(&t.idempotency_key)
        .map_err(|e| ApiError::new(ErrorCode::IdempotencyKeyInvalid, e.0))?;
    let parse = |k: &str| {
        TaskKey::parse(k).map_err(|e| ApiError::new(ErrorCode::InvalidBody, e.to_string()))
    };
    let key = parse(&t.key)?;
    let previous = t
        .previous_keys
        .iter()
        .map(|k| parse(k).map(|k| k.to_string()))
        .collect::<ApiResult<Vec<_>>>()?;
    let mut fields = t.fields;
    fields.project = key.prefix.to_string();
    let mut r = prepare_create(t.idempotency_key, t.uuid, fields, &caller.name)?;
    if team.check(r.body.assignee.as_deref()).is_err() {
        r.body.assignee = None;
    }
    if let Some(by) = t
        .created_by
        .and_then(|b| MemberName::parse(&b).ok())
        .map(|b| b.to_string())
        .filter(|b| ever.contains(b))
    {
        r.body.created_by = Some(by);
    }
    r.witness = Some(Witness {
        key: key.to_string(),
        previous_keys: previous,
    });
    Ok((key.depth(), r))
}
