//! Outbox rows: queueing, claiming a batch, recording answers, stale reset, user retry (whose
//! transaction, [`Store::retry_failed`], is opened in `edit`, as every local edit's is).
//! Each state change follows [`crate::outbox_state::transition`]; the `WHERE state = ...` of each
//! statement is that table's precondition, so a row in the wrong state is left alone.
use callsign_core::dto::{MutationOp, TaskPatch};
use std::collections::HashMap;

use rusqlite::{params, Row, Transaction};
use uuid::Uuid;

use super::tasks::{task_row, uuid_array, TASK_COLUMNS};
use super::types::Counts;
use super::Store;
use crate::error::{Error, Result};
use crate::model::{op_str, parse_op, OutboxRow, RowState};

pub(super) const COLUMNS: &str =
    "id, uuid, op, idempotency_key, body, state, sent, try_count, last_error,
    created_at, last_touch, next_attempt_at";

pub(super) fn map_row(r: &Row<'_>) -> rusqlite::Result<OutboxRow> {
    let bad = |i: usize| {
        rusqlite::Error::FromSqlConversionFailure(
            i,
            rusqlite::types::Type::Text,
            "bad outbox value".into(),
        )
    };
    Ok(OutboxRow {
        id: r.get(0)?,
        uuid: Uuid::parse_str(&r.get::<_, String>(1)?).map_err(|_| bad(1))?,
        op: parse_op(&r.get::<_, String>(2)?).ok_or_else(|| bad(2))?,
        idempotency_key: r.get(3)?,
        body: serde_json::from_str(&r.get::<_, String>(4)?).map_err(|_| bad(4))?,
        state: RowState::parse(&r.get::<_, String>(5)?).ok_or_else(|| bad(5))?,
        sent: r.get(6)?,
        try_count: r.get::<_, i64>(7)? as u32,
        last_error: r.get(8)?,
        created_at: r.get(9)?,
        last_touch: r.get(10)?,
        next_attempt_at: r.get(11)?,
    })
}

pub(super) fn insert(
    tx: &Transaction<'_>,
    uuid: Uuid,
    op: MutationOp,
    key: &str,
    body: &serde_json::Value,
    now_ms: i64,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO outbox (uuid, op, idempotency_key, body, state, created_at, last_touch)
         VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?5)",
    )?
    .execute(params![
        uuid.to_string(),
        op_str(op),
        key,
        body.to_string(),
        now_ms
    ])?;
    Ok(())
}

