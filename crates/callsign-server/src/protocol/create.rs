//! Creates: `PUT /v1/tasks/{uuid}` and the `create` mutations of a batch.
use std::time::Instant;

use callsign_core::dto::{NewTask, Task};
use uuid::Uuid;

use super::{fingerprint, write_keys_later, Batch, Reply};
use crate::crash;
use crate::db::{now_ms, AccountId};
use crate::error::{ApiError, ApiResult};
use crate::metrics::Stage;
use crate::storage::{Commit, Mutation, Op};
use crate::AppState;

/// A validated create: `body.project` is a valid prefix, stored upper-case.
#[derive(Clone)]
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
            Mutation {
                idem: r.idem,
                uuid: r.uuid,
                fp,
                request,
            }
        })
        .collect();

    // Phase 1: one transaction for all.
    let started = Instant::now();
    let (mut batch, go) = Batch::phase1(state, account, Op::Create, prepared, now_ms()).await;
    let started = state.metrics.create_stage(Stage::Phase1, started);
    if go.is_empty() {
        return batch.finish();
    }
    crash::point(crash::PHASE1_AFTER_SLOT);

    // Phase 2a: the tasks into TaskChampion, one commit for all.
    let tasks = go
        .iter()
        .map(|(it, _)| {
            (
                it.m.uuid,
                bodies.remove(&it.m.idem).expect("one body per key"),
            )
        })
        .collect();
    let snapshots = match state.tasks.create(account, tasks).await {
        Ok(s) => s,
        Err(e) => return batch.fail_all(&go, e.into()),
    };
    let started = state.metrics.create_stage(Stage::TaskStore, started);
    crash::point(crash::PHASE2_AFTER_TASK_WRITE);

    // Phase 2b: numbers and slot commits, one transaction for all.
    let now = now_ms();
    let work = go
        .iter()
        .zip(snapshots)
        .map(|((it, at), snapshot)| Commit {
            idem: it.m.idem.clone(),
            at: *at,
            snapshot,
        })
        .collect();
    let committed = state.alloc.commit(account, Op::Create, work, now).await;
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
