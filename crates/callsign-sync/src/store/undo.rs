//! The undo journal (`undo_journal`, migration 008; what it holds is `crate::undo`): written in
//! the transaction of each journaled change, bounded in that same transaction, and popped by
//! [`Store::undo`], which applies the newest step's reverts as new local changes (each through
//! the outbox as an edit or move is) and deletes the step, in one transaction: either the whole
//! step is undone and gone from the journal, or nothing changed.
use callsign_core::dto::{TaskPatch, TaskStatus};
use callsign_core::{Prefix, LOCAL_PROJECT};
use chrono::{DateTime, Utc};
use rusqlite::{params, Transaction};
use uuid::Uuid;

use super::fix::{create_refused_in, detach_children, remove_in, set_project_in};
use super::outbox::retry_failed_in;
use super::tasks::{edit_in, task_in, ts, TASK_COLUMNS};
use super::Store;
use crate::error::{Error, Result};
use crate::undo::{Journal, UndoKind, Undone, UndoneChange, MAX_ROWS, MAX_STEPS};

/// The step and kind a change journaled as `journal` goes in (`None`: not journaled).
pub(super) fn step_for(tx: &Transaction<'_>, journal: Journal) -> Result<Option<(i64, UndoKind)>> {
    let (kind, join) = match journal {
        Journal::Skip => return Ok(None),
        Journal::Step(k) => (k, false),
        Journal::Join(k) => (k, true),
    };
    let newest: Option<i64> =
        tx.query_row("SELECT MAX(step) FROM undo_journal", [], |r| r.get(0))?;
    let step = match (newest, join) {
        (Some(s), true) => s,
        (Some(s), false) => s + 1,
        (None, _) => 1,
    };
    Ok(Some((step, kind)))
}

/// Writes one entry; a revert that sets nothing (a change that only cleared conflicts) has
/// nothing to put back and is not written.
pub(super) fn record(
    tx: &Transaction<'_>,
    (step, kind): (i64, UndoKind),
    uuid: Uuid,
    revert: &TaskPatch,
    now: DateTime<Utc>,
) -> Result<()> {
    if revert.is_empty() {
        return Ok(());
    }
    let revert = serde_json::to_string(revert).map_err(|e| Error::Invalid(e.to_string()))?;
    tx.prepare_cached(
        "INSERT INTO undo_journal (step, uuid, kind, at, revert) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        step,
        uuid.to_string(),
        kind.as_str(),
        ts(now),
        revert
    ])?;
    Ok(())
}

/// Keeps the newest [`MAX_STEPS`] steps, and of those only as many (newest first) as fit in
/// [`MAX_ROWS`] rows; the newest step always stays.
pub(super) fn prune(tx: &Transaction<'_>) -> Result<()> {
    prune_to(tx, MAX_STEPS, MAX_ROWS)
}

fn prune_to(tx: &Transaction<'_>, max_steps: i64, max_rows: i64) -> Result<()> {
    tx.prepare_cached(
        "DELETE FROM undo_journal WHERE step IN (
            WITH s AS (SELECT step, COUNT(*) AS n FROM undo_journal GROUP BY step),
                 r AS (SELECT step, ROW_NUMBER() OVER (ORDER BY step DESC) AS rank,
                              SUM(n) OVER (ORDER BY step DESC) AS upto FROM s)
            SELECT step FROM r WHERE rank > ?1 OR (rank > 1 AND upto > ?2))",
    )?
    .execute(params![max_steps, max_rows])?;
    Ok(())
}

/// Journals one change of `uuid` whose revert is `revert`, and bounds the journal.
pub(super) fn journal(
    tx: &Transaction<'_>,
    journal: Journal,
    uuid: Uuid,
    revert: &TaskPatch,
    now: DateTime<Utc>,
) -> Result<()> {
    if let Some(step) = step_for(tx, journal)? {
        record(tx, step, uuid, revert, now)?;
        prune(tx)?;
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

    /// The journal as `(step, uuid, kind, revert)`, oldest first (tests look at what a change
    /// journaled).
    #[cfg(test)]
    pub fn journal_for_test(&self) -> Vec<(i64, Uuid, UndoKind, TaskPatch)> {
        let mut stmt = self
            .conn
            .prepare("SELECT step, uuid, kind, revert FROM undo_journal ORDER BY id")
            .unwrap();
        stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ))
        })
        .unwrap()
        .map(|r| {
            let (step, uuid, kind, revert) = r.unwrap();
            (
                step,
                Uuid::parse_str(&uuid).unwrap(),
                UndoKind::parse(&kind).unwrap(),
                serde_json::from_str(&revert).unwrap(),
            )
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps of 1, 3, 1 and 4 rows (oldest first), bounded to `steps` steps and `rows` rows:
    /// the sizes of the steps left.
    fn left_after(steps: i64, rows: i64) -> Vec<i64> {
        let mut s = Store::in_memory().unwrap();
        let tx = s.conn.transaction().unwrap();
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        for (step, n) in [(1, 1), (2, 3), (3, 1), (4, 4)] {
            for _ in 0..n {
                let u = Uuid::new_v4();
                tx.execute(
                    "INSERT INTO tasks (uuid, project, description, status, created_at,
                        modified_at) VALUES (?1, 'SYN', 'd', 'pending', 'x', 'x')",
                    [u.to_string()],
                )
                .unwrap();
                let revert = crate::undo::revert_of_capture();
                record(&tx, (step, UndoKind::Create), u, &revert, now).unwrap();
            }
        }
        prune_to(&tx, steps, rows).unwrap();
        let mut stmt = tx
            .prepare("SELECT COUNT(*) FROM undo_journal GROUP BY step ORDER BY step")
            .unwrap();
        let left = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        left
    }

    #[test]
    fn the_journal_keeps_the_newest_steps_that_fit_and_always_the_newest() {
        assert_eq!(left_after(100, 100), [1, 3, 1, 4]);
        assert_eq!(left_after(3, 100), [3, 1, 4], "by steps");
        assert_eq!(
            left_after(100, 5),
            [1, 4],
            "by rows: whole steps, newest first"
        );
        assert_eq!(
            left_after(100, 2),
            [4],
            "the newest step stays, however large"
        );
    }
}
