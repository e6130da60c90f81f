//! The key protocol's transactions on SQLite: phase 1 per mutation and phase 2's commits, run
//! as group-commit jobs by [`super::backend::SqliteAlloc`]. The reaper settles slots with the
//! same [`commit_create`] and [`commit_update`].
//!
//! [`commit_create`] takes a number here and only here, in the transaction that commits the
//! slot (G2): a subtask's from the counter scoped to its parent's key path, in the parent's
//! project as it is now. The answer body is the server's ([`Render`], the task's JSON), stored
//! in the slot and replayed verbatim.
//!
//! A move ([`commit_update`] of a patch with another project) runs `move_tree` in the same
//! transaction: the task takes the new project's next number, then each subtask, parents before
//! children and siblings in the order of their old numbers, the next number under its parent's
//! new key; subtasks with no key yet only change project (they number under the new key when
//! their create commits). `slots::rekey` retires the old key row (`current = 0`, and
//! `until_epoch` set to its project's epoch then), so it still names the task, and every moved
//! subtask gets a change-feed entry. The one move that takes no number is the retry of a move
//! the server lost to a rollback whose key a device brought back: the task takes that key back
//! (`renumber`, docs/RECOVERY.md).
use std::collections::HashMap;

use callsign_core::Prefix;
use rusqlite::{params, Connection, OptionalExtension};
use uuid::Uuid;

use super::{
    accounts, changes, imports, slots, witness, AccountId, DbError, KeyRow, Result, SlotState,
};
pub use callsign_storage::protocol::move_target;
use callsign_storage::{
    CreateRequest, Meta, Mutation, Op, Refusal, Render, Reply, Reserved, Settled, Snapshot,
    TaskMeta,
};

/// How phase 1 left one mutation (the claim is added by the caller).
pub enum Decided {
    /// A committed slot's stored answer.
    Replay(Reply),
    Refused(Refusal),
    Proceed(Reserved),
}

