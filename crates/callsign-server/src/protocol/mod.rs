//! The key protocol (DESIGN.md section 3), for single requests and batches alike. A
//! `PUT /v1/tasks/{uuid}` and a `POST /v1/sync` batch both end in [`create_many`] (a single
//! request is a batch of one); updates in [`update_many`].
//!
//! 1. **Phase 1** (`AllocStore::phase1`, one transaction for the batch) claims each idempotency
//!    key (on SQLite in this process, `callsign_storage_sqlite::inflight`, the data-dir lock
//!    keeping other processes off; on PostgreSQL a lease on the slot row,
//!    `callsign_storage_postgres::alloc`): a second concurrent claim is
//!    `409 request_in_progress`, so phase 2 never runs twice at once for a slot. Then it looks
//!    up the slot: a committed slot with the same fingerprint replays ([`Phase1::Replay`]); a
//!    pending one resumes; a different fingerprint is `422` ([`Phase1::Refused`]); otherwise a
//!    pending slot with no number is inserted (and, for a create, the task UUID is reserved
//!    with the request's fingerprint, so a different body under another key is
//!    `409 task_exists`). What it made or found goes on as [`Reserved`] (the slot's row id, a
//!    create's project), so phase 2 does not search the random-keyed indexes for them again;
//!    phase 2 trusts the row id only while it is still the same account's pending slot for the
//!    same key.
//! 2. **Phase 2** writes the tasks to the task store, one commit for the batch (a no-op for an
//!    existing UUID), then in one transaction (`AllocStore::commit`), per task: keeps the
//!    UUID's key if it has one, else takes the next number from its project's counter, which
//!    moves only in such a commit (G2; on PostgreSQL once per project and batch, by the count
//!    it numbers), and inserts the key; commits the slot with the answer [`render`] makes;
//!    appends to the change feed. On SQLite one task's database error there is its own (the
//!    group commit runs it isolated); on PostgreSQL it fails the batch's transaction. A failure
//!    before that commit leaves the slot pending with no number: `503` with `Retry-After`.
//!    After the commit the account's held change requests wake (`AppState::feed_changed`),
//!    after an error too, since a commit whose outcome is unknown may have landed.
//! 3. Finally the key is written onto the TaskChampion task, off the request path
//!    (`write_keys`); `keys.in_store` records that it is there, and the reaper writes any that
//!    a crash lost. [`keys`] orders one account's key writes.
//!
//! A batch runs the same steps with one transaction (or one TaskChampion commit) per step for
//! all its mutations: creates first, then updates, since an update can only follow a committed
//! create. A key repeated within one batch answers as a replay of its first copy (`422` if the
//! request differs) and reaches the store once. A mutation refused after phase 1 (a subtask's
//! parent, a completion with open subtasks, a move; see `create.rs` and `update.rs`) has its
//! slot failed, so nothing is numbered and the same request later is decided anew.
//!
//! On PostgreSQL, concurrent single requests of one account join one such batch ([`coalesce`]):
//! [`create_one`] and [`update_one`].
pub mod coalesce;
mod commit;
mod create;
pub mod keys;
mod req;
mod update;

pub use coalesce::{Coalescer, Coalescers, COALESCE_CAP};
pub use commit::load_tasks;
pub use create::create_many;
pub use req::{CreateReq, UpdateReq};
pub use update::update_many;

use std::collections::HashMap;

use uuid::Uuid;

use crate::error::{not_updatable, recovering_without, refused_reuse, ApiError, ApiResult};
use crate::state::AppState;
pub use callsign_storage::{fingerprint, Reply};
use callsign_storage::{now_ms, AccountId};
use callsign_storage::{Claim, Mutation, Op, Phase1, Refusal, Render, Reserved};

/// One create (`PUT /v1/tasks/{uuid}`): with a coalescer, in a batch with the account's other
/// creates waiting on this node; else a batch of one.
pub async fn create_one(state: &AppState, account: AccountId, req: CreateReq) -> ApiResult<Reply> {
    let coalescer = state.coalesce.as_ref().map(|c| c.creates.clone());
    one(
        state,
        account,
        req,
        coalescer,
        Op::Create,
        |s, a, reqs| async move { create_many(&s, a, reqs).await },
    )
    .await
}

