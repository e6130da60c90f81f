//! Updates: `PATCH /v1/tasks/{ref}` and the `update` mutations of a batch.
//!
//! An update changes no number. It needs the task's create committed (the task has a key);
//! before that it is `409 task_not_committed`, which clients retry after the create.
use callsign_core::dto::TaskPatch;
use callsign_core::ErrorCode;
use rusqlite::Connection;
use uuid::Uuid;

use super::{
    commit_update, existing_slot, fingerprint, in_one_transaction, Batch, Item, Phase1, Reply,
    Reserved,
};
use crate::crash;
use crate::db::{self, now_ms, slots, AccountId};
use crate::error::{ApiError, ApiResult};
use crate::AppState;

/// A validated update of a resolved task.
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
            (r.idem, r.uuid, request, fp)
        })
        .collect();
    let (mut batch, items) = Batch::claim(state, account, "update", prepared);

    let now = now_ms();
    let phase1 = in_one_transaction(state, &items, move |c, it| phase1(c, account, it, now)).await;
    let go = batch.proceeding(items, phase1);
    if go.is_empty() {
        return batch.finish();
    }
    crash::point(crash::PHASE1_AFTER_SLOT);

    let work = go
        .iter()
        .map(|(it, _)| {
            (
                it.uuid,
                patches.remove(&it.idem).expect("one patch per key"),
            )
        })
        .collect();
    let snapshots = match state.store.update(account, work).await {
        Ok(s) => s,
        Err(e) => return batch.fail_all(&go, e.into()),
    };
    crash::point(crash::PHASE2_AFTER_TASK_WRITE);

    let now = now_ms();
    let mut commits = Vec::new();
    for ((it, at), snap) in go.iter().zip(snapshots) {
        match snap {
            Some(s) => commits.push((it.pos, it.idem.clone(), *at, s)),
            None => batch.set(
                it.pos,
                Err(ApiError::unavailable("task missing from the store")),
            ),
        }
    }
    let positions: Vec<usize> = commits.iter().map(|(p, ..)| *p).collect();
    let committed = state
        .db
        .write(move |c| {
            db::each_item(c, &commits, |c, (_, idem, at, snap)| {
                commit_update(c, account, idem, *at, snap, now)
            })
        })
        .await;
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

fn phase1(c: &Connection, account: AccountId, it: &Item, now: i64) -> db::Result<Phase1> {
    if let Some(decided) = existing_slot(c, account, it, "update", now)? {
        return Ok(decided);
    }
    if slots::current_key(c, account, it.uuid)?.is_none() {
        let code = if slots::task_row(c, account, it.uuid)?.is_some() {
            ErrorCode::TaskNotCommitted
        } else {
            ErrorCode::TaskNotFound
        };
        let detail = match code {
            ErrorCode::TaskNotCommitted => format!(
                "task {} has no key yet; send the update after its create is answered",
                it.uuid
            ),
            _ => format!("no task {}", it.uuid),
        };
        let mut e = ApiError::new(code, detail);
        if code == ErrorCode::TaskNotCommitted {
            e.retry_after = Some(1);
        }
        return Ok(Phase1::Done(Err(e)));
    }
    let slot = slots::insert_pending_slot(
        c,
        account,
        &it.idem,
        &it.fp,
        "update",
        it.uuid,
        &it.request,
        now,
    )?;
    Ok(Phase1::Proceed(Reserved {
        slot,
        project: None,
    }))
}