/// The part of phase 1 that creates and updates share: `Some` when an existing slot decides
/// the outcome (replay, resume, or `422`); `None` when the caller must insert a new slot (a
/// failed slot is deleted first, and a purged one leaves only its tombstone: the key is
/// treated as new).
fn existing_slot(
    c: &Connection,
    account: AccountId,
    item: &Mutation,
    op: Op,
    now: i64,
) -> Result<Option<Decided>> {
    let Some(slot) = slots::get_slot(c, account, &item.idem)? else {
        // A key whose slot was purged past the window: a new request now, and late evidence.
        if let Some(created_at) = slots::take_purged(c, account, &item.idem)? {
            super::window::note_retry(c, created_at, now, true)?;
        }
        return Ok(None);
    };
    if slot.fingerprint != item.fp {
        return Ok(Some(Decided::Refused(Refusal::KeyReused(op))));
    }
    super::window::note_retry(c, slot.created_at, now, slot.state == SlotState::Failed)?;
    match slot.state {
        SlotState::Committed => {
            slots::touch_slot(c, account, &item.idem, now)?;
            Ok(Some(Decided::Replay(Reply {
                status: slot.response_status.unwrap_or(200),
                body: slot.response_body.unwrap_or_default(),
                replayed: true,
                change: None,
            })))
        }
        SlotState::Pending => {
            slots::touch_slot(c, account, &item.idem, now)?;
            Ok(Some(Decided::Proceed(Reserved {
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

/// The fingerprint of a reservation a witness made: it stands for no one request.
pub const WITNESSED: &[u8] = b"witnessed";

/// Phase 1 of a create.
pub fn phase1_create(
    c: &Connection,
    account: AccountId,
    it: &Mutation,
    now: i64,
) -> Result<Decided> {
    if let Some(decided) = existing_slot(c, account, it, Op::Create, now)? {
        return Ok(decided);
    }
    let request =
        CreateRequest::parse(&it.request).map_err(|e| DbError::CommitFailed(e.to_string()))?;
    let witnessed = request.witness().is_some();
    let body = request.into_task();
    let Some(project) = Prefix::parse(&body.project)
        .ok()
        .map(|p| accounts::project_by_prefix(c, account, &p))
        .transpose()?
        .flatten()
    else {
        return Ok(Decided::Refused(Refusal::NoProject(body.project)));
    };
    // A witness (docs/RECOVERY.md) brings back a task whatever request made it, and leaves a
    // reservation that any later create of the task finds its key by.
    let project = match slots::task_row(c, account, it.uuid)? {
        Some((_, fp)) if fp != it.fp && !witnessed && fp != WITNESSED => {
            return Ok(Decided::Refused(Refusal::TaskExists(it.uuid)))
        }
        Some((reserved_in, _)) => reserved_in,
        None => {
            let fp = if witnessed { WITNESSED } else { &it.fp[..] };
            slots::insert_task_row(c, account, it.uuid, project, it.parent, fp, now)?;
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
    Ok(Decided::Proceed(Reserved {
        slot,
        project: Some(project),
    }))
}

/// Phase 1 of an update: it needs the task's create committed (`409 task_not_committed`).
pub fn phase1_update(
    c: &Connection,
    account: AccountId,
    it: &Mutation,
    now: i64,
) -> Result<Decided> {
    if let Some(decided) = existing_slot(c, account, it, Op::Update, now)? {
        return Ok(decided);
    }
    if slots::current_key(c, account, it.uuid)?.is_none() {
        let reserved = slots::task_row(c, account, it.uuid)?.is_some();
        return Ok(Decided::Refused(Refusal::NotUpdatable {
            uuid: it.uuid,
            reserved,
        }));
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
    Ok(Decided::Proceed(Reserved {
        slot,
        project: None,
    }))
}

/// The slot of `(account, idem)`, by the row id phase 1 (or the reaper) passed on.
fn slot(conn: &Connection, account: AccountId, idem: &str, at: Reserved) -> Result<slots::Slot> {
    slots::get_slot_at(conn, account, idem, at.slot)?
        .ok_or_else(|| DbError::CommitFailed("slot vanished".into()))
}

/// Settles a pending create slot whose task is in TaskChampion: the number is taken from the
/// counter here and only here, in the transaction that commits the slot (G2). A UUID that has
/// a key keeps it (G1), and the answer is then `200` instead of `201`. A slot no longer pending
/// answers with what it stored. `at` is what phase 1 reserved (the reaper passes the slot it
/// read, with no project).
pub fn commit_create(
    conn: &Connection,
    account: AccountId,
    idem: &str,
    at: Reserved,
    snapshot: &Snapshot,
    now: i64,
    render: &Render,
) -> Result<Reply> {
    let slot = slot(conn, account, idem, at)?;
    if slot.state != SlotState::Pending {
        return stored(slot);
    }
    let uuid = slot.task_uuid;
    let reserved_in = match at.project {
        Some(p) => p,
        None => {
            slots::task_row(conn, account, uuid)?
                .ok_or_else(|| DbError::CommitFailed("task reservation vanished".into()))?
                .0
        }
    };
    let parent = slots::parent_of(conn, account, uuid)?;
    let witness = callsign_storage::witness_in(&slot.request);
    let imported = callsign_storage::origin_in(&slot.request);
    // (status, number, key) when the task has its key: it kept one (200), or a witness bound
    // the one a device holds (201).
    let keyed = match (&witness, slots::current_key(conn, account, uuid)?) {
        (Some(w), Some(k)) => {
            witness::bind_earlier(conn, account, uuid, w, &k, now)?;
            Some((200, None, k))
        }
        (Some(w), None) => {
            witness::bind_current(conn, account, uuid, w, now)?.map(|k| (201, Some(k.number), k))
        }
        // An import that keeps its number binds it (else, in a race, the counter numbers it).
        (None, None) => match imported.as_ref().and_then(|i| i.keep.as_ref()) {
            Some(kept) => imports::bind_kept(conn, account, uuid, kept, now)?
                .map(|k| (201, Some(k.number), k)),
            None => None,
        },
        (None, k) => k.map(|k| (200, None, k)),
    };
    let (status, number, key) = match keyed {
        Some(keyed) => keyed,
        None => {
            // A subtask numbers in its parent's scope, in its parent's project (where the
            // parent is now, if it moved since); the parent has its key (phase 1 checked, and
            // keys are never taken back).
            let (project_id, scope) = match parent {
                None => (reserved_in, String::new()),
                Some(p) => {
                    let pk = slots::current_key(conn, account, p)?
                        .ok_or_else(|| DbError::CommitFailed("the parent has no key".into()))?;
                    (pk.project_id, pk.child_scope())
                }
            };
            if project_id != reserved_in {
                slots::set_task_project(conn, account, uuid, project_id)?;
            }
            let n = slots::bump_counter(conn, project_id, &scope)?;
            slots::insert_key(conn, account, project_id, &scope, n, uuid, now)?;
            let prefix: String = conn
                .prepare_cached("SELECT prefix FROM projects WHERE id = ?1")?
                .query_row([project_id], |r| r.get(0))?;
            let key = KeyRow {
                project_id,
                prefix,
                scope,
                number: n,
            };
            (201, Some(n), key)
        }
    };
    if let Some(i) = &imported {
        imports::record(conn, account, uuid, i)?;
    }
    // A new task has no earlier keys; one answered again (200) may have moved since, and a
    // witness may bring back earlier ones.
    let previous = match status {
        201 if witness.is_none() => Vec::new(),
        _ => slots::keys_of(conn, account, uuid)?.1,
    };
    let body = answer(render, snapshot, Some(&key), parent, &previous);
    slots::commit_slot(conn, slot.id, number, status, &body, now)?;
    let change = changes::append(conn, account, uuid, now)?;
    Ok(Reply {
        status,
        body,
        replayed: false,
        change: Some(change),
    })
}

/// Settles a pending update slot whose patch is applied in TaskChampion.
pub fn commit_update(
    conn: &Connection,
    account: AccountId,
    idem: &str,
    at: Reserved,
    snapshot: &Snapshot,
    now: i64,
    render: &Render,
) -> Result<Reply> {
    let slot = slot(conn, account, idem, at)?;
    if slot.state != SlotState::Pending {
        return stored(slot);
    }
    let uuid = slot.task_uuid;
    let (mut key, mut previous) = slots::keys_of(conn, account, uuid)?;
    // A move: the task takes the next number of the other project, its subtasks new numbers
    // under its new key (`move_tree`).
    let mut moved = Vec::new();
    if let Some(to) = move_target(&slot.request) {
        // `to` may be an earlier prefix of a project: it names that project.
        let project = slots::project_id(conn, account, &to)?
            .ok_or_else(|| DbError::CommitFailed(format!("no project {to}")))?;
        if key.as_ref().is_some_and(|k| k.project_id != project) {
            moved = move_tree(conn, account, uuid, project, now)?;
            (key, previous) = slots::keys_of(conn, account, uuid)?;
        }
    }
    let parent = slots::parent_of(conn, account, uuid)?;
    let body = answer(render, snapshot, key.as_ref(), parent, &previous);
    slots::commit_slot(conn, slot.id, None, 200, &body, now)?;
    for sub in moved {
        changes::append(conn, account, sub, now)?;
    }
    let change = changes::append(conn, account, uuid, now)?;
    Ok(Reply {
        status: 200,
        body,
        replayed: false,
        change: Some(change),
    })
}

/// The answer a settled slot stores: the task as `render` shows it, with its current key (and
/// that key's project prefix), its parent and its earlier keys.
fn answer(
    render: &Render,
    snapshot: &Snapshot,
    key: Option<&KeyRow>,
    parent: Option<Uuid>,
    previous: &[String],
) -> String {
    render(Settled {
        snapshot,
        prefix: key.map_or("", |k| &k.prefix),
        key,
        parent,
        previous,
    })
}

/// Moves a task to `project` inside the caller's transaction: it takes the project's next
/// number; then each subtask, parents before children and siblings in the order of their old
/// numbers, takes the next number under its parent's new key. Subtasks with no key yet only
/// change project (they number under the new key when their create commits). Every old key
/// stays, no longer current, and still names its task. Returns the subtasks moved.
fn move_tree(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
    project: i64,
    now: i64,
) -> Result<Vec<Uuid>> {
    // A move into a recovering project waits (docs/RECOVERY.md), also one that would only
    // take back its keys.
    if let Some(prefix) = super::recovery::recovering_prefix(conn, project)? {
        return Err(DbError::Recovering(prefix));
    }
    renumber(conn, account, uuid, (project, ""), now)?;
    let mut moved = Vec::new();
    let mut queue = std::collections::VecDeque::from([uuid]);
    while let Some(parent) = queue.pop_front() {
        let scope = slots::current_key(conn, account, parent)?
            .ok_or_else(|| DbError::CommitFailed("a moved task has no key".into()))?
            .child_scope();
        let mut children = Vec::new();
        for child in slots::children_of(conn, account, parent)? {
            match slots::current_key(conn, account, child)? {
                Some(k) => children.push((k.number, child)),
                None => slots::set_task_project(conn, account, child, project)?,
            }
        }
        children.sort();
        for (_, child) in children {
            renumber(conn, account, child, (project, &scope), now)?;
            moved.push(child);
            queue.push_back(child);
        }
    }
    Ok(moved)
}

/// Gives a moved task its key in `(project, scope)`: the next number, or the key a move the
/// server lost to a rollback had given it, when a device brought that key back
/// (`slots::lost_move_key`): the key the team saw stays the task's key.
fn renumber(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
    (project, scope): (i64, &str),
    now: i64,
) -> Result<()> {
    match slots::lost_move_key(conn, account, uuid, project, scope)? {
        Some(n) => slots::take_back(conn, account, uuid, (project, scope, n), now),
        None => {
            let n = slots::bump_counter(conn, project, scope)?;
            slots::rekey(conn, account, uuid, (project, scope, n), now)
        }
    }
}

fn stored(slot: slots::Slot) -> Result<Reply> {
    match (slot.response_status, slot.response_body) {
        (Some(status), Some(body)) => Ok(Reply {
            status,
            body,
            replayed: true,
            change: None,
        }),
        _ => Err(DbError::CommitFailed(
            "slot was failed by the reaper".into(),
        )),
    }
}

/// The project prefix and current key of each reserved task.
pub fn task_meta(conn: &Connection, account: AccountId, uuids: &[Uuid]) -> Result<TaskMeta> {
    let mut st = conn.prepare_cached(
        "SELECT p.prefix, t.parent_uuid FROM tasks t JOIN projects p ON p.id = t.project_id
         WHERE t.account_id = ?1 AND t.uuid = ?2",
    )?;
    let mut out = HashMap::with_capacity(uuids.len());
    for &u in uuids {
        let found: Option<(String, Option<Uuid>)> = st
            .query_row(params![account, u], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        if let Some((prefix, parent)) = found {
            let (key, previous) = slots::keys_of(conn, account, u)?;
            let meta = Meta {
                prefix,
                key,
                parent,
                previous,
            };
            out.insert(u, meta);
        }
    }
    Ok(out)
}
