//! Local edits: each change the user makes on this device (a capture, an edit, a move, sending
//! the inbox, a discard, a retry, an undo) is one transaction, and this module opens it. Inside
//! it the others do their part and call nothing back: `tasks` reads the task row, `outbox`
//! queues or rewrites its rows, `undo` journals the revert, and `fix` holds the pieces of getting
//! a task unstuck. The sync loop's transactions (claiming, answers, pulls) are in `outbox` and
//! `reconcile`.
use callsign_core::dto::{CommitLink, MutationOp, NewTask, TaskPatch, TaskStatus};
use callsign_core::{Prefix, Priority, LOCAL_PROJECT};
use chrono::{DateTime, Utc};
use rusqlite::{params, Transaction};
use uuid::Uuid;

use super::fix::{
    create_refused_in, descendants, detach_children, never_accepted, remove_in, set_project_in,
    task_key,
};
use super::outbox::{retry_failed_in, rows_of};
use super::tasks::{origin_columns, task_in, ts, TASK_COLUMNS};
use super::types::{Discarded, SentInbox};
use super::{Store, CURSOR};
use crate::error::{Error, Result};
use crate::fold::{fold, Fold};
use crate::model::{LocalTask, RowState};
use crate::undo::{revert_of, revert_of_capture, Journal, UndoKind, Undone, UndoneChange};

/// The task's conflicts once this device's edit lands, as JSON: the ones it resolves gone, and
/// the ones whose value the edit brings back (a restore), as the server will also drop them.
fn resolved_here(before: &LocalTask, patch: &TaskPatch) -> String {
    let mut after = before.fields();
    after.apply(patch);
    let left: Vec<_> = before
        .conflicts
        .iter()
        .filter(|c| !patch.resolve.contains(&c.field) && c.value != after.value(c.field))
        .collect();
    serde_json::to_string(&left).unwrap_or_else(|_| "[]".into())
}

/// The task row and its `create` outbox row, inside the caller's transaction. The statement
/// is cached: an import runs it once per task.
pub(super) fn insert_local(
    tx: &rusqlite::Transaction<'_>,
    uuid: Uuid,
    idempotency_key: &str,
    body: &NewTask,
    now: DateTime<Utc>,
) -> Result<()> {
    let status = body.status.unwrap_or(TaskStatus::Pending);
    let (origin, origin_key) = origin_columns(body.origin.as_ref());
    let mut commits = body.commits.clone();
    CommitLink::sort(&mut commits);
    tx.prepare_cached(
        "INSERT INTO tasks (uuid, project, description, notes, status, tags, created_at,
            modified_at, due, priority, parent, assignee, origin, origin_key, commits) VALUES (?1,
            ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    )?
    .execute(params![
        uuid.to_string(),
        body.project,
        body.description,
        body.notes,
        status.as_str(),
        serde_json::to_string(&body.tags).unwrap_or_else(|_| "[]".into()),
        ts(body.created_at.unwrap_or(now)),
        body.due.map(ts),
        body.priority.map(Priority::as_str),
        body.parent,
        body.assignee,
        origin,
        origin_key,
        serde_json::to_string(&commits).unwrap_or_else(|_| "[]".into()),
    ])?;
    super::outbox::insert(
        tx,
        uuid,
        MutationOp::Create,
        idempotency_key,
        &serde_json::to_value(body).unwrap_or_default(),
        now.timestamp_millis(),
    )
}

/// The task's commit links once this device's edit lands, as JSON: the patch's unlinks gone,
/// its links added or replacing their hash's, sorted as the server sorts them.
fn commits_here(before: &LocalTask, patch: &TaskPatch) -> String {
    let mut commits = before.commits.clone();
    CommitLink::apply(&mut commits, &patch.commits, &patch.unlink_commits);
    serde_json::to_string(&commits).unwrap_or_else(|_| "[]".into())
}

