//! Getting a task unstuck: giving a provisional task another project (a refused one is sent
//! again; the local inbox's go to a server project), and discarding what the server never
//! accepted. Each is one transaction, and each re-checks the outbox inside it, so a row the
//! sync loop claimed meanwhile is never rewritten (a sent request stays frozen).
use callsign_core::dto::{MutationOp, NewTask, TaskPatch};
use callsign_core::{Prefix, LOCAL_PROJECT};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension, Transaction};
use uuid::Uuid;

use super::outbox::{retry_failed_in, rows_of, set_body};
use super::{Store, CURSOR};
use crate::error::{Error, Result};
use crate::model::{OutboxRow, RowState};
use crate::undo::Journal;

/// What [`Store::discard`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discarded {
    /// The server never accepted anything of the task: it is gone from this device.
    Removed,
    /// The task keeps its key; its refused changes were dropped (the server's values come back
    /// with the next pull, which starts over).
    Changes(usize),
}

/// What [`Store::send_inbox`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SentInbox {
    /// Tasks now queued for the server project.
    pub moved: Vec<Uuid>,
    /// Deleted inbox tasks, removed instead of being sent.
    pub removed: Vec<Uuid>,
}

/// The task's key (`None` while provisional), or `NotFound`.
fn task_key(tx: &Transaction<'_>, uuid: Uuid) -> Result<Option<String>> {
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
fn never_accepted(key: &Option<String>, rows: &[OutboxRow]) -> bool {
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
fn descendants(tx: &Transaction<'_>, uuid: Uuid) -> Result<Vec<Uuid>> {
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

impl Store {
    /// Gives a task the server has not numbered another project. Refused before it goes:
    /// a task with a key, or whose create is on the wire (or sent and waiting to be retried).
    /// A refused create is queued again, under a new idempotency key. The move goes on the
    /// undo journal as `journal` says (its revert: the project it had).
    pub fn set_project(
        &mut self,
        uuid: Uuid,
        project: &Prefix,
        mut new_key: impl FnMut() -> String,
        now: DateTime<Utc>,
        journal: Journal,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        let before = super::tasks::task_in(&tx, uuid)?;
        let revert = TaskPatch {
            project: Some(before.project),
            ..TaskPatch::default()
        };
        super::undo::journal(&tx, journal, uuid, &revert, now)?;
        set_project_in(&tx, uuid, project, &mut new_key, now, false)?;
        tx.commit()?;
        Ok(())
    }

    /// Sends every task of the local inbox to the server project `project` (queues them in
    /// capture order, as they were); inbox tasks the user deleted are removed instead, since the
    /// server never had them. One transaction.
    pub fn send_inbox(
        &mut self,
        project: &Prefix,
        mut new_key: impl FnMut() -> String,
        now: DateTime<Utc>,
    ) -> Result<SentInbox> {
        if project.is_local() {
            return Err(Error::Invalid(format!(
                "{LOCAL_PROJECT} is this device's inbox: choose a server project"
            )));
        }
        let tx = self.conn.transaction()?;
        let tasks: Vec<String> = {
            // Subtasks go with their parents.
            let mut stmt = tx.prepare(
                "SELECT uuid FROM tasks WHERE project = ?1 AND key IS NULL
                    AND parent IS NULL ORDER BY created_at, rowid",
            )?;
            let rows = stmt
                .query_map([LOCAL_PROJECT], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            rows
        };
        let mut out = SentInbox::default();
        let mut tasks: std::collections::VecDeque<Uuid> = tasks
            .iter()
            .map(|u| Uuid::parse_str(u).map_err(|e| Error::Invalid(e.to_string())))
            .collect::<Result<_>>()?;
        while let Some(uuid) = tasks.pop_front() {
            let status: String = tx.query_row(
                "SELECT status FROM tasks WHERE uuid = ?1",
                [uuid.to_string()],
                |r| r.get(0),
            )?;
            if status == "deleted" && never_accepted(&None, &rows_of(&tx, uuid)?) {
                // Its subtasks go on as tasks of their own.
                tasks.extend(detach_children(&tx, uuid, now)?);
                remove_in(&tx, uuid)?;
                out.removed.push(uuid);
            } else {
                set_project_in(&tx, uuid, project, &mut new_key, now, false)?;
                out.moved.push(uuid);
                out.moved.extend(descendants(&tx, uuid)?);
            }
        }
        tx.commit()?;
        Ok(out)
    }

    /// Discards what the server refused or never saw. A task the server never accepted
    /// (no key; each request unsent or refused) is removed from this device. A numbered task
    /// loses its refused changes; the change feed is read again from the start so the server's
    /// values replace the local ones. Anything else has nothing to discard. The provisional
    /// subtasks of a removed task stay, as tasks of their own.
    pub fn discard(&mut self, uuid: Uuid, now: DateTime<Utc>) -> Result<Discarded> {
        let tx = self.conn.transaction()?;
        let key = task_key(&tx, uuid)?;
        let rows = rows_of(&tx, uuid)?;
        let failed = rows.iter().filter(|r| r.state == RowState::Failed).count();
        let done = if never_accepted(&key, &rows) {
            detach_children(&tx, uuid, now)?;
            remove_in(&tx, uuid)?;
            Discarded::Removed
        } else if failed > 0 {
            tx.execute(
                "DELETE FROM outbox WHERE uuid = ?1 AND state = 'failed'",
                [uuid.to_string()],
            )?;
            tx.execute("DELETE FROM kv WHERE name = ?1", [CURSOR])?;
            Discarded::Changes(failed)
        } else {
            return Err(Error::Invalid(format!(
                "{} has no refused change to discard",
                key.unwrap_or_else(|| uuid.to_string())
            )));
        };
        tx.commit()?;
        Ok(done)
    }

    /// True when the server refused this task's create (it has no key and waits for the user).
    pub fn create_refused(&self, uuid: Uuid) -> Result<bool> {
        create_refused_in(&self.conn, uuid)
    }
}
