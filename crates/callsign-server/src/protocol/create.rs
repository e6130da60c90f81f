//! Creates: `PUT /v1/tasks/{uuid}` and the `create` mutations of a batch.
use std::time::Instant;

use callsign_core::dto::{NewTask, Task};
use callsign_core::{ErrorCode, TaskRef, MAX_DEPTH};
use uuid::Uuid;

use super::{fingerprint, write_keys_later, Batch, Reply};
use crate::api::resolve::resolve;
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

/// Runs the protocol for each create; answers in the same order. A subtask's parent is
/// resolved and checked first ([`parents`]); a create it refuses stores nothing.
pub async fn create_many(
    state: &AppState,
    account: AccountId,
    reqs: Vec<CreateReq>,
) -> Vec<ApiResult<Reply>> {
    let parents = parents(state, account, &reqs).await;
    let mut refused = Vec::new();
    let mut kept = Vec::with_capacity(reqs.len());
    for (pos, (r, parent)) in reqs.into_iter().zip(parents).enumerate() {
        match parent {
            Ok(parent) => kept.push((pos, r, parent)),
            Err(e) => refused.push((pos, e)),
        }
    }
    if refused.is_empty() {
        let reqs = kept.into_iter().map(|(_, r, p)| (r, p)).collect();
        return create_checked(state, account, reqs).await;
    }
    let positions: Vec<usize> = kept.iter().map(|(pos, ..)| *pos).collect();
    let reqs = kept.into_iter().map(|(_, r, p)| (r, p)).collect();
    let answers = create_checked(state, account, reqs).await;
    let mut out: Vec<Option<ApiResult<Reply>>> = vec![None; positions.len() + refused.len()];
    for (pos, a) in positions.into_iter().zip(answers) {
        out[pos] = Some(a);
    }
    for (pos, e) in refused {
        out[pos] = Some(Err(e));
    }
    out.into_iter()
        .map(|a| a.expect("every create answered"))
        .collect()
}

/// Each create's parent, resolved: `None` for a task, the parent's UUID for a subtask whose
/// parent is this account's, in the same project, has its key, and is not as deep as keys go.
/// These facts never change once they hold (a key, once given, stays), so a retry of a create
/// that was accepted is accepted again and replays.
async fn parents(
    state: &AppState,
    account: AccountId,
    reqs: &[CreateReq],
) -> Vec<ApiResult<Option<Uuid>>> {
    let invalid = |m: String| ApiError::new(ErrorCode::InvalidParent, m);
    let mut out = Vec::with_capacity(reqs.len());
    for r in reqs {
        let Some(text) = &r.body.parent else {
            out.push(Ok(None));
            continue;
        };
        let parent = match TaskRef::parse(text) {
            Err(e) => Err(invalid(format!("parent: {e}"))),
            Ok(tr) => resolve(state, account, tr)
                .await
                .map_err(|e| invalid(format!("parent {text}: {}", e.detail))),
        };
        let checked = match parent {
            Err(e) => Err(e),
            Ok(p) if p == r.uuid => Err(invalid("a task cannot be its own parent".into())),
            Ok(p) => match state.alloc.task_meta(account, vec![p]).await {
                Err(e) => Err(e.into()),
                Ok(meta) => match meta.get(&p) {
                    None => Err(invalid(format!("parent {text}: no such task"))),
                    Some(m) => match &m.key {
                        None => {
                            let mut e = ApiError::new(
                                ErrorCode::TaskNotCommitted,
                                format!(
                                    "the parent {text} has no key yet; send the subtask after \
                                     the parent's create is answered"
                                ),
                            );
                            e.retry_after = Some(1);
                            Err(e)
                        }
                        Some(k) if !k.prefix.eq_ignore_ascii_case(&r.body.project) => {
                            Err(invalid(format!(
                                "the parent {} is in project {}; a subtask is in its parent's \
                                 project",
                                k.key(),
                                k.prefix
                            )))
                        }
                        Some(k) if k.depth() >= MAX_DEPTH => Err(invalid(format!(
                            "the parent {} is as deep as keys go ({MAX_DEPTH} numbers)",
                            k.key()
                        ))),
                        Some(_) => Ok(Some(p)),
                    },
                },
            },
        };
        out.push(checked);
    }
    out
}

/// [`create_many`] for creates whose parents are checked.
async fn create_checked(
    state: &AppState,
    account: AccountId,
    reqs: Vec<(CreateReq, Option<Uuid>)>,
) -> Vec<ApiResult<Reply>> {
    let mut bodies = std::collections::HashMap::new();
    let prepared = reqs
        .into_iter()
        .map(|(r, parent)| {
            let fp = fingerprint("create", r.uuid, &r.body);
            let request = serde_json::to_string(&r.body).unwrap_or_default();
            bodies.insert(r.idem.clone(), r.body);
            Mutation {
                idem: r.idem,
                uuid: r.uuid,
                parent,
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
