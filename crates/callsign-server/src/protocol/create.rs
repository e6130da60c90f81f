//! Creates: `PUT /v1/tasks/{uuid}` and the `create` mutations of a batch.
use std::time::Instant;

use callsign_core::dto::{NewTask, Task};
use callsign_core::{ErrorCode, Prefix};
use rusqlite::Connection;
use uuid::Uuid;

use super::{
    commit_create, existing_slot, fingerprint, in_one_transaction, write_keys_later, Batch, Item,
    Phase1, Reply, Reserved,
};
use crate::crash;
use crate::db::{self, accounts, now_ms, slots, AccountId};
use crate::error::{ApiError, ApiResult};
use crate::metrics::Stage;
use crate::AppState;

/// A validated create: `body.project` is a valid prefix, stored upper-case.
pub struct CreateReq {
    pub idem: String,
    pub uuid: Uuid,
    pub body: NewTask,
}

/// Runs the protocol for each create; answers in the same order.
pub async fn create_many(
    state: &AppState,
    account: AccountId,
    reqs: Vec<CreateReq>,
) -> Vec<ApiResult<Reply>> {
    let mut bodies = std::collections::HashMap::new();
    let prepared = reqs
        .into_iter()
        .map(|r| {
            let fp = fingerprint("create", r.uuid, &r.body);
            let request = serde_json::to_string(&r.body).unwrap_or_default();
            bodies.insert(r.idem.clone(), r.body);
            (r.idem, r.uuid, request, fp)
        })
        .collect();
    let (mut batch, items) = Batch::claim(state, account, "create", prepared);

    // Phase 1: one transaction for all.
    let now = now_ms();
    let started = Instant::now();
    let phase1 = in_one_transaction(state, &items, move |c, it| phase1(c, account, it, now)).await;
    let started = state.metrics.create_stage(Stage::Phase1, started);
    let go = batch.proceeding(items, phase1);
    if go.is_empty() {
        return batch.finish();
    }
    crash::point(crash::PHASE1_AFTER_SLOT);

    // Phase 2a: the tasks into TaskChampion, one commit for all.
    let tasks = go
        .iter()
        .map(|(it, _)| (it.uuid, bodies.remove(&it.idem).expect("one body per key")))
        .collect();
    let snapshots = match state.store.create(account, tasks).await {
        Ok(s) => s,
        Err(e) => return batch.fail_all(&go, e.into()),
    };
    let started = state.metrics.create_stage(Stage::TaskStore, started);
    crash::point(crash::PHASE2_AFTER_TASK_WRITE);

    // Phase 2b: numbers and slot commits, one transaction for all.
    let now = now_ms();
    let work: Vec<(String, Reserved, crate::store::Snapshot)> = go
        .iter()
        .zip(snapshots)
        .map(|((it, at), snap)| (it.idem.clone(), *at, snap))
        .collect();
    let committed = state
        .db
        .write(move |c| {
            db::each_item(c, &work, |c, (idem, at, snap)| {
                commit_create(c, account, idem, *at, snap, now)
            })
        })
        .await;
    let committed = match committed {
        Ok(v) => v,
        Err(e) => return batch.fail_all(&go, e.into()),
    };
    state.metrics.create_stage(Stage::Phase2, started);
    crash::point(crash::PHASE2_AFTER_COMMIT);

    let mut keys = Vec::new();
    for ((it, _), r) in go.iter().zip(committed) {
        let r = r.map_err(ApiError::from);
        if let Ok(reply) = &r {
            state.metrics.created(reply.status == 201);
            if let Ok(task) = serde_json::from_str::<Task>(&reply.body) {
                if let Some(k) = task.key {
                    keys.push((task.uuid, k));
                }
            }
        }
        batch.set(it.pos, r);
    }
    write_keys_later(state, account, keys);
    batch.finish()
}

fn phase1(c: &Connection, account: AccountId, it: &Item, now: i64) -> db::Result<Phase1> {
    if let Some(decided) = existing_slot(c, account, it, "create", now)? {
        return Ok(decided);
    }
    let body: NewTask =
        serde_json::from_str(&it.request).map_err(|e| db::DbError::CommitFailed(e.to_string()))?;
    let Some(project) = Prefix::parse(&body.project)
        .ok()
        .map(|p| accounts::project_by_prefix(c, account, &p))
        .transpose()?
        .flatten()
    else {
        return Ok(Phase1::Done(Err(ApiError::new(
            ErrorCode::ProjectNotFound,
            format!("this account has no project with prefix {}", body.project),
        ))));
    };
    let project = match slots::task_row(c, account, it.uuid)? {
        Some((_, fp)) if fp != it.fp => {
            return Ok(Phase1::Done(Err(ApiError::new(
                ErrorCode::TaskExists,
                format!("task {} was created by a different request", it.uuid),
            ))))
        }
        Some((reserved_in, _)) => reserved_in,
        None => {
            slots::insert_task_row(c, account, it.uuid, project, &it.fp, now)?;
            project
        }
    };
    let slot = slots::insert_pending_slot(
        c,
        account,
        &it.idem,
        &it.fp,
        "create",
        it.uuid,
        &it.request,
        now,
    )?;
    Ok(Phase1::Proceed(Reserved {
        slot,
        project: Some(project),
    }))
}