/// One update (`PATCH /v1/tasks/{ref}`), coalesced as [`create_one`] is.
pub async fn update_one(state: &AppState, account: AccountId, req: UpdateReq) -> ApiResult<Reply> {
    let coalescer = state.coalesce.as_ref().map(|c| c.updates.clone());
    one(
        state,
        account,
        req,
        coalescer,
        Op::Update,
        |s, a, reqs| async move { update_many(&s, a, reqs).await },
    )
    .await
}

/// Runs `req` through `many` (`create_many` or `update_many`): alone without a coalescer,
/// else in the account's next batch, where a request that a failed batch answered `503` is
/// run again by itself ([`coalesce::isolating`]).
async fn one<R, F, Fut>(
    state: &AppState,
    account: AccountId,
    req: R,
    coalescer: Option<std::sync::Arc<Coalescer<R>>>,
    op: Op,
    many: F,
) -> ApiResult<Reply>
where
    R: Clone + Send + 'static,
    F: Fn(AppState, AccountId, Vec<R>) -> Fut + Copy + Send + Sync + 'static,
    Fut: std::future::Future<Output = Vec<ApiResult<Reply>>> + Send + 'static,
{
    let Some(c) = coalescer else {
        return only(many(state.clone(), account, vec![req]).await);
    };
    let state = state.clone();
    c.submit(account, req, move |reqs| {
        let state = state.clone();
        async move {
            state.metrics.coalesced(op, reqs.len());
            coalesce::isolating(reqs, R::clone, move |reqs| {
                many(state.clone(), account, reqs)
            })
            .await
        }
    })
    .await
}

/// The answer of a batch of one.
fn only(mut answers: Vec<ApiResult<Reply>>) -> ApiResult<Reply> {
    answers
        .pop()
        .unwrap_or_else(|| Err(ApiError::unavailable("no answer")))
}

/// The answer the commits store for a task: its JSON as the API shows it. One closure for the
/// process, handed out by reference count (a commit clones an `Arc`, it allocates nothing).
pub fn render() -> Render {
    static RENDER: std::sync::LazyLock<Render> = std::sync::LazyLock::new(|| {
        std::sync::Arc::new(|s| serde_json::to_string(&s.task()).expect("a task serialises"))
    });
    RENDER.clone()
}

/// One mutation of a batch on its way through the phases.
struct Item {
    /// Position in the caller's list.
    pos: usize,
    m: Mutation,
}

/// The answers of a batch being built, and the claims on the idempotency keys it holds.
struct Batch {
    out: Vec<Option<ApiResult<Reply>>>,
    /// (position, position of the earlier identical mutation in the same batch).
    copies: Vec<(usize, usize)>,
    claims: Vec<Claim>,
}

