//! The key protocol (DESIGN.md section 3), for single requests and batches alike.
//!
//! 1. **Phase 1** claims the idempotency key in this process ([`InFlight`]), then in one
//!    transaction looks up the slot: a committed slot with the same fingerprint replays; a
//!    pending one resumes; a different fingerprint is `422`; otherwise a pending slot with no
//!    number is inserted (and, for a create, the task UUID is reserved with the request's
//!    fingerprint, so a different body under another key is `409 task_exists`).
//! 2. **Phase 2** writes the task to TaskChampion (a no-op for an existing UUID), then in one
//!    transaction bumps the counter, binds the number to the slot and the UUID (a UUID that has
//!    a key keeps it), commits the slot with its response and appends to the change feed.
//!    A failure before that commit leaves the slot pending with no number: `503`.
//! 3. Finally the key is written onto the TaskChampion task, off the request path; the reaper
//!    repairs it if the process dies first.
//!
//! A batch runs the same steps with one transaction (or one TaskChampion commit) per step for
//! all its mutations: creates first, then updates, since an update can only follow a
//! committed create.
mod commit;
mod create;
mod update;

pub use commit::{commit_create, commit_update, load_tasks};
pub use create::{create_many, CreateReq};
pub use update::{update_many, UpdateReq};

use std::collections::HashMap;

use callsign_core::ErrorCode;
use rusqlite::Connection;
use serde::Serialize;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::db::{self, slots, AccountId, SlotState};
use crate::error::{ApiError, ApiResult};
use crate::inflight::Claim;
use crate::AppState;

/// The answer to one mutation, as stored in its slot and replayed verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub body: String,
    pub replayed: bool,
    /// The change-feed entry this answer's commit appended (`None` for a replay): a sync
    /// response leaves that entry out of its changes, since the answer carries the same task.
    pub change: Option<i64>,
}

/// SHA-256 over the operation, the UUID and the canonical JSON of the parsed body, so the same
/// request with other whitespace or field order has the same fingerprint.
pub fn fingerprint(op: &str, uuid: Uuid, body: &impl Serialize) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(op.as_bytes());
    h.update([0]);
    h.update(uuid.as_bytes());
    h.update([0]);
    h.update(serde_json::to_vec(body).unwrap_or_default());
    h.finalize().to_vec()
}

/// How one mutation fares in phase 1.
enum Phase1 {
    /// Answered already (a replay or an error).
    Done(ApiResult<Reply>),
    /// Go on to phase 2.
    Proceed(Reserved),
}

/// What phase 1 made or found for a mutation that goes on, so that phase 2 does not look it up
/// again: its slot's row id and, for a create, the project of the task's reservation. Phase 2
/// still reads the slot (by this row id) and settles nothing unless it is still the same
/// pending slot; while it is pending, its reservation cannot be released (the reaper releases
/// only reservations no pending slot needs), so the project read in phase 1 still holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserved {
    pub slot: i64,
    pub project: Option<i64>,
}

/// One mutation of a batch on its way through the phases.
struct Item {
    /// Position in the caller's list.
    pos: usize,
    idem: String,
    uuid: Uuid,
    fp: Vec<u8>,
    request: String,
}

/// The answers of a batch being built, and the idempotency keys it holds.
struct Batch {
    out: Vec<Option<ApiResult<Reply>>>,
    /// (position, position of the earlier identical mutation in the same batch).
    copies: Vec<(usize, usize)>,
    _claims: Vec<Claim>,
}

impl Batch {
    /// Claims each distinct idempotency key; a key repeated in the batch with the same
    /// request answers as a replay of the first, with another request as `422`.
    fn claim(
        state: &AppState,
        account: AccountId,
        op: &str,
        reqs: Vec<(String, Uuid, String, Vec<u8>)>,
    ) -> (Batch, Vec<Item>) {
        let mut batch = Batch {
            out: vec![None; reqs.len()],
            copies: Vec::new(),
            _claims: Vec::new(),
        };
        let mut first: HashMap<String, (usize, Vec<u8>)> = HashMap::new();
        let mut items = Vec::new();
        for (pos, (idem, uuid, request, fp)) in reqs.into_iter().enumerate() {
            if let Some((j, fp0)) = first.get(&idem) {
                if *fp0 == fp {
                    batch.copies.push((pos, *j));
                } else {
                    batch.out[pos] = Some(Err(reused(op)));
                }
                continue;
            }
            first.insert(idem.clone(), (pos, fp.clone()));
            match state.inflight.claim(account, &idem) {
                Some(c) => {
                    batch._claims.push(c);
                    items.push(Item {
                        pos,
                        idem,
                        uuid,
                        fp,
                        request,
                    });
                }
                None => batch.out[pos] = Some(Err(ApiError::in_progress())),
            }
        }
        (batch, items)
    }

    /// Records the answers phase 1 decided; returns the items that go on to phase 2, each with
    /// what phase 1 reserved for it.
    fn proceeding(
        &mut self,
        items: Vec<Item>,
        phase1: Vec<ApiResult<Phase1>>,
    ) -> Vec<(Item, Reserved)> {
        let mut go = Vec::new();
        for (it, r) in items.into_iter().zip(phase1) {
            match r {
                Ok(Phase1::Proceed(r)) => go.push((it, r)),
                Ok(Phase1::Done(answer)) => self.set(it.pos, answer),
                Err(e) => self.set(it.pos, Err(e)),
            }
        }
        go
    }

