//! `GET /v1/projects`, `POST /v1/projects`, `PATCH /v1/projects/{prefix}`.
//!
//! A rename is a move of the prefix (docs/STRUCTURE.md): the project keeps its tasks and their
//! numbers, SYN-42 becomes SYX-42, and every key it had keeps naming its task. A prefix any
//! project of the account has or ever had is taken, but a project may take back its own.
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use callsign_core::dto::{NewProject, Project, ProjectList, ProjectPatch};
use callsign_core::{ErrorCode, Prefix};

use super::auth::Account;
use super::extract::ApiJson;
use crate::db::now_ms;
use crate::error::{ApiError, ApiResult};
use crate::storage::Renamed;
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

/// A prefix a project may take: valid (`422 invalid_prefix`) and not the local inbox's.
fn new_prefix(raw: &str) -> ApiResult<Prefix> {
    let prefix = Prefix::parse(raw.trim())
        .map_err(|e| ApiError::new(ErrorCode::InvalidPrefix, e.to_string()))?;
    if prefix.is_local() {
        return Err(ApiError::new(ErrorCode::InvalidPrefix, RESERVED));
    }
    Ok(prefix)
}

/// A project name: 1-200 characters once trimmed (`422 invalid_body`).
fn project_name(raw: &str) -> ApiResult<String> {
    let name = raw.trim().to_owned();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(ApiError::new(
            ErrorCode::InvalidBody,
            "a project name is 1-200 characters",
        ));
    }
    Ok(name)
}

#[utoipa::path(post, path = "/v1/projects", operation_id = "createProject", request_body = NewProject, responses(
    (status = 201, body = Project),
    (status = 422, description = "invalid_prefix, invalid_body", body = callsign_core::Problem),
    (status = 409, description = "prefix_taken: a project of the account has or had it", body = callsign_core::Problem)))]
pub async fn create(
    State(state): State<AppState>,
    Account(account): Account,
    ApiJson(body): ApiJson<NewProject>,
) -> ApiResult<(StatusCode, Json<Project>)> {
    let prefix = new_prefix(&body.prefix)?;
    let name = project_name(&body.name)?;
    let made = state.alloc.create_project(account, &name, &prefix).await?;
    made.map(|p| (StatusCode::CREATED, Json(p))).ok_or_else(|| {
        ApiError::new(
            ErrorCode::PrefixTaken,
            format!(
                "{prefix} is taken: a project of this account has it, or had it before a rename \
                 (its old keys still name that project's tasks)"
            ),
        )
    })
}

#[utoipa::path(patch, path = "/v1/projects/{prefix}", operation_id = "updateProject",
    request_body = ProjectPatch,
    params(("prefix" = String, Path, description = "the project's prefix now, any case")),
    responses(
    (status = 200, body = Project, description = "renamed: every task's key has the new prefix (in the change feed), every old key still resolves"),
    (status = 404, description = "project_not_found", body = callsign_core::Problem),
    (status = 409, description = "prefix_taken: another project of the account has or had it", body = callsign_core::Problem),
    (status = 422, description = "invalid_prefix, invalid_body", body = callsign_core::Problem)))]
pub async fn update(
    State(state): State<AppState>,
    Account(account): Account,
    path: Result<Path<String>, PathRejection>,
    ApiJson(body): ApiJson<ProjectPatch>,
) -> ApiResult<Json<Project>> {
    let Path(raw) = path.map_err(|e| ApiError::new(ErrorCode::InvalidBody, e.body_text()))?;
    let no_project = || {
        ApiError::new(
            ErrorCode::ProjectNotFound,
            format!("this account has no project {}", raw.trim()),
        )
    };
    let from = Prefix::parse(raw.trim()).map_err(|_| no_project())?;
    let to = body.prefix.as_deref().map(new_prefix).transpose()?;
    let name = body.name.as_deref().map(project_name).transpose()?;
    if to.is_none() && name.is_none() {
        return Err(ApiError::new(
            ErrorCode::InvalidBody,
            "nothing to change: give a new prefix, a new name, or both",
        ));
    }
    let done = state
        .alloc
        .update_project(account, &from, to.as_ref(), name.as_deref(), now_ms())
        .await?;
    match done {
        Renamed::Done { project, keys } => {
            if !keys.is_empty() {
                // Onto the tasks off the request path (a project may have many); the reaper
                // writes any that a crash leaves out.
                let state = state.clone();
                tokio::spawn(async move {
                    if let Err(e) = crate::protocol::rewrite_keys(&state, account, keys).await {
                        tracing::warn!(error = %e, "writing renamed keys failed; the reaper will");
                    }
                });
            }
            Ok(Json(project))
        }
        Renamed::NotFound(Some(now)) => Err(ApiError::new(
            ErrorCode::ProjectNotFound,
            format!("{from} was renamed: the project is {now} now"),
        )),
        Renamed::NotFound(None) => Err(no_project()),
        Renamed::Taken(owner) => {
            let to = to.map(|p| p.to_string()).unwrap_or_default();
            let detail = if owner == to {
                format!("this account already has a project {to}")
            } else {
                format!(
                    "{to} was the prefix of project {owner} before a rename: its old keys still \
                     name that project's tasks, so no other project can take it"
                )
            };
            Err(ApiError::new(ErrorCode::PrefixTaken, detail))
        }
    }
}