/// Applies an edit to the local row and queues it (folded into an unsent request where [`fold`]
/// allows), inside the caller's transaction, journaling its revert as `journal` says. Commit
/// links are applied to the row's list here too; they are never journaled ([`revert_of`]
/// leaves them out), so an undo does not unlink a commit.
fn edit_in(
    tx: &rusqlite::Transaction<'_>,
    uuid: Uuid,
    mut patch: TaskPatch,
    new_key: &str,
    now: DateTime<Utc>,
    journal: Journal,
) -> Result<()> {
    let u = uuid.to_string();
    let before = task_in(tx, uuid)?;
    super::undo::journal(tx, journal, uuid, &revert_of(&before, &patch), now)?;
    let base = callsign_core::merge::base_for(&before.fields(), &patch);
    patch.base = (base != Default::default()).then_some(base);
    let conflicts = resolved_here(&before, &patch);
    let commits = commits_here(&before, &patch);
    let tags = patch.tags.as_ref().map(serde_json::to_string).transpose();
    // ?7/?9: whether the patch sets due/priority (a null value clears it).
    let changed = tx.execute(
        "UPDATE tasks SET description = COALESCE(?2, description),
            notes = COALESCE(?3, notes), status = COALESCE(?4, status),
            tags = COALESCE(?5, tags), modified_at = ?6,
            due = CASE WHEN ?7 THEN ?8 ELSE due END,
            priority = CASE WHEN ?9 THEN ?10 ELSE priority END,
            project = COALESCE(upper(?11), project), conflicts = ?12,
            assignee = CASE WHEN ?13 THEN ?14 ELSE assignee END, commits = ?15
         WHERE uuid = ?1",
        params![
            u,
            patch.description,
            patch.notes,
            patch.status.map(TaskStatus::as_str),
            tags.map_err(|e| Error::Invalid(e.to_string()))?,
            ts(now),
            patch.due.is_some(),
            patch.due.flatten().map(ts),
            patch.priority.is_some(),
            patch.priority.flatten().map(Priority::as_str),
            patch.project.as_deref().map(str::trim),
            conflicts,
            patch.assignee.is_some(),
            patch.assignee.clone().flatten(),
            commits,
        ],
    )?;
    if changed == 0 {
        return Err(Error::NotFound(u));
    }
    let rows = super::outbox::rows_of(tx, uuid)?;
    match fold(&rows, patch) {
        Fold::Into { id, body } => super::outbox::set_body(tx, id, &body, now)?,
        Fold::Append(p) => super::outbox::insert(
            tx,
            uuid,
            MutationOp::Update,
            new_key,
            &serde_json::to_value(p).unwrap_or_default(),
            now.timestamp_millis(),
        )?,
    }
    Ok(())
}

