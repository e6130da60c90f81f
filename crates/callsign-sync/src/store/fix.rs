//! Getting a task unstuck: giving a provisional task another project (a refused one is sent
//! again; the local inbox's go to a server project), and discarding what the server never
//! accepted. Each is one transaction (opened in `edit`, as every local edit's is; the pieces here
//! run inside the caller's), and each re-checks the outbox inside it, so a row the sync loop
//! claimed meanwhile is never rewritten (a sent request stays frozen).
//!
//! The outbox keeps the server's error `code` beside its message (migration 003), and
//! `crate::reason::task_failure` says in plain words what was refused and which fix applies
//! (another project, other fields, or sending it again). `set_project` moves a task with no key
//! whose create is unsent or refused (a refused one goes back to the queue under a new
//! idempotency key), and its provisional subtasks with it; an edit of a refused task sends it
//! again; `discard` removes a task the server never accepted (the engine sends `TaskRemoved`;
//! its provisional subtasks stay as tasks of their own), or drops a numbered task's refused
//! changes and reads the change feed again from the start.
use callsign_core::dto::{MutationOp, NewTask};
use callsign_core::Prefix;
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension, Transaction};
use uuid::Uuid;

use super::outbox::{retry_failed_in, rows_of, set_body};
use crate::error::{Error, Result};
use crate::model::{OutboxRow, RowState};

/// The task's key (`None` while provisional), or `NotFound`.
pub(super) fn task_key(tx: &Transaction<'_>, uuid: Uuid) -> Result<Option<String>> {
    tx.query_row(
        "SELECT key FROM tasks WHERE uuid = ?1",
        [uuid.to_string()],
        |r| r.get(0),
    )
    .optional()?
    .ok_or_else(|| Error::NotFound(uuid.to_string()))
}

/// The server has never accepted a request of this task: no key, and every open row is either
/// unsent or refused (none is on the wire or waiting for a retry of a sent request).
pub(super) fn never_accepted(key: &Option<String>, rows: &[OutboxRow]) -> bool {
    key.is_none()
        && rows
            .iter()
            .all(|r| r.state == RowState::Failed || (r.state == RowState::Pending && !r.sent))
}

/// The provisional subtasks of a task (they have not been sent: they wait for its key).
fn provisional_children(tx: &Transaction<'_>, uuid: Uuid) -> Result<Vec<Uuid>> {
    let mut stmt = tx.prepare_cached(
        "SELECT uuid FROM tasks WHERE parent = ?1 AND key IS NULL ORDER BY rowid",
    )?;
    let uuids = stmt
        .query_map([uuid.to_string()], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(uuids
        .iter()
        .filter_map(|u| Uuid::parse_str(u).ok())
        .collect())
}

/// Rewrites the unsent or refused create of a provisional task with `change`.
fn rewrite_create(
    tx: &Transaction<'_>,
    uuid: Uuid,
    now: DateTime<Utc>,
    change: impl FnOnce(&mut NewTask),
) -> Result<()> {
    let rows = rows_of(tx, uuid)?;
    let Some(create) = rows.iter().find(|r| r.op == MutationOp::Create) else {
        return Err(Error::Invalid(format!(
            "task {uuid} has no create to change"
        )));
    };
    let movable =
        create.state == RowState::Failed || (create.state == RowState::Pending && !create.sent);
    if !movable {
        return Err(Error::Invalid(
            "this task is on its way to the server; its project can change once the server \
             has answered"
                .into(),
        ));
    }
    let mut body: NewTask = serde_json::from_value(create.body.clone())
        .map_err(|e| Error::Invalid(format!("stored request: {e}")))?;
    change(&mut body);
    let body = serde_json::to_value(&body).map_err(|e| Error::Invalid(e.to_string()))?;
    set_body(tx, create.id, &body, now)
}

/// Moves a provisional task to `project` inside the caller's transaction: the task row and its
/// create's body; a refused create goes back to the queue under a new idempotency key. Its
/// provisional subtasks go with it (a subtask is in its parent's project), and a subtask alone
/// is refused unless `with_parent`.
pub(super) fn set_project_in(
    tx: &Transaction<'_>,
    uuid: Uuid,
    project: &Prefix,
    new_key: &mut dyn FnMut() -> String,
    now: DateTime<Utc>,
    with_parent: bool,
) -> Result<()> {
    let key = task_key(tx, uuid)?;
    if let Some(k) = key {
        return Err(Error::Invalid(format!(
            "{k} has its key: it moves by an update the server numbers (Engine::set_project)"
        )));
    }
    let parent: Option<String> = tx.query_row(
        "SELECT parent FROM tasks WHERE uuid = ?1",
        [uuid.to_string()],
        |r| r.get(0),
    )?;
    if parent.is_some() && !with_parent {
        return Err(Error::Invalid(
            "a subtask is in its parent's project: change the parent's project and its \
             subtasks go with it"
                .into(),
        ));
    }
    rewrite_create(tx, uuid, now, |body| body.project = project.to_string())?;
    tx.execute(
        "UPDATE tasks SET project = ?2 WHERE uuid = ?1",
        params![uuid.to_string(), project.as_str()],
    )?;
    retry_failed_in(tx, uuid, new_key, now.timestamp_millis())?;
    for child in provisional_children(tx, uuid)? {
        set_project_in(tx, child, project, new_key, now, true)?;
    }
    Ok(())
}

/// Makes the provisional subtasks of a task about to be removed tasks of their own (here and in
/// their unsent creates); returns them.
pub(super) fn detach_children(
    tx: &Transaction<'_>,
    uuid: Uuid,
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>> {
    let children = provisional_children(tx, uuid)?;
    for &child in &children {
        rewrite_create(tx, child, now, |body| body.parent = None)?;
        tx.execute(
            "UPDATE tasks SET parent = NULL WHERE uuid = ?1",
            [child.to_string()],
        )?;
    }
    Ok(children)
}

/// The provisional subtasks of a task, and theirs, in no particular order.
pub(super) fn descendants(tx: &Transaction<'_>, uuid: Uuid) -> Result<Vec<Uuid>> {
    let mut out = Vec::new();
    let mut next = vec![uuid];
    while let Some(u) = next.pop() {
        let children = provisional_children(tx, u)?;
        out.extend(&children);
        next.extend(children);
    }
    Ok(out)
}

/// True when the server refused this task's create (it has no key and waits for the user).
pub(super) fn create_refused_in(conn: &rusqlite::Connection, uuid: Uuid) -> Result<bool> {
    Ok(conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM outbox WHERE uuid = ?1 AND op = 'create'
            AND state = 'failed')",
        [uuid.to_string()],
        |r| r.get(0),
    )?)
}

pub(super) fn remove_in(tx: &Transaction<'_>, uuid: Uuid) -> Result<()> {
    let u = uuid.to_string();
    tx.execute("DELETE FROM outbox WHERE uuid = ?1", [&u])?;
    tx.execute("DELETE FROM tasks WHERE uuid = ?1", [&u])?;
    Ok(())
}
