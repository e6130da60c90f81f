//! `PUT /v1/tasks/{uuid}` (create with the client's UUID), `GET /v1/tasks/{ref}`,
//! `PATCH /v1/tasks/{ref}`. The protocol itself lives in [`crate::protocol`].
//!
//! A create's `created_by` is stamped here from the caller's member (`prepare_create`):
//! `NewTask.created_by` is `serde(skip)`, never read from a body and not in the fingerprint, so
//! a replay answers the original creator; it is kept as the TaskChampion property `created_by`.
//! `assignee` is a current member or null (`422 unknown_member` otherwise), kept as the
//! property `assignee`; a later write wins.
use axum::extract::State;
use axum::response::Response;
use axum::Json;
use callsign_core::dto::{NewTask, Task, TaskPatch};
use std::collections::HashSet;

use callsign_core::{validate, ErrorCode, MemberName, Prefix};
use uuid::Uuid;

use super::extract::{reply_response, ApiJson, IdemKey, RawRef};
use super::resolve::Resolved;
use crate::error::{ApiError, ApiResult};
use crate::protocol::{self, CreateReq, Reply, UpdateReq};
use crate::state::AppState;
use callsign_storage::{AccountId, Caller};

/// Checks a create's fields and normalises its prefix and assignee; stamps its creator, the
/// token's member (never the body's: `NewTask` takes no `created_by`).
pub(super) fn prepare_create(
    idem: String,
    uuid: Uuid,
    mut body: NewTask,
    creator: &MemberName,
) -> ApiResult<CreateReq> {
    validate::new_task(&body).map_err(|e| ApiError::new(ErrorCode::InvalidBody, e.0))?;
    let prefix = Prefix::parse(body.project.trim())
        .map_err(|e| ApiError::new(ErrorCode::InvalidBody, format!("project: {e}")))?;
    body.project = prefix.to_string();
    body.assignee = body.assignee.as_deref().map(normal_name);
    body.created_by = Some(creator.to_string());
    Ok(CreateReq {
        idem,
        uuid,
        body,
        witness: None,
    })
}

/// `403 forbidden` for an import (a create with `origin`) by anyone but an owner: it claims
/// keys in the account (a kept number, a tracker's key that keeps naming the task).
pub(super) fn check_import(caller: &Caller, body: &NewTask) -> ApiResult<()> {
    if body.origin.is_some() || body.keep_number {
        super::auth::owners_only(caller, "import tasks")?;
    }
    Ok(())
}

/// Checks an update's fields and normalises the prefix of a move, as [`prepare_create`] does.
pub(super) fn prepare_update(
    idem: String,
    uuid: Uuid,
    mut patch: TaskPatch,
) -> ApiResult<UpdateReq> {
    validate::patch(&patch).map_err(|e| ApiError::new(ErrorCode::InvalidBody, e.0))?;
    if let Some(p) = &patch.project {
        let prefix = Prefix::parse(p.trim())
            .map_err(|e| ApiError::new(ErrorCode::InvalidBody, format!("project: {e}")))?;
        patch.project = Some(prefix.to_string());
    }
    if let Some(Some(a)) = &patch.assignee {
        patch.assignee = Some(Some(normal_name(a)));
    }
    Ok(UpdateReq { idem, uuid, patch })
}

/// A member name as stored (the field rules checked it already).
fn normal_name(name: &str) -> String {
    MemberName::parse(name).map_or_else(|_| name.to_owned(), |n| n.to_string())
}

/// The team's current members, read once for a request that assigns anyone.
pub(super) struct Team(Option<HashSet<String>>);

impl Team {
    pub(super) async fn read(
        state: &AppState,
        account: AccountId,
        needed: bool,
    ) -> ApiResult<Team> {
        if !needed {
            return Ok(Team(None));
        }
        let rows = state.alloc.list_members(account).await?.unwrap_or_default();
        let names = rows
            .into_iter()
            .filter(|m| m.removed_at.is_none())
            .map(|m| m.name.to_string())
            .collect();
        Ok(Team(Some(names)))
    }

    /// `422 unknown_member` for an assignee who is not a current member.
    pub(super) fn check(&self, assignee: Option<&str>) -> ApiResult<()> {
        match (assignee, &self.0) {
            (Some(a), Some(members)) if !members.contains(a) => Err(ApiError::new(
                ErrorCode::UnknownMember,
                format!("assignee: {a} is not a member of the team (GET /v1/members lists them)"),
            )),
            _ => Ok(()),
        }
    }
}

