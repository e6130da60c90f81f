//! `GET /v1/projects`, `POST /v1/projects`, `PATCH /v1/projects/{prefix}`. Every member
//! lists the projects; only owners create and rename them (`403 forbidden`).
//!
//! A rename is a move of the prefix (docs/STRUCTURE.md): the project keeps its tasks and their
//! numbers, SYN-42 becomes SYX-42, and every key it had keeps naming its task. A prefix any
//! project of the account has or ever had is taken, but a project may take back its own.
//! `PATCH` is one transaction of the allocation store (`AllocStore::update_project`: a new
//! epoch of the project, every current key of it marked not in the task store, a feed entry per
//! task); the handler then wakes the account's held change requests and writes the new keys
//! onto the tasks off the request path (`protocol::rewrite_keys`, in chunks, alone among the
//! account's key writes: `protocol::keys`); a crash leaves them to the reaper. A create or move
//! that names an earlier prefix goes to its project.
//!
//! A new prefix (a create, a rename) that sounds like one any other project of the account has
//! or had (`callsign_core::alike`: said as a word or spelled out) is refused with `409
//! prefix_sounds_alike` naming that project, unless the request says `allow_similar: true`.
//! An old prefix counts (it is still said: its keys still name tasks); a project's own prefixes
//! never count against it. The check reads the account's projects (`AllocStore::list_projects`)
//! here in the API layer, so both backends share it, and then writes, outside the store's
//! transaction: two requests at once (SIN and SYN) may both pass it. That is accepted: the rule
//! guards against a person's slip, not an invariant of keys (`prefix_taken` is the one the
//! database keeps). The admin's `callsign-server project rename` does not apply it.
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use callsign_core::alike::sounds_alike;
use callsign_core::dto::{NewProject, Project, ProjectList, ProjectPatch};
use callsign_core::{ErrorCode, Prefix};

use super::auth::{owners_only, Account};
use super::extract::ApiJson;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use callsign_storage::now_ms;
use callsign_storage::Caller;
use callsign_storage::Renamed;

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

/// Refuses `prefix` when [`alike_refusal`] finds a project it sounds like.
async fn refuse_alike(
    state: &AppState,
    account: callsign_storage::AccountId,
    prefix: &Prefix,
    from: Option<&Prefix>,
) -> ApiResult<()> {
    let projects = state.alloc.list_projects(account).await?;
    match alike_refusal(&projects, prefix, from) {
        Some(detail) => Err(ApiError::new(ErrorCode::PrefixSoundsAlike, detail)),
        None => Ok(()),
    }
}

/// Why `prefix`, for a new project (`from` is `None`) or for the project whose prefix is `from`
/// now (a rename), sounds like a prefix another of `projects` has or had; `None` if it does
/// not. Left to the store: a prefix some project has or had exactly (`prefix_taken`, or a
/// project taking back its own) and a rename of no current project (`project_not_found`).
fn alike_refusal(projects: &[Project], prefix: &Prefix, from: Option<&Prefix>) -> Option<String> {
    if projects.iter().any(|p| p.is_named(prefix.as_str())) {
        return None;
    }
    let renamed = match from {
        None => None,
        Some(from) => Some(projects.iter().find(|p| p.prefix == from.as_str())?.id),
    };
    projects
        .iter()
        .filter(|p| Some(p.id) != renamed)
        .find_map(|project| {
            let now = std::iter::once((&project.prefix, true));
            let before = project.previous_prefixes.iter().map(|p| (p, false));
            now.chain(before).find_map(|(other, current)| {
                let other = Prefix::parse(other).ok()?;
                let alike = sounds_alike(prefix, &other)?;
                let whose = if current {
                    format!("the prefix of project {:?}", project.name)
                } else {
                    format!(
                        "which project {:?} (now {}) had before a rename, and whose old keys \
                         still name its tasks",
                        project.name, project.prefix
                    )
                };
                Some(format!(
                    "{prefix} sounds like {other}, {whose}: {alike}, so {prefix}-4 and {other}-4 \
                     would be misheard (with allow_similar it is taken anyway)"
                ))
            })
        })
}

