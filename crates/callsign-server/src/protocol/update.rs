//! Updates: `PATCH /v1/tasks/{ref}` and the `update` mutations of a batch.
//!
//! An update changes no number. It needs the task's create committed (the task has a key);
//! before that it is `409 task_not_committed`, which clients retry after the create.
//!
//! A completion (`status: completed`) of a task with open subtasks (pending, or a create still
//! on its way) is refused after phase 1 with `409 task_blocked` naming them.
//!
//! **Moves.** An update with `project` moves the task. After phase 1, a subtask alone
//! (`422 invalid_parent`: it moves with its parent) and a project the account does not have
//! (`404 project_not_found`; an earlier prefix names its project still) are refused. The task
//! store writes the new `project`; phase 2's commit then, in the transaction that commits the
//! slot, gives the task the next number of the new project and each subtask (parents first,
//! siblings in their old order) the next number under its parent's new key
//! (`callsign_storage_sqlite::alloc::protocol`'s `move_tree`,
//! `callsign_storage_postgres::alloc::moves`). The old key rows stay with `current = 0`: they
//! still resolve (`GET /v1/tasks/OLD-7` answers the task with its current key) and are reported
//! as `previous_keys`; numbers are never reused. Each moved subtask gets a feed entry. The new
//! keys, and the projects they name, are then written onto the task and its subtasks alone
//! among the account's key writes (`protocol::rewrite_keys`); a crash leaves them to the
//! reaper. A move replayed under its idempotency key answers the stored key; a pending move
//! slot is settled by the reaper like any update (the store's `project` shows it was applied).
use std::collections::HashMap;

use callsign_core::dto::TaskStatus;
use callsign_core::ErrorCode;
use uuid::Uuid;

use super::{fingerprint, load_tasks, Batch, Reply, UpdateReq};
use crate::crash;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use callsign_storage::{now_ms, AccountId};
use callsign_storage::{Commit, Mutation, Op};

/// Runs the protocol for each update, in order; answers in the same order.
pub async fn update_many(
    state: &AppState,
    account: AccountId,
    reqs: Vec<UpdateReq>,
) -> Vec<ApiResult<Reply>> {
    let mut patches = std::collections::HashMap::new();
    let prepared = reqs
        .into_iter()
        .map(|r| {
            let fp = fingerprint("update", r.uuid, &r.patch);
            let request = serde_json::to_string(&r.patch).unwrap_or_default();
            patches.insert(r.idem.clone(), r.patch);
            Ok(Mutation {
                idem: r.idem,
                uuid: r.uuid,
                parent: None,
                fp,
                request,
            })
        })
        .collect();
    let (mut batch, go) = Batch::phase1(state, account, Op::Update, prepared, now_ms()).await;
    if go.is_empty() {
        return batch.finish();
    }
    crash::point(crash::PHASE1_AFTER_SLOT);

    // A task with open subtasks is not completed: its slot fails (a retry is decided anew).
    let completing: Vec<(String, Uuid)> = go
        .iter()
        .filter(|(it, _)| patches[&it.m.idem].status == Some(TaskStatus::Completed))
        .map(|(it, _)| (it.m.idem.clone(), it.m.uuid))
        .collect();
    let moving: Vec<(String, Uuid, String)> = go
        .iter()
        .filter_map(|(it, _)| {
            let to = patches[&it.m.idem].project.clone()?;
            Some((it.m.idem.clone(), it.m.uuid, to))
        })
        .collect();
    let moved: Vec<Uuid> = moving.iter().map(|(_, u, _)| *u).collect();
    let refused = async {
        let mut refused = blocked(state, account, completing).await?;
        refused.extend(unmovable(state, account, moving).await?);
        Ok(refused)
    };
    let refused = match refused.await {
        Ok(r) => r,
        Err(e) => return batch.fail_all(&go, e),
    };
    let go = batch.refuse(state, account, go, refused).await;
    if go.is_empty() {
        return batch.finish();
    }

    let work = go
        .iter()
        .map(|(it, _)| {
            (
                it.m.uuid,
                patches.remove(&it.m.idem).expect("one patch per key"),
            )
        })
        .collect();
    let snapshots = match state.tasks.update(account, work).await {
        Ok(s) => s,
        Err(e) => return batch.fail_all(&go, e.into()),
    };
    crash::point(crash::PHASE2_AFTER_TASK_WRITE);

    let now = now_ms();
    let mut commits = Vec::new();
    let mut positions = Vec::new();
    for ((it, at), snap) in go.iter().zip(snapshots) {
        match snap {
            Some(snapshot) => {
                positions.push(it.pos);
                commits.push(Commit {
                    idem: it.m.idem.clone(),
                    at: *at,
                    snapshot,
                });
            }
            None => batch.set(
                it.pos,
                Err(ApiError::unavailable("task missing from the store")),
            ),
        }
    }
    let committed = state
        .alloc
        .commit(account, Op::Update, commits, now, super::render())
        .await;
    // Also after an error: a commit whose outcome is unknown (the connection lost after
    // COMMIT) may have landed, and a wake-up with nothing new costs a held request one read.
    state.feed_changed(account).await;
    match committed {
        Ok(v) => {
            crash::point(crash::PHASE2_AFTER_COMMIT);
            for (pos, r) in positions.into_iter().zip(v) {
                batch.set(pos, r.map_err(ApiError::from));
            }
            if !moved.is_empty() {
                // The new keys, and the projects they name, onto the moved tasks and their
                // subtasks now (the reaper writes any a crash leaves out).
                if let Err(e) = write_moved_keys(state, account, moved).await {
                    tracing::warn!(account, "writing moved keys: {e}; the reaper will");
                }
            }
        }
        Err(e) => {
            let e = ApiError::from(e);
            for pos in positions {
                batch.set(pos, Err(e.clone()));
            }
        }
    }
    batch.finish()
}