/// A single request's answer; counts replays.
pub(super) fn single(state: &AppState, answer: ApiResult<Reply>) -> ApiResult<Reply> {
    let reply = answer?;
    if reply.replayed {
        state.metrics.replayed();
    }
    Ok(reply)
}

#[utoipa::path(put, path = "/v1/tasks/{ref}", operation_id = "createTask", request_body = NewTask,
    params(("ref" = Uuid, Path, description = "the task's UUID, made by the client"),
        ("Idempotency-Key" = String, Header, description = "a fresh random string per change; resend it unchanged on retry")),
    responses(
        (status = 201, body = Task, description = "created and numbered"),
        (status = 200, body = Task, description = "the UUID already had this key, or a replay (Idempotent-Replayed: true)"),
        (status = 400, body = callsign_core::Problem, description = "idempotency_key_missing, idempotency_key_invalid, invalid_ref"),
        (status = 408, body = callsign_core::Problem, description = "request_timeout"),
        (status = 413, body = callsign_core::Problem, description = "payload_too_large"),
        (status = 403, body = callsign_core::Problem, description = "forbidden: an import (`origin`) by a member who is no owner"),
        (status = 404, body = callsign_core::Problem, description = "project_not_found"),
        (status = 409, body = callsign_core::Problem, description = "request_in_progress, task_exists, key_taken, already_imported"),
        (status = 422, body = callsign_core::Problem, description = "idempotency_key_reused, invalid_body"),
        (status = 503, body = callsign_core::Problem, description = "nothing numbered; retry with the same key")))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    RawRef(raw): RawRef,
    IdemKey(idem): IdemKey,
    ApiJson(body): ApiJson<NewTask>,
) -> ApiResult<Response> {
    let account = caller.account;
    let uuid = Uuid::parse_str(raw.trim()).map_err(|_| {
        ApiError::new(
            ErrorCode::InvalidRef,
            format!(
                "{raw:?} is not a UUID: a create names the task by the UUID the client generated"
            ),
        )
    })?;
    check_import(&caller, &body)?;
    let req = prepare_create(idem, uuid, body, &caller.name)?;
    let team = Team::read(&state, account, req.body.assignee.is_some()).await?;
    team.check(req.body.assignee.as_deref())?;
    let answer = protocol::create_one(&state, account, req).await;
    single(&state, answer).map(reply_response)
}

#[utoipa::path(get, path = "/v1/tasks/{ref}", operation_id = "getTask", params(("ref" = String, Path, description = "UUID or key: SYN-42, syn-42, SYN 42, syn42")),
    responses((status = 200, body = Task), (status = 400, body = callsign_core::Problem, description = "invalid_ref"),
        (status = 404, body = callsign_core::Problem, description = "unknown_prefix, task_not_found")))]
pub async fn get(State(state): State<AppState>, task: Resolved) -> ApiResult<Json<Task>> {
    protocol::load_tasks(&state, task.account, vec![task.uuid])
        .await?
        .pop()
        .flatten()
        .map(Json)
        .ok_or_else(|| ApiError::new(ErrorCode::TaskNotFound, format!("no task {}", task.uuid)))
}

#[utoipa::path(patch, path = "/v1/tasks/{ref}", operation_id = "updateTask", request_body = TaskPatch,
    params(("ref" = String, Path, description = "UUID or key: SYN-42, syn-42, SYN 42, syn42"),
        ("Idempotency-Key" = String, Header, description = "a fresh random string per change; resend it unchanged on retry")),
    responses((status = 200, body = Task),
        (status = 400, body = callsign_core::Problem, description = "idempotency_key_missing, idempotency_key_invalid, invalid_ref"),
        (status = 404, body = callsign_core::Problem, description = "unknown_prefix, task_not_found"),
        (status = 408, body = callsign_core::Problem, description = "request_timeout"),
        (status = 409, body = callsign_core::Problem, description = "request_in_progress, task_not_committed"),
        (status = 413, body = callsign_core::Problem, description = "payload_too_large"),
        (status = 422, body = callsign_core::Problem, description = "idempotency_key_reused, invalid_body")))]
pub async fn update(
    State(state): State<AppState>,
    task: Resolved,
    IdemKey(idem): IdemKey,
    ApiJson(patch): ApiJson<TaskPatch>,
) -> ApiResult<Response> {
    let req = prepare_update(idem, task.uuid, patch)?;
    let assignee = req.patch.assignee.clone().flatten();
    let team = Team::read(&state, task.account, assignee.is_some()).await?;
    team.check(assignee.as_deref())?;
    let answer = protocol::update_one(&state, task.account, req).await;
    single(&state, answer).map(reply_response)
}