/// The rule, in each operation's description (the OpenAPI document is the API's reference).
macro_rules! alike_rule {
    () => {
        "A new prefix that sounds like one another project of the account has or had is refused \
         with `409 prefix_sounds_alike`, whose `detail` names that project, unless the body says \
         `\"allow_similar\": true`. Two prefixes sound alike when said as words they have the \
         same phonetic key (`Y` as `I`; `B P`, `D T`, `C G K Q`, `F V`, `S Z` one sound each; \
         `PH` = `F`; `X` = `KS`; silent `H` after a consonant; doubled sounds once: `SIN` and \
         `SYN`, `DEF` and `DEV`), or when spelled letter by letter they differ at one position \
         only, in two letters that rhyme (`B C D E G P T V Z`, `A J K`, `I Y`, `M N`, `F S X`, \
         `Q U`: `MOD` and `MOV`). `OPS` beside `DEV` or `WEB` beside `API` is taken. The same \
         prefix is `prefix_taken`, not this. The check precedes the write without a lock: two \
         requests at once may both pass it."
    };
}

#[utoipa::path(post, path = "/v1/projects", operation_id = "createProject", request_body = NewProject,
    description = alike_rule!(),
    responses(
    (status = 201, body = Project),
    (status = 403, description = "forbidden: the token's member is not an owner", body = callsign_core::Problem),
    (status = 422, description = "invalid_prefix, invalid_body", body = callsign_core::Problem),
    (status = 409, description = "prefix_taken: a project of the account has or had it; prefix_sounds_alike: it sounds like a prefix another project has or had (the detail names it), and `allow_similar` is not true", body = callsign_core::Problem)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<NewProject>,
) -> ApiResult<(StatusCode, Json<Project>)> {
    owners_only(&caller, "create projects")?;
    let account = caller.account;
    let prefix = new_prefix(&body.prefix)?;
    let name = project_name(&body.name)?;
    if !body.allow_similar {
        refuse_alike(&state, account, &prefix, None).await?;
    }
    let made = state.alloc.create_project(account, &name, &prefix).await?;
    made.map(|p| (StatusCode::CREATED, Json(p))).ok_or_else(|| {
        ApiError::new(
            ErrorCode::PrefixTaken,
            format!(
                "{prefix} is taken: a project of this account has it, or had it before a rename \
                 (its old keys still name that project's tasks), or tasks imported from another \
                 tracker keep keys with it"
            ),
        )
    })
}

#[utoipa::path(patch, path = "/v1/projects/{prefix}", operation_id = "updateProject",
    request_body = ProjectPatch,
    description = alike_rule!(),
    params(("prefix" = String, Path, description = "the project's prefix now, any case")),
    responses(
    (status = 200, body = Project, description = "renamed: every task's key has the new prefix (in the change feed), every old key still resolves"),
    (status = 403, description = "forbidden: the token's member is not an owner", body = callsign_core::Problem),
    (status = 404, description = "project_not_found", body = callsign_core::Problem),
    (status = 409, description = "prefix_taken: another project of the account has or had it; prefix_sounds_alike: it sounds like a prefix another project has or had (the detail names it), and `allow_similar` is not true", body = callsign_core::Problem),
    (status = 422, description = "invalid_prefix, invalid_body", body = callsign_core::Problem)))]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    path: Result<Path<String>, PathRejection>,
    ApiJson(body): ApiJson<ProjectPatch>,
) -> ApiResult<Json<Project>> {
    owners_only(&caller, "rename projects")?;
    let account = caller.account;
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
    if let Some(to) = to.as_ref().filter(|_| !body.allow_similar) {
        refuse_alike(&state, account, to, Some(&from)).await?;
    }
    let done = state
        .alloc
        .update_project(account, &from, to.as_ref(), name.as_deref(), now_ms())
        .await?;
    match done {
        Renamed::Done { project, keys } => {
            state.feed_changed(account).await;
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
        Renamed::Imported => Err(ApiError::new(
            ErrorCode::PrefixTaken,
            format!(
                "{} names keys that tasks imported from another tracker keep, so no project \
                 can take it",
                to.map(|p| p.to_string()).unwrap_or_default()
            ),
        )),
    }
}
