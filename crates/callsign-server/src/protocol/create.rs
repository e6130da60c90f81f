//! Creates: `PUT /v1/tasks/{uuid}` and the `create` mutations of a batch.
//!
//! **Subtasks.** A create with `parent` (a UUID or a key) is a subtask. Before phase 1 the
//! parent is only named (`parent_ref`: a key is looked up, and a key names its task forever),
//! so phase 1 still decides a replay first; phase 1 keeps the parent on the UUID's reservation
//! (`tasks.parent_uuid`). Right after it, one read checks every parent of the batch
//! (`check_parents`): it is this account's task, it has its key (else `409 task_not_committed`,
//! which the client retries once the parent's create is answered, also when the parent is in
//! the same batch), and its key has fewer than `MAX_DEPTH` (8) numbers; anything else is
//! `422 invalid_parent`; while the account recovers from a rollback, a parent it lacks is
//! `503 recovering` instead, since a device may yet bring it back (docs/RECOVERY.md). A
//! refusal fails the slot (`Batch::refuse`), so nothing is numbered.
//!
//! Phase 2 numbers a subtask from the counter whose scope is its parent's key path
//! (`counters (project, '42')` for `SYN-42.1`, `'42.1'` for `SYN-42.1.1`), in the parent's
//! *current* project (a subtask follows a parent that moved meanwhile, whatever project its
//! create names), in the same transaction and by the same rules as a task's number, so numbers
//! are gap-free per parent. `keys.scope` holds the path, and the resolver looks keys up by
//! (prefix, scope, number).
use std::collections::{HashMap, HashSet};
use std::time::Instant;

use callsign_core::dto::Origin;
use callsign_core::dto::Task;
use callsign_core::{ErrorCode, TaskKey, TaskRef, MAX_DEPTH};
use uuid::Uuid;

use super::recovering;
use super::{fingerprint, render, write_keys_later, Batch, CreateReq, Item, Reply};
use crate::crash;
use crate::error::{not_committed, recovering_without};
use crate::error::{ApiError, ApiResult};
use crate::metrics::Stage;
use crate::state::AppState;
use callsign_storage::{now_ms, AccountId};
use callsign_storage::{Commit, CreateRequest, Mutation, Op, Reserved};