    /// A step of phase 2 failed for all of `items`: each answers `e` (their slots stay pending).
    fn fail_all(mut self, items: &[(Item, Reserved)], e: ApiError) -> Vec<ApiResult<Reply>> {
        for (it, _) in items {
            self.set(it.pos, Err(e.clone()));
        }
        self.finish()
    }

    fn set(&mut self, pos: usize, r: ApiResult<Reply>) {
        self.out[pos] = Some(r);
    }

    fn finish(mut self) -> Vec<ApiResult<Reply>> {
        for (pos, j) in std::mem::take(&mut self.copies) {
            let copy = self.out[j].clone().map(|r| {
                r.map(|mut reply| {
                    reply.replayed = true;
                    reply.change = None;
                    reply
                })
            });
            self.out[pos] = copy;
        }
        self.out
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(ApiError::unavailable("not processed"))))
            .collect()
    }
}

fn reused(op: &str) -> ApiError {
    ApiError::new(
        ErrorCode::IdempotencyKeyReused,
        format!("this idempotency key was used before with a different {op} request"),
    )
}

/// The part of phase 1 that creates and updates share: `Some` when an existing slot decides
/// the outcome (replay, resume, or `422`); `None` when the caller must insert a new slot (a
/// failed slot is deleted first, and a purged one leaves only its tombstone: the key is
/// treated as new).
fn existing_slot(
    c: &Connection,
    account: AccountId,
    item: &Item,
    op: &str,
    now: i64,
) -> db::Result<Option<Phase1>> {
    let Some(slot) = slots::get_slot(c, account, &item.idem)? else {
        // A key whose slot was purged past the window: a new request now, and late evidence.
        if let Some(created_at) = slots::take_purged(c, account, &item.idem)? {
            db::window::note_retry(c, created_at, now, true)?;
        }
        return Ok(None);
    };
    if slot.fingerprint != item.fp {
        return Ok(Some(Phase1::Done(Err(reused(op)))));
    }
    db::window::note_retry(c, slot.created_at, now, slot.state == SlotState::Failed)?;
    match slot.state {
        SlotState::Committed => {
            slots::touch_slot(c, account, &item.idem, now)?;
            Ok(Some(Phase1::Done(Ok(Reply {
                status: slot.response_status.unwrap_or(200),
                body: slot.response_body.unwrap_or_default(),
                replayed: true,
                change: None,
            }))))
        }
        SlotState::Pending => {
            slots::touch_slot(c, account, &item.idem, now)?;
            Ok(Some(Phase1::Proceed(Reserved {
                slot: slot.id,
                project: None,
            })))
        }
        SlotState::Failed => {
            slots::delete_slot(c, account, &item.idem)?;
            Ok(None)
        }
    }
}

/// Runs `one` for every item in one transaction, each item's failure its own
/// ([`db::each_item`]); a job-level failure answers every item with `503`.
async fn in_one_transaction<F>(state: &AppState, items: &[Item], one: F) -> Vec<ApiResult<Phase1>>
where
    F: Fn(&Connection, &Item) -> db::Result<Phase1> + Send + 'static,
{
    let owned: Vec<Item> = items.iter().map(Item::clone_light).collect();
    let n = owned.len();
    let res = state
        .db
        .write(move |c| db::each_item(c, &owned, &one))
        .await;
    match res {
        Ok(v) => v.into_iter().map(|r| r.map_err(ApiError::from)).collect(),
        Err(e) => {
            let e = ApiError::from(e);
            (0..n).map(|_| Err(e.clone())).collect()
        }
    }
}

impl Item {
    fn clone_light(&self) -> Item {
        Item {
            pos: self.pos,
            idem: self.idem.clone(),
            uuid: self.uuid,
            fp: self.fp.clone(),
            request: self.request.clone(),
        }
    }
}

/// Writes keys onto TaskChampion tasks off the request path (see [`write_keys`]).
fn write_keys_later(state: &AppState, account: AccountId, keys: Vec<(Uuid, String)>) {
    if keys.is_empty() {
        return;
    }
    let state = state.clone();
    tokio::spawn(async move {
        if let Err(e) = write_keys(&state, account, keys).await {
            tracing::warn!(error = %e, "writing keys onto tasks failed; the reaper will retry");
        }
    });
}

/// Writes keys onto TaskChampion tasks, then records that they are there (`in_store`). If the
/// process dies in between, the reaper writes them again (the write is idempotent).
pub(crate) async fn write_keys(
    state: &AppState,
    account: AccountId,
    keys: Vec<(Uuid, String)>,
) -> ApiResult<()> {
    let uuids: Vec<Uuid> = keys.iter().map(|(u, _)| *u).collect();
    state.store.set_keys(account, keys).await?;
    state
        .db
        .write(move |c| {
            for u in &uuids {
                slots::mark_in_store(c, account, *u)?;
            }
            Ok(())
        })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_depends_on_op_uuid_and_body() {
        let u = Uuid::from_u128(1);
        let body = serde_json::json!({"a": 1});
        let a = fingerprint("create", u, &body);
        assert_eq!(a, fingerprint("create", u, &serde_json::json!({"a": 1})));
        assert_ne!(a, fingerprint("update", u, &body));
        assert_ne!(a, fingerprint("create", Uuid::from_u128(2), &body));
        assert_ne!(a, fingerprint("create", u, &serde_json::json!({"a": 2})));
    }
}
