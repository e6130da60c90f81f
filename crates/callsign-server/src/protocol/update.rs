//! Updates: `PATCH /v1/tasks/{ref}` and the `update` mutations of a batch.
//!
//! An update changes no number. It needs the task's create committed (the task has a key);
//! before that it is `409 task_not_committed`, which clients retry after the create.
use std::collections::HashMap;

use callsign_core::dto::{TaskPatch, TaskStatus};
use callsign_core::ErrorCode;
use uuid::Uuid;

use super::{fingerprint, Batch, Reply};
use crate::crash;
use crate::db::{now_ms, AccountId};
use crate::error::{ApiError, ApiResult};
use crate::storage::{Commit, Mutation, Op};
use crate::AppState;

/// A validated update of a resolved task.
#[derive(Clone)]
pub struct UpdateReq {
    pub idem: String,
    pub uuid: Uuid,
    pub patch: TaskPatch,
}

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
            Mutation {
                idem: r.idem,
                uuid: r.uuid,
                parent: None,
                fp,
                request,
            }
        })
        .collect();
    let (mut batch, mut go) = Batch::phase1(state, account, Op::Update, prepared, now_ms()).await;
    if go.is_empty() {
        return batch.finish();
    }
    crash::point(crash::PHASE1_AFTER_SLOT);

    // A task with open subtasks is not completed: its slot fails (a retry is decided anew).
    let completing: Vec<Uuid> = go
        .iter()
        .filter(|(it, _)| patches[&it.m.idem].status == Some(TaskStatus::Completed))
        .map(|(it, _)| it.m.uuid)
        .collect();
    if !completing.is_empty() {
        let open = match open_children(state, account, completing).await {
            Ok(open) => open,
            Err(e) => return batch.fail_all(&go, e),
        };
        let mut kept = Vec::with_capacity(go.len());
        for (it, at) in go {
            let Some(kids) = open.get(&it.m.uuid) else {
                kept.push((it, at));
                continue;
            };
            let answer = match state
                .alloc
                .fail_slot(account, &it.m.idem, it.m.uuid, now_ms())
                .await
            {
                Ok(_) => Err(blocked(kids)),
                Err(e) => Err(e.into()),
            };
            batch.set(it.pos, answer);
        }
        go = kept;
        if go.is_empty() {
            return batch.finish();
        }
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
    let committed = state.alloc.commit(account, Op::Update, commits, now).await;
    match committed {
        Ok(v) => {
            crash::point(crash::PHASE2_AFTER_COMMIT);
            for (pos, r) in positions.into_iter().zip(v) {
                batch.set(pos, r.map_err(ApiError::from));
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

/// The pending subtasks (their keys, or UUIDs while they have none) of each of `parents` that
/// has any.
async fn open_children(
    state: &AppState,
    account: AccountId,
    parents: Vec<Uuid>,
) -> ApiResult<HashMap<Uuid, Vec<String>>> {
    let children = state.alloc.children(account, parents).await?;
    let all: Vec<Uuid> = children.values().flatten().copied().collect();
    if all.is_empty() {
        return Ok(HashMap::new());
    }
    let snaps = state.tasks.get(account, all.clone()).await?;
    let meta = state.alloc.task_meta(account, all.clone()).await?;
    let open: HashMap<Uuid, String> = all
        .iter()
        .zip(snaps)
        .filter(|(_, s)| s.as_ref().is_none_or(|s| s.status == TaskStatus::Pending))
        .map(|(u, _)| {
            let name = meta
                .get(u)
                .and_then(|m| m.key.as_ref())
                .map_or_else(|| u.to_string(), |k| k.key());
            (*u, name)
        })
        .collect();
    Ok(children
        .into_iter()
        .filter_map(|(parent, kids)| {
            let names: Vec<String> = kids.iter().filter_map(|k| open.get(k).cloned()).collect();
            (!names.is_empty()).then_some((parent, names))
        })
        .collect())
}

/// `409 task_blocked`, naming the open subtasks.
fn blocked(open: &[String]) -> ApiError {
    ApiError::new(
        ErrorCode::TaskBlocked,
        format!(
            "this task has open subtasks ({}); complete or delete them first",
            open.join(", ")
        ),
    )
}