impl Batch {
    /// Runs phase 1 for a batch: a key repeated in the batch with the same request answers
    /// as a replay of the first, with another request as `422`; the distinct keys go to the
    /// allocation store's phase 1 (which claims them) in one transaction. Returns the items
    /// that go on to phase 2, each with what phase 1 reserved for it.
    async fn phase1(
        state: &AppState,
        account: AccountId,
        op: Op,
        reqs: Vec<ApiResult<Mutation>>,
        now: i64,
    ) -> (Batch, Vec<(Item, Reserved)>) {
        let mut batch = Batch {
            out: vec![None; reqs.len()],
            copies: Vec::new(),
            claims: Vec::new(),
        };
        let mut first: HashMap<String, (usize, Vec<u8>)> = HashMap::new();
        let mut items = Vec::new();
        for (pos, m) in reqs.into_iter().enumerate() {
            let m = match m {
                Ok(m) => m,
                Err(e) => {
                    batch.out[pos] = Some(Err(e));
                    continue;
                }
            };
            if let Some((j, fp0)) = first.get(&m.idem) {
                if *fp0 == m.fp {
                    batch.copies.push((pos, *j));
                } else {
                    batch.out[pos] = Some(Err(refused_reuse(op)));
                }
                continue;
            }
            first.insert(m.idem.clone(), (pos, m.fp.clone()));
            items.push(Item { pos, m });
        }
        if items.is_empty() {
            return (batch, Vec::new());
        }
        let list: Vec<Mutation> = items.iter().map(|it| it.m.clone()).collect();
        let decided = state.alloc.phase1(account, op, &list, now).await;
        let mut go = Vec::new();
        let mut unknown = Vec::new();
        for (it, r) in items.into_iter().zip(decided) {
            match r {
                Ok(Phase1::Proceed(at, claim)) => {
                    batch.claims.push(claim);
                    go.push((it, at));
                }
                Ok(Phase1::Replay(answer)) => batch.set(it.pos, Ok(answer)),
                Ok(Phase1::Refused(Refusal::NotUpdatable {
                    uuid,
                    reserved: false,
                })) => unknown.push((it.pos, uuid)),
                Ok(Phase1::Refused(why)) => batch.set(it.pos, Err(why.into())),
                Err(e) => batch.set(it.pos, Err(e.into())),
            }
        }
        // An update of a task the server does not know waits while the account recovers: a
        // device may yet bring the task back.
        if !unknown.is_empty() {
            let recovering = recovering(state, account).await;
            for (pos, uuid) in unknown {
                let e = match &recovering {
                    Ok(true) => recovering_without(&format!("task {uuid}")),
                    Ok(false) => not_updatable(uuid, false),
                    Err(e) => e.clone(),
                };
                batch.set(pos, Err(e));
            }
        }
        (batch, go)
    }

    /// Answers the items in `refused` (by idempotency key) with their refusal after phase 1
    /// and fails their slots, so the same request later is decided anew; returns the rest.
    async fn refuse(
        &mut self,
        state: &AppState,
        account: AccountId,
        go: Vec<(Item, Reserved)>,
        mut refused: HashMap<String, ApiError>,
    ) -> Vec<(Item, Reserved)> {
        if refused.is_empty() {
            return go;
        }
        let mut kept = Vec::with_capacity(go.len());
        for (it, at) in go {
            let Some(e) = refused.remove(&it.m.idem) else {
                kept.push((it, at));
                continue;
            };
            let failed = state
                .alloc
                .fail_slot(account, &it.m.idem, it.m.uuid, now_ms())
                .await;
            self.set(it.pos, failed.map_err(ApiError::from).and(Err(e)));
        }
        kept
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
        // The claims are released only now, after the answers are decided.
        drop(std::mem::take(&mut self.claims));
        self.out
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(ApiError::unavailable("not processed"))))
            .collect()
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
    let _order = state.key_writes.shared(account).await;
    write_and_mark(state, account, keys).await
}

async fn write_and_mark(
    state: &AppState,
    account: AccountId,
    keys: Vec<(Uuid, String)>,
) -> ApiResult<()> {
    state.tasks.set_keys(account, keys.clone()).await?;
    state.alloc.mark_in_store(account, keys).await?;
    Ok(())
}

/// [`write_keys`] for keys a move or a rename just changed, alone among the account's key
/// writes ([`keys::KeyWrites`]), in chunks of [`KEY_WRITE_CHUNK`] (a renamed project may have
/// many tasks).
pub(crate) async fn rewrite_keys(
    state: &AppState,
    account: AccountId,
    keys: Vec<(Uuid, String)>,
) -> ApiResult<()> {
    let _order = state.key_writes.exclusive(account).await;
    for chunk in keys.chunks(KEY_WRITE_CHUNK) {
        write_and_mark(state, account, chunk.to_vec()).await?;
    }
    Ok(())
}

/// Keys written onto tasks in one task-store commit by [`rewrite_keys`].
pub const KEY_WRITE_CHUNK: usize = 1000;

/// Whether `account` recovers from a rollback: a task or parent it lacks may yet be brought
/// back by a device (docs/RECOVERY.md). Read only when one is missing.
pub(crate) async fn recovering(state: &AppState, account: AccountId) -> ApiResult<bool> {
    let rows = state.alloc.recovering().await?;
    Ok(rows.iter().any(|r| r.account == account))
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
