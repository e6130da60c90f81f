//! `GET /v1/projects`, `POST /v1/projects`.
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use callsign_core::dto::{NewProject, Project, ProjectList};
use callsign_core::{ErrorCode, Prefix};

use super::auth::Account;
use super::extract::ApiJson;
use crate::error::{ApiError, ApiResult};
use crate::AppState;

#[utoipa::path(get, path = "/v1/projects", operation_id = "listProjects", responses((status = 200, body = ProjectList)))]
pub async fn list(
    State(state): State<AppState>,
    Account(account): Account,
) -> ApiResult<Json<ProjectList>> {
    let projects = state.alloc.list_projects(account).await?;
    Ok(Json(ProjectList { projects }))
}

/// Why `INBOX` is refused: clients keep tasks captured before they had a server there.
pub const RESERVED: &str =
    "INBOX is reserved for the tasks a device keeps before it has a server: choose another prefix";

#[utoipa::path(post, path = "/v1/projects", operation_id = "createProject", request_body = NewProject, responses(
    (status = 201, body = Project),
    (status = 422, description = "invalid_prefix, invalid_body", body = callsign_core::Problem),
    (status = 409, description = "prefix_taken", body = callsign_core::Problem)))]
pub async fn create(
    State(state): State<AppState>,
    Account(account): Account,
    ApiJson(body): ApiJson<NewProject>,
) -> ApiResult<(StatusCode, Json<Project>)> {
    let prefix = Prefix::parse(body.prefix.trim())
        .map_err(|e| ApiError::new(ErrorCode::InvalidPrefix, e.to_string()))?;
    if prefix.is_local() {
        return Err(ApiError::new(ErrorCode::InvalidPrefix, RESERVED));
    }
    let name = body.name.trim().to_owned();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(ApiError::new(
            ErrorCode::InvalidBody,
            "a project name is 1-200 characters",
        ));
    }
    let made = state.alloc.create_project(account, &name, &prefix).await?;
    made.map(|p| (StatusCode::CREATED, Json(p))).ok_or_else(|| {
        ApiError::new(
            ErrorCode::PrefixTaken,
            format!("this account already has a project {prefix}"),
        )
    })
}
