//! `GET /v1/members`, `DELETE /v1/members/{name}`: the team. Every member sees who is in it;
//! only owners remove members (`403 forbidden`). A removed member's tokens answer `401` from
//! their next request on, here and on every other node; the tasks they made keep their name.
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use callsign_core::dto::{Member, MemberList};
use callsign_core::{ErrorCode, MemberName};

use super::auth::owners_only;
use crate::db::{now_ms, Caller, RemoveMember};
use crate::error::{ApiError, ApiResult};
use crate::AppState;

#[utoipa::path(get, path = "/v1/members", operation_id = "listMembers",
    description = "The team's current members by name, each with their role.",
    responses((status = 200, body = MemberList)))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<MemberList>> {
    let rows = state
        .alloc
        .list_members(caller.account)
        .await?
        .unwrap_or_default();
    let members = rows
        .into_iter()
        .filter(|m| m.removed_at.is_none())
        .map(|m| Member {
            name: m.name.to_string(),
            role: m.role,
        })
        .collect();
    Ok(Json(MemberList { members }))
}

#[utoipa::path(delete, path = "/v1/members/{name}", operation_id = "removeMember",
    description = "Removes a member: every token of theirs answers 401 from its next request on; \
        the tasks they made stay and still name them, and their name is not given to anyone \
        else. Owners only; the team's last owner cannot be removed.",
    params(("name" = String, Path, description = "the member's name, any case")),
    responses(
    (status = 204, description = "removed"),
    (status = 403, description = "forbidden: the token's member is not an owner", body = callsign_core::Problem),
    (status = 404, description = "member_not_found: no current member of this name", body = callsign_core::Problem),
    (status = 409, description = "last_owner: the team would have no owner", body = callsign_core::Problem)))]
pub async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
) -> ApiResult<StatusCode> {
    owners_only(&caller, "remove members")?;
    let Path(raw) = path.map_err(|e| ApiError::new(ErrorCode::InvalidBody, e.body_text()))?;
    let not_found = || {
        ApiError::new(
            ErrorCode::MemberNotFound,
            format!("the team has no member {:?}", raw.trim()),
        )
    };
    let name = MemberName::parse(raw.trim()).map_err(|_| not_found())?;
    match state
        .alloc
        .remove_member(caller.account, &name, now_ms())
        .await?
    {
        RemoveMember::Removed { tokens } => {
            state.revocations.bump();
            tracing::info!(account = caller.account, member = %name, tokens, "member removed");
            Ok(StatusCode::NO_CONTENT)
        }
        RemoveMember::NotFound => Err(not_found()),
        RemoveMember::LastOwner => Err(ApiError::new(
            ErrorCode::LastOwner,
            format!("{name} is the team's only owner: make another owner first"),
        )),
    }
}