/// Refusals among moves (idempotency key, task, target prefix): `404 project_not_found` for a
/// project the account does not have, `422 invalid_parent` for a subtask (it moves with its
/// parent).
async fn unmovable(
    state: &AppState,
    account: AccountId,
    moving: Vec<(String, Uuid, String)>,
) -> ApiResult<HashMap<String, ApiError>> {
    if moving.is_empty() {
        return Ok(HashMap::new());
    }
    let projects = state.alloc.list_projects(account).await?;
    let meta = state
        .alloc
        .task_meta(account, moving.iter().map(|(_, u, _)| *u).collect())
        .await?;
    let mut refused = HashMap::new();
    for (idem, uuid, to) in moving {
        // An earlier prefix names its project still (a move there after a rename).
        let e = if !projects.iter().any(|p| p.is_named(&to)) {
            ApiError::new(
                ErrorCode::ProjectNotFound,
                format!("no project with prefix {to} to move the task to"),
            )
        } else if let Some(m) = meta.get(&uuid).filter(|m| m.parent.is_some()) {
            let name = m.key.as_ref().map_or_else(|| uuid.to_string(), |k| k.key());
            ApiError::new(
                ErrorCode::InvalidParent,
                format!("{name} is a subtask: it moves with its parent, not alone"),
            )
        } else {
            continue;
        };
        refused.insert(idem, e);
    }
    Ok(refused)
}

/// Writes the current keys of `tasks` and all their subtasks onto them in the task store.
async fn write_moved_keys(state: &AppState, account: AccountId, tasks: Vec<Uuid>) -> ApiResult<()> {
    let mut all = tasks.clone();
    let mut next = tasks;
    while !next.is_empty() {
        let children = state.alloc.children(account, next).await?;
        next = children.into_values().flatten().collect();
        all.extend(&next);
    }
    let meta = state.alloc.task_meta(account, all).await?;
    let keys = meta
        .into_iter()
        .filter_map(|(u, m)| Some((u, m.key?.key())))
        .collect();
    super::rewrite_keys(state, account, keys).await
}

/// `409 task_blocked` for each completion (idempotency key, task) whose task has open
/// subtasks: a pending one, or one whose create is still on its way (no content yet), named
/// by key, or by UUID before it has one.
async fn blocked(
    state: &AppState,
    account: AccountId,
    completing: Vec<(String, Uuid)>,
) -> ApiResult<HashMap<String, ApiError>> {
    if completing.is_empty() {
        return Ok(HashMap::new());
    }
    let parents = completing.iter().map(|(_, u)| *u).collect();
    let children = state.alloc.children(account, parents).await?;
    let all: Vec<Uuid> = children.values().flatten().copied().collect();
    if all.is_empty() {
        return Ok(HashMap::new());
    }
    let tasks = load_tasks(state, account, all.clone()).await?;
    let open: HashMap<Uuid, String> = all
        .iter()
        .zip(tasks)
        .filter(|(_, t)| t.as_ref().is_none_or(|t| t.status == TaskStatus::Pending))
        .map(|(u, t)| (*u, t.and_then(|t| t.key).unwrap_or_else(|| u.to_string())))
        .collect();
    let mut refused = HashMap::new();
    for (idem, parent) in completing {
        let names: Vec<&str> = children
            .get(&parent)
            .into_iter()
            .flatten()
            .filter_map(|k| open.get(k).map(String::as_str))
            .collect();
        if !names.is_empty() {
            let e = ApiError::new(
                ErrorCode::TaskBlocked,
                format!(
                    "this task has open subtasks ({}); complete or delete them first",
                    names.join(", ")
                ),
            );
            refused.insert(idem, e);
        }
    }
    Ok(refused)
}