pub(super) fn rows_of(tx: &Transaction<'_>, uuid: Uuid) -> Result<Vec<OutboxRow>> {
    let sql = format!("SELECT {COLUMNS} FROM outbox WHERE uuid = ?1 ORDER BY id");
    let mut stmt = tx.prepare(&sql)?;
    let rows = stmt
        .query_map([uuid.to_string()], map_row)?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

pub(super) fn set_body(
    tx: &Transaction<'_>,
    id: i64,
    body: &serde_json::Value,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<()> {
    tx.execute(
        "UPDATE outbox SET body = ?2, last_touch = ?3 WHERE id = ?1",
        params![id, body.to_string(), now.timestamp_millis()],
    )?;
    Ok(())
}

/// The uuids of the local inbox's tasks: their rows stay queued, unsent, until the user sends
/// the task to a server project.
pub(super) const HELD: &str = "SELECT uuid FROM tasks WHERE project = 'INBOX' AND key IS NULL";

impl Store {
    /// The first `limit` rows the plan needs, in capture order: the input of
    /// [`crate::plan::plan`] (a prefix is enough, since a plan is a prefix of the queue). Those
    /// are the pending and in-progress rows, and the failed creates of tasks that still have
    /// pending rows or provisional subtasks (they hold those back). Other failed rows, and the rows of the local
    /// inbox's tasks (held until the user sends them to a server project), are left out, so any
    /// number of them cannot push the sendable rows past the limit.
    pub fn open_rows(&self, limit: usize) -> Result<Vec<OutboxRow>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM outbox o WHERE (o.state IN ('pending', 'in_progress')
                OR (o.state = 'failed' AND o.op = 'create' AND (EXISTS (SELECT 1 FROM outbox p
                    WHERE p.uuid = o.uuid AND p.state = 'pending') OR EXISTS (SELECT 1 FROM tasks c
                    WHERE c.parent = o.uuid AND c.key IS NULL))))
                AND o.uuid NOT IN ({HELD})
             ORDER BY o.id LIMIT ?1"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt
            .query_map([limit as i64], map_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// The parent of each subtask among `uuids`: the plan's other input. One statement; none
    /// at all when this device has no subtask (the partial index answers that at once).
    pub fn parents(&self, uuids: impl IntoIterator<Item = Uuid>) -> Result<HashMap<Uuid, Uuid>> {
        if !self.has_subtasks()? {
            return Ok(HashMap::new());
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT t.uuid, t.parent FROM json_each(?1) j JOIN tasks t ON t.uuid = j.value
             WHERE t.parent IS NOT NULL",
        )?;
        let pairs = stmt
            .query_map([uuid_array(uuids)], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(pairs
            .iter()
            .filter_map(|(u, p)| Some((Uuid::parse_str(u).ok()?, Uuid::parse_str(p).ok()?)))
            .collect())
    }

    /// Whether any task here is a subtask.
    pub(super) fn has_subtasks(&self) -> Result<bool> {
        Ok(self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM tasks WHERE parent IS NOT NULL)",
            [],
            |r| r.get(0),
        )?)
    }

    /// `pending -> in_progress` for the planned rows; each becomes `sent` (frozen) and counts a try.
    /// Returns the claimed rows in order.
    pub fn claim(&mut self, ids: &[i64], now_ms: i64) -> Result<Vec<OutboxRow>> {
        let tx = self.conn.transaction()?;
        let mut out = Vec::with_capacity(ids.len());
        {
            let mut upd = tx.prepare_cached(
                "UPDATE outbox SET state = 'in_progress', sent = 1, try_count = try_count + 1,
                    last_touch = ?2 WHERE id = ?1 AND state = 'pending'",
            )?;
            let sql = format!("SELECT {COLUMNS} FROM outbox WHERE id = ?1");
            let mut sel = tx.prepare_cached(&sql)?;
            for id in ids {
                if upd.execute(params![id, now_ms])? == 1 {
                    out.push(sel.query_row([id], map_row)?);
                }
            }
        }
        tx.commit()?;
        Ok(out)
    }

    /// `in_progress -> pending` for claimed rows that were never sent (the batch was claimed
    /// ahead and its predecessor was not all answered 2xx): each row is put back exactly as it
    /// was before the claim (`before`), so it is not frozen and its try is not counted.
    pub fn unclaim(&mut self, before: &[OutboxRow]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut upd = tx.prepare_cached(
                "UPDATE outbox SET state = 'pending', sent = ?2, try_count = ?3, last_touch = ?4
                    WHERE id = ?1 AND state = 'in_progress'",
            )?;
            for r in before {
                upd.execute(params![r.id, r.sent, r.try_count, r.last_touch])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// `in_progress -> pending` with a retry time, for rows whose request got no usable answer.
    pub fn release(&mut self, ids: &[i64], next_at: i64, error: &str, now_ms: i64) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut upd = tx.prepare_cached(
                "UPDATE outbox SET state = 'pending', next_attempt_at = ?2, last_error = ?3,
                    last_touch = ?4 WHERE id = ?1 AND state = 'in_progress'",
            )?;
            for id in ids {
                upd.execute(params![id, next_at, error, now_ms])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Stale reset: rows left `in_progress` by a process that died go back to `pending`, due now.
    /// Only the holder of the sync lock calls this, so no live process owns such a row.
    pub fn reset_in_progress(&self) -> Result<usize> {
        Ok(self.conn.execute(
            "UPDATE outbox SET state = 'pending', next_attempt_at = NULL WHERE state = 'in_progress'",
            [],
        )?)
    }

    /// Every outbox row of a task, in order (tests look at what a change queued).
    #[cfg(test)]
    pub fn rows_for_test(&self, uuid: Uuid) -> Vec<OutboxRow> {
        let tx = self.conn.unchecked_transaction().unwrap();
        rows_of(&tx, uuid).unwrap()
    }

    /// Each state's rows grouped by task on `outbox_by_state_task`. Pending counts the tasks
    /// with a pending row, less those of them that also have a row on the wire, a refused
    /// create (it holds their rows) or sit in the local inbox: those sets are small, so the
    /// count costs one pass over the pending rows' index entries (about 15 ms for 50,000).
    pub fn counts(&self) -> Result<Counts> {
        let sql = format!(
            "SELECT
                (SELECT COUNT(*) FROM (SELECT uuid FROM outbox WHERE state = 'pending'
                    GROUP BY uuid))
                - (SELECT COUNT(*) FROM (SELECT uuid FROM outbox WHERE state = 'in_progress'
                    UNION SELECT uuid FROM outbox WHERE state = 'failed' AND op = 'create'
                    UNION {HELD}) s WHERE EXISTS (SELECT 1 FROM outbox p
                        WHERE p.state = 'pending' AND p.uuid = s.uuid)),
                (SELECT COUNT(*) FROM (SELECT uuid FROM outbox WHERE state = 'in_progress'
                    GROUP BY uuid)),
                (SELECT COUNT(*) FROM (SELECT uuid FROM outbox WHERE state = 'failed'
                    GROUP BY uuid)),
                (SELECT COUNT(*) FROM tasks INDEXED BY tasks_by_project
                    WHERE project = 'INBOX' AND key IS NULL AND status <> 'deleted'),
                (SELECT COUNT(*) FROM (SELECT uuid FROM outbox WHERE state = 'pending'
                    AND error_code = 'recovering' GROUP BY uuid))"
        );
        Ok(self.conn.prepare_cached(&sql)?.query_row([], |r| {
            let n = |i: usize| r.get::<_, i64>(i).map(|v| v as u64);
            Ok(Counts {
                pending: n(0)?,
                in_flight: n(1)?,
                failed: n(2)?,
                local: n(3)?,
                recovering: n(4)?,
            })
        })?)
    }

    /// The earliest time a pending row waits for (Unix ms), if any waits.
    pub fn next_attempt_at(&self) -> Result<Option<i64>> {
        let sql = format!(
            "SELECT MIN(next_attempt_at) FROM outbox WHERE state = 'pending'
                AND uuid NOT IN ({HELD})"
        );
        Ok(self
            .conn
            .prepare_cached(&sql)?
            .query_row([], |r| r.get(0))?)
    }
}

/// [`Store::retry_failed`] inside the caller's transaction; returns how many rows went back to
/// `pending` (0 when none had failed).
pub(super) fn retry_failed_in(
    tx: &Transaction<'_>,
    uuid: Uuid,
    new_key: &mut dyn FnMut() -> String,
    now_ms: i64,
) -> Result<usize> {
    let rows: Vec<(i64, String, String)> = {
        let mut stmt = tx.prepare_cached(
            "SELECT id, op, body FROM outbox WHERE uuid = ?1 AND state = 'failed' ORDER BY id",
        )?;
        let rows = stmt
            .query_map([uuid.to_string()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        rows
    };
    for (id, op, body) in &rows {
        let body = if op == "update" {
            current_values(tx, uuid, body)?
        } else {
            body.clone()
        };
        tx.execute(
            "UPDATE outbox SET state = 'pending', idempotency_key = ?2, sent = 0, try_count = 0,
                last_error = NULL, error_code = NULL, next_attempt_at = NULL, last_touch = ?3,
                body = ?4
             WHERE id = ?1",
            params![id, new_key(), now_ms, body],
        )?;
    }
    Ok(rows.len())
}

/// An update body whose fields take the task's current local values.
fn current_values(tx: &Transaction<'_>, uuid: Uuid, body: &str) -> Result<String> {
    let mut patch: TaskPatch =
        serde_json::from_str(body).map_err(|e| Error::Invalid(format!("stored patch: {e}")))?;
    let t = tx.query_row(
        &format!("SELECT {TASK_COLUMNS} FROM tasks t WHERE t.uuid = ?1"),
        [uuid.to_string()],
        task_row,
    )?;
    if patch.description.is_some() {
        patch.description = Some(t.description);
    }
    if patch.notes.is_some() {
        patch.notes = Some(t.notes);
    }
    if patch.status.is_some() {
        patch.status = Some(t.status);
    }
    if patch.tags.is_some() {
        patch.tags = Some(t.tags);
    }
    if patch.due.is_some() {
        patch.due = Some(t.due);
    }
    if patch.priority.is_some() {
        patch.priority = Some(t.priority);
    }
    if patch.assignee.is_some() {
        patch.assignee = Some(t.assignee);
    }
    serde_json::to_string(&patch).map_err(|e| Error::Invalid(e.to_string()))
}