/// The labels of a task's pending subtasks (what blocks its completion).
fn open_subtasks(tx: &Transaction<'_>, uuid: Uuid) -> Result<Vec<String>> {
    let sql = format!(
        "SELECT {TASK_COLUMNS} FROM tasks t WHERE t.parent = ?1 AND t.status = 'pending'
            ORDER BY t.created_at, t.rowid"
    );
    let mut stmt = tx.prepare(&sql)?;
    let tasks = stmt
        .query_map([uuid.to_string()], super::tasks::task_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(tasks.iter().map(|t| t.label()).collect())
}

/// Applies one entry's revert to `uuid`.
fn revert_one(
    tx: &Transaction<'_>,
    uuid: Uuid,
    kind: UndoKind,
    revert: TaskPatch,
    new_key: &mut dyn FnMut() -> String,
    now: DateTime<Utc>,
) -> Result<UndoneChange> {
    let mut done = UndoneChange {
        uuid,
        kind,
        restored: revert.clone(),
        removed: false,
        kept: None,
    };
    let before = task_in(tx, uuid)?;
    if kind.is_capture() && before.key.is_none() && create_refused_in(tx, uuid)? {
        // The server never had it: removed, as `delete` removes it.
        detach_children(tx, uuid, now)?;
        remove_in(tx, uuid)?;
        done.removed = true;
        return Ok(done);
    }
    if revert.status == Some(TaskStatus::Completed) && before.status != TaskStatus::Completed {
        let open = open_subtasks(tx, uuid)?;
        if !open.is_empty() {
            return Err(Error::Blocked {
                task: before.label(),
                open,
            });
        }
    }
    let mut fields = revert;
    match fields.project.take() {
        Some(p) if p.eq_ignore_ascii_case(&before.project) => {}
        Some(p) if before.key.is_some() && p == LOCAL_PROJECT => {
            done.restored.project = None;
            done.kept = Some(format!(
                "it stays in {}: it has its key now, and {LOCAL_PROJECT} keeps only tasks the \
                 server never numbered",
                before.project
            ));
        }
        Some(p) if before.key.is_some() => fields.project = Some(p),
        Some(p) => {
            let prefix = Prefix::parse(&p)
                .map_err(|e| Error::Invalid(format!("the journal's project {p:?}: {e}")))?;
            set_project_in(tx, uuid, &prefix, new_key, now, false)?;
        }
        None => {}
    }
    if !fields.is_empty() {
        edit_in(tx, uuid, fields, &new_key(), now, Journal::Skip)?;
    }
    // As an edit of a refused task does: it goes again, with the change.
    retry_failed_in(tx, uuid, new_key, now.timestamp_millis())?;
    Ok(done)
}

impl Store {
    /// Writes a new provisional task and its `create` outbox row in one transaction, and
    /// journals it as its own undo step (undoing it deletes the task).
    pub fn create_local(
        &mut self,
        uuid: Uuid,
        idempotency_key: &str,
        body: &NewTask,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        insert_local(&tx, uuid, idempotency_key, body, now)?;
        super::undo::journal(
            &tx,
            Journal::Step(UndoKind::Create),
            uuid,
            &revert_of_capture(),
            now,
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Writes many new provisional tasks, each with its `create` outbox row, in one
    /// transaction: either all of them are saved or none is. Items are `(uuid, idempotency
    /// key, body)`; the rows are inserted in that order, which is capture order. The batch is
    /// one undo step (an `import`): undoing it deletes every task of it.
    pub fn create_local_many(
        &mut self,
        items: &[(Uuid, String, NewTask)],
        now: DateTime<Utc>,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        let step = super::undo::step_for(&tx, Journal::Step(UndoKind::Import))?;
        for (uuid, key, body) in items {
            insert_local(&tx, *uuid, key, body, now)?;
            if let Some(step) = step {
                super::undo::record(&tx, step, *uuid, &revert_of_capture(), now)?;
            }
        }
        super::undo::prune(&tx)?;
        tx.commit()?;
        Ok(())
    }

    /// Applies an edit to the local row and queues it (folded into an unsent request where
    /// [`fold`] allows), in one transaction. `new_key` is used only if a new row is needed.
    /// The queued patch carries, as its `base`, each field's value here before the edit, so
    /// the server can tell a concurrent edit of the same field (`callsign_core::merge`). The
    /// same values, as the patch that sets them back, go on the undo journal as `journal`
    /// says, in the same transaction.
    pub fn edit_local(
        &mut self,
        uuid: Uuid,
        patch: TaskPatch,
        new_key: &str,
        now: DateTime<Utc>,
        journal: Journal,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        edit_in(&tx, uuid, patch, new_key, now, journal)?;
        tx.commit()?;
        Ok(())
    }

    /// The user's retry of a task's failed rows: `failed -> pending` under a NEW idempotency key
    /// (`new_key(i)` for the i-th row), tries counted afresh. Returns how many rows were retried.
    ///
    /// A retried update carries the task's current local values for the fields it sets, not the
    /// values it failed with: later edits may have been sent and accepted since, and resending
    /// the old values after them would undo them on the server.
    pub fn retry_failed(
        &mut self,
        uuid: Uuid,
        mut new_key: impl FnMut() -> String,
        now_ms: i64,
    ) -> Result<usize> {
        let tx = self.conn.transaction()?;
        let n = retry_failed_in(&tx, uuid, &mut new_key, now_ms)?;
        tx.commit()?;
        if n == 0 {
            return Err(Error::Invalid(format!(
                "task {uuid} has no failed request to retry"
            )));
        }
        Ok(n)
    }

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

    /// Reverts the newest journaled step (see `crate::undo`) and drops it from the journal, in
    /// one transaction; its changes come back newest first, without the tasks (the engine reads
    /// them). Nothing journaled: [`Error::NothingToUndo`]. A completion while subtasks are open
    /// is refused as `done` is ([`Error::Blocked`]): the whole undo fails and the step stays. A
    /// numbered task is not moved back into the local inbox ([`UndoneChange::kept`] says so);
    /// the rest of its step is undone.
    pub fn undo(
        &mut self,
        mut new_key: impl FnMut() -> String,
        now: DateTime<Utc>,
    ) -> Result<Undone> {
        let tx = self.conn.transaction()?;
        let step: Option<i64> =
            tx.query_row("SELECT MAX(step) FROM undo_journal", [], |r| r.get(0))?;
        let step = step.ok_or(Error::NothingToUndo)?;
        let entries: Vec<(String, String, String, String)> = {
            let mut stmt = tx.prepare_cached(
                "SELECT uuid, kind, at, revert FROM undo_journal WHERE step = ?1 ORDER BY id DESC",
            )?;
            let rows = stmt
                .query_map([step], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<rusqlite::Result<_>>()?;
            rows
        };
        let bad = |what: &str, e: String| Error::Invalid(format!("undo journal {what}: {e}"));
        let mut changes = Vec::with_capacity(entries.len());
        let mut at = now;
        for (uuid, kind, when, revert) in &entries {
            let uuid = Uuid::parse_str(uuid).map_err(|e| bad("uuid", e.to_string()))?;
            let kind = UndoKind::parse(kind).ok_or_else(|| bad("kind", kind.clone()))?;
            let restored: TaskPatch =
                serde_json::from_str(revert).map_err(|e| bad("revert", e.to_string()))?;
            at = DateTime::parse_from_rfc3339(when)
                .map_err(|e| bad("time", e.to_string()))?
                .with_timezone(&Utc);
            changes.push(revert_one(&tx, uuid, kind, restored, &mut new_key, now)?);
        }
        tx.execute("DELETE FROM undo_journal WHERE step = ?1", [step])?;
        tx.commit()?;
        // The step's kind is its first (oldest) change's.
        let kind = changes.last().map(|c| c.kind).unwrap_or(UndoKind::Edit);
        Ok(Undone {
            kind,
            at,
            changes,
            tasks: Vec::new(),
        })
    }
}