/// Runs the protocol for each create; answers in the same order. A subtask's parent is named
/// before phase 1 ([`parent_ref`]) and checked after it ([`check_parents`]), so a request
/// answered before replays whatever its parent has become since.
pub async fn create_many(
    state: &AppState,
    account: AccountId,
    reqs: Vec<CreateReq>,
) -> Vec<ApiResult<Reply>> {
    let mut bodies = HashMap::new();
    let mut witnessed = HashSet::new();
    let mut prepared = Vec::with_capacity(reqs.len());
    for r in reqs {
        let parent = match parent_ref(state, account, &r).await {
            Ok(p) => p,
            Err(e) => {
                prepared.push(Err(e));
                continue;
            }
        };
        // A plain create's stored request is its body, as it always was; a witness's also
        // carries the keys, and fingerprints as another operation.
        let op = if r.witness.is_some() {
            witnessed.insert(r.idem.clone());
            "witness"
        } else {
            "create"
        };
        let request = CreateRequest::new(r.body, r.witness);
        let fp = fingerprint(op, r.uuid, &request);
        let request_json = request.to_json();
        bodies.insert(r.idem.clone(), request.into_task());
        let request = request_json;
        prepared.push(Ok(Mutation {
            idem: r.idem,
            uuid: r.uuid,
            parent,
            fp,
            request,
        }));
    }

    // Phase 1: one transaction for all.
    let started = Instant::now();
    let (mut batch, go) = Batch::phase1(state, account, Op::Create, prepared, now_ms()).await;
    let started = state.metrics.create_stage(Stage::Phase1, started);
    let refused = match check_parents(state, account, &go).await {
        Ok(r) => r,
        Err(e) => return batch.fail_all(&go, e),
    };
    let go = batch.refuse(state, account, go, refused).await;
    let refused = match check_origins(state, account, &go, &bodies, &witnessed).await {
        Ok(r) => r,
        Err(e) => return batch.fail_all(&go, e),
    };
    let go = batch.refuse(state, account, go, refused).await;
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
    let committed = state
        .alloc
        .commit(account, Op::Create, work, now, render())
        .await;
    // Also after an error: a commit whose outcome is unknown (the connection lost after
    // COMMIT) may have landed, and a wake-up with nothing new costs a held request one read.
    state.feed_changed(account).await;
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

fn invalid_parent(detail: String) -> ApiError {
    ApiError::new(ErrorCode::InvalidParent, detail)
}

/// The parent a create names, as a UUID: a UUID as given, a key looked up (a key names its
/// task forever, so the answer never changes). Nothing else is checked here.
async fn parent_ref(
    state: &AppState,
    account: AccountId,
    r: &CreateReq,
) -> ApiResult<Option<Uuid>> {
    let Some(text) = &r.body.parent else {
        return Ok(None);
    };
    let parent = match TaskRef::parse(text).map_err(|e| invalid_parent(format!("parent: {e}")))? {
        TaskRef::Uuid(u) => u,
        TaskRef::Key(k) => {
            let number = i64::try_from(k.number).unwrap_or(i64::MAX);
            let found = state
                .alloc
                .uuid_for_key(account, k.prefix.as_str(), &k.scope(), number)
                .await?;
            match found {
                Ok(u) => u,
                Err(_) if recovering(state, account).await? => {
                    return Err(recovering_without(&format!("the parent {k}")))
                }
                Err(_) => return Err(invalid_parent(format!("parent {k}: no such task"))),
            }
        }
    };
    if parent == r.uuid {
        return Err(invalid_parent("a task cannot be its own parent".into()));
    }
    Ok(Some(parent))
}

/// The subtasks among `go` whose parent does not take them, each with its refusal: a parent
/// with no key yet is `409 task_not_committed` (retried once the parent's create is
/// answered; in the same batch, it is not yet); one that is no task of this account or as
/// deep as keys go is `422 invalid_parent`. One read for all. A subtask goes into its parent's
/// project, whatever project its create names (the parent may have moved since the client
/// last heard).
async fn check_parents(
    state: &AppState,
    account: AccountId,
    go: &[(Item, Reserved)],
) -> ApiResult<HashMap<String, ApiError>> {
    let parents: Vec<Uuid> = go.iter().filter_map(|(it, _)| it.m.parent).collect();
    if parents.is_empty() {
        return Ok(HashMap::new());
    }
    let meta = state.alloc.task_meta(account, parents).await?;
    let in_batch: HashSet<Uuid> = go.iter().map(|(it, _)| it.m.uuid).collect();
    let missing = |p: &Uuid| !meta.contains_key(p) && !in_batch.contains(p);
    let lacking = go
        .iter()
        .any(|(it, _)| it.m.parent.as_ref().is_some_and(missing));
    let recovering = lacking && recovering(state, account).await?;
    let mut refused = HashMap::new();
    for (it, _) in go {
        let Some(p) = it.m.parent else { continue };
        let refusal = match meta.get(&p).map(|m| m.key.as_ref()) {
            None if missing(&p) && recovering => {
                Some(recovering_without(&format!("the parent {p}")))
            }
            None if missing(&p) => Some(invalid_parent(format!("parent {p}: no such task"))),
            None | Some(None) => Some(not_committed(format!(
                "the parent {p} has no key yet; send the subtask after the parent's create is \
                 answered"
            ))),
            Some(Some(k)) if k.task_key().depth() + 1 >= MAX_DEPTH => {
                Some(invalid_parent(format!(
                    "the parent {} is as deep as keys go ({MAX_DEPTH} numbers)",
                    k.key()
                )))
            }
            Some(Some(_)) => None,
        };
        if let Some(e) = refusal {
            refused.insert(it.m.idem.clone(), e);
        }
    }
    Ok(refused)
}

/// The imports among `go` that would claim a key that is not theirs to claim, each with its
/// refusal (witnesses, which bring back what devices hold, are not checked):
/// - an origin key another task was imported with: `409 already_imported`, naming that task;
/// - a kept key (`keep_number`) another task holds: `409 key_taken`;
/// - an origin key in a prefix a project of the account has or had, without `keep_number`:
///   `409 key_taken`, since that prefix's keys name that project's tasks.
///
/// Two reads for the batch, plus one per kept key. A kept key taken in a race after this
/// check is bound to nothing: the backend numbers the task from the counter and records a
/// clash (G1 either way).
async fn check_origins(
    state: &AppState,
    account: AccountId,
    go: &[(Item, Reserved)],
    bodies: &HashMap<String, callsign_core::dto::NewTask>,
    witnessed: &HashSet<String>,
) -> ApiResult<HashMap<String, ApiError>> {
    let imports: Vec<(&Item, &callsign_core::dto::NewTask, String)> = go
        .iter()
        .filter(|(it, _)| !witnessed.contains(&it.m.idem))
        .filter_map(|(it, _)| {
            let body = bodies.get(&it.m.idem)?;
            let key = body.origin.as_ref()?.key.as_deref()?;
            Some((it, body, Origin::normal_key(key)))
        })
        .collect();
    let mut refused = HashMap::new();
    if imports.is_empty() {
        return Ok(refused);
    }
    let keys = imports.iter().map(|(.., k)| k.clone()).collect();
    let holders = state.alloc.origin_holders(account, keys).await?;
    let others: Vec<Uuid> = holders.values().copied().collect();
    let meta = state.alloc.task_meta(account, others).await?;
    let projects = state.alloc.list_projects(account).await?;
    let named = |prefix: &str| {
        projects
            .iter()
            .find(|p| p.prefix == prefix || p.previous_prefixes.iter().any(|q| q == prefix))
    };
    for (it, body, key) in imports {
        let uuid = it.m.uuid;
        let refusal = match holders.get(&key) {
            Some(h) if *h != uuid => {
                let what = meta
                    .get(h)
                    .and_then(|m| m.key.as_ref())
                    .map_or_else(|| h.to_string(), |k| format!("{} ({h})", k.key()));
                Some(ApiError::new(
                    ErrorCode::AlreadyImported,
                    format!("{key} was imported already: it is {what}"),
                ))
            }
            _ if body.keep_number => kept_taken(state, account, uuid, body).await?,
            _ => TaskKey::parse(&key)
                .ok()
                .and_then(|k| named(k.prefix.as_str()).map(|p| (k, p)))
                .map(|(k, p)| {
                    ApiError::new(
                        ErrorCode::KeyTaken,
                        format!(
                            "{k} would name two tasks: {} is a prefix of project {} here, whose \
                             keys name its own tasks; import into {} keeping numbers instead",
                            k.prefix, p.prefix, p.prefix
                        ),
                    )
                }),
        };
        if let Some(e) = refusal {
            refused.insert(it.m.idem.clone(), e);
        }
    }
    Ok(refused)
}

/// `409 key_taken` when another task holds the key a `keep_number` create keeps.
async fn kept_taken(
    state: &AppState,
    account: AccountId,
    uuid: Uuid,
    body: &callsign_core::dto::NewTask,
) -> ApiResult<Option<ApiError>> {
    let Ok(key) = callsign_core::validate::kept_key(body) else {
        return Ok(None);
    };
    let number = i64::try_from(key.number).unwrap_or(i64::MAX);
    let found = state
        .alloc
        .uuid_for_key(account, key.prefix.as_str(), "", number)
        .await?;
    Ok(match found {
        Ok(holder) if holder != uuid => Some(ApiError::new(
            ErrorCode::KeyTaken,
            format!("{key} is the key of another task here ({holder}); nothing was numbered"),
        )),
        _ => None,
    })
}
