//! The team: `GET /v1/me`, `GET /v1/members`, `DELETE /v1/members/{name}`, `POST /v1/invites`,
//! `POST /v1/join`. Every member sees who is in it; only owners remove members and make
//! invites (`403 forbidden`). A removed member's tokens answer `401` from their next request
//! on, here and on every other node; the tasks they made keep their name. An invite code is
//! single use and expires; redeeming one needs no token and makes a member with a token.
//!
//! An account is a team (DESIGN.md section 9); every token belongs to a member (`members`: a
//! name unique in the account for good, role `owner` or `member`, `removed_at`), and
//! `callsign_storage::Caller` is what a request's token resolves to: account, member, name and
//! role. An invite (`invites`: the code's SHA-256, role, expiry, `used_at`/`used_by`) is
//! redeemed once by `POST /v1/join`, in one transaction that makes the member, marks the invite
//! and makes the first token; an unknown code counts as a failed authentication
//! ([`crate::throttle`]). Removing a member marks them removed and deletes their tokens in one
//! transaction, then bumps this process's revocations ([`crate::tokens`]); on PostgreSQL the
//! same transaction sends `NOTIFY callsign_members`, which every other node hears. `GET /v1/me`
//! tells a device whose token it holds.
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use callsign_core::dto::{Invite, JoinRequest, Joined, Member, MemberList, NewInvite};
use callsign_core::{ErrorCode, MemberName, Role};
use chrono::{DateTime, Utc};

use super::auth::{failed_from, not_blocked, owners_only, ClientIp};
use super::extract::ApiJson;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use callsign_storage::rows::hash_token;
use callsign_storage::{now_ms, Caller, Redeem, RemoveMember};

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

#[utoipa::path(get, path = "/v1/me", operation_id = "me",
    description = "The member the token belongs to: how a device learns whose it is.",
    responses((status = 200, body = Member)))]
pub async fn me(caller: Caller) -> Json<Member> {
    Json(Member {
        name: caller.name.to_string(),
        role: caller.role,
    })
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

/// Hours an invite lasts by default, and at most.
const INVITE_HOURS: u32 = 24;
const INVITE_MAX_HOURS: u32 = 168;

#[utoipa::path(post, path = "/v1/invites", operation_id = "createInvite", request_body = NewInvite,
    description = "An invite code for one new member (owners only): single use, valid for \
        `expires_in_hours` (1-168, default 24). The code is shown once; the server keeps its \
        hash. A new device redeems it with `POST /v1/join`.",
    responses(
    (status = 201, body = Invite),
    (status = 403, description = "forbidden: the token's member is not an owner", body = callsign_core::Problem),
    (status = 422, description = "invalid_body", body = callsign_core::Problem)))]
pub async fn invite(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<NewInvite>,
) -> ApiResult<(StatusCode, Json<Invite>)> {
    owners_only(&caller, "invite members")?;
    let hours = body.expires_in_hours.unwrap_or(INVITE_HOURS);
    if !(1..=INVITE_MAX_HOURS).contains(&hours) {
        return Err(ApiError::new(
            ErrorCode::InvalidBody,
            format!("expires_in_hours is 1-{INVITE_MAX_HOURS} (default {INVITE_HOURS})"),
        ));
    }
    let role = body.role.unwrap_or(Role::Member);
    let code = callsign_core::invite::format(rand::random());
    let canonical = callsign_core::invite::normalize(&code).expect("a code made here reads back");
    let now = now_ms();
    let expires_at = now + i64::from(hours) * 3_600_000;
    state
        .alloc
        .create_invite(callsign_storage::NewInvite {
            account: caller.account,
            code_hash: hash_token(&canonical),
            role,
            made_by: caller.member,
            now,
            expires_at,
        })
        .await?;
    let expires_at = DateTime::<Utc>::from_timestamp_millis(expires_at).unwrap_or_default();
    Ok((
        StatusCode::CREATED,
        Json(Invite {
            code,
            role,
            expires_at,
        }),
    ))
}

#[utoipa::path(post, path = "/v1/join", operation_id = "join", request_body = JoinRequest,
    description = "Redeems an invite code as a new member with the handle `name`, and answers \
        their first token (shown once). Needs no token. An unknown code counts as a failed \
        authentication from the client's address (past the limit: `429`).",
    responses(
    (status = 201, body = Joined),
    (status = 404, description = "invite_not_found", body = callsign_core::Problem),
    (status = 409, description = "member_taken: the team has or had a member of this name (the code stays good)", body = callsign_core::Problem),
    (status = 410, description = "invite_used, invite_expired", body = callsign_core::Problem),
    (status = 422, description = "invalid_body: not a code, or not a member name", body = callsign_core::Problem)))]
pub async fn join(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    ApiJson(body): ApiJson<JoinRequest>,
) -> ApiResult<(StatusCode, Json<Joined>)> {
    not_blocked(&state, ip)?;
    let invalid = |e: String| ApiError::new(ErrorCode::InvalidBody, e);
    let name = MemberName::parse(body.name.trim()).map_err(|e| invalid(e.to_string()))?;
    let code =
        callsign_core::invite::normalize(body.code.trim()).map_err(|e| invalid(e.to_string()))?;
    let device = body.device.as_deref().map(str::trim).unwrap_or("default");
    if device.is_empty() || device.chars().count() > 100 {
        return Err(invalid("a device name is 1-100 characters".into()));
    }
    let hash = hash_token(&code);
    match state.alloc.redeem_invite(&hash, &name, device, now_ms()).await? {
        Redeem::Joined(m) => {
            tracing::info!(account = m.account_id, member = %m.name, "member joined with an invite");
            Ok((
                StatusCode::CREATED,
                Json(Joined {
                    member: Member {
                        name: m.name.to_string(),
                        role: m.role,
                    },
                    token: m.token,
                }),
            ))
        }
        Redeem::NotFound => {
            failed_from(&state, ip);
            Err(ApiError::new(
                ErrorCode::InviteNotFound,
                "no invite has this code: check it, or ask an owner for a new one",
            ))
        }
        Redeem::Used => Err(ApiError::new(
            ErrorCode::InviteUsed,
            "this invite code was used already (each works once): ask an owner for a new one",
        )),
        Redeem::Expired => Err(ApiError::new(
            ErrorCode::InviteExpired,
            "this invite code has expired: ask an owner for a new one",
        )),
        Redeem::Taken => Err(ApiError::new(
            ErrorCode::MemberTaken,
            format!("the team has or had a member named {name}: choose another name (the code is still good)"),
        )),
    }
}
