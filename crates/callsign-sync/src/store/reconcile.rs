//! Reconciliation: the server's word about a task lands in the local row.
//!
//! - The key comes only from the server. A task keeps the key it has; should the server ever
//!   report a different one, that is logged loudly and the server wins. A key names one local
//!   task: a row holding it under another UUID loses it (also logged loudly).
//! - While the task still has requests in flight, queued or failed, its local fields (the user's
//!   newer edits, and its conflicts as this device last settled them) stay; only the key, number,
//!   previous keys, creator and origin are bound. Otherwise the server's fields replace
//!   them. Commit links are fields like the others: while edits wait, the local list (with
//!   this device's unsent links) stays; after, the server's list replaces it. A failed request counts: its values exist only locally until the user's retry sends
//!   them (a retried update carries the task's current values), so the server's older values
//!   must not overwrite them.
//! - Unknown UUIDs (created on another device) are inserted.
//! - A task the server reports numbered has no create left to send: a create of it sent
//!   before (so the server has its very body) and still queued here is done (the server kept it
//!   while recovering from a rollback and numbered it when recovery ended, or its answer was
//!   lost). Without this, the header said "Sending 1 · next try in 60 s" for a task showing its
//!   key. A failed create stays failed: the user's later edits are folded into it.
use callsign_core::dto::Task;
use rusqlite::{params, OptionalExtension, Transaction};

use super::tasks::{origin_columns, ts};
use super::{Store, CURSOR};
use crate::error::Result;
use crate::model::OutboxRow;
use crate::outbox_state::Outcome;

fn apply_task(tx: &Transaction<'_>, t: &Task) -> Result<bool> {
    let u = t.uuid.to_string();
    let local: Option<Option<String>> = tx
        .prepare_cached("SELECT key FROM tasks WHERE uuid = ?1")?
        .query_row([&u], |r| r.get(0))
        .optional()?;
    let key = match (&t.key, local.as_ref().and_then(|k| k.as_ref())) {
        // A move gives a task a new key and lists the old one: that is no disagreement.
        (Some(server), Some(mine)) if server != mine && !t.previous_keys.contains(mine) => {
            tracing::error!(uuid = %u, local = %mine, server = %server,
                "KEY DISAGREEMENT: the server reports a different key for this task; the server wins");
            Some(server.clone())
        }
        (Some(server), _) => Some(server.clone()),
        (None, mine) => mine.cloned(),
    };
    if let Some(k) = &key {
        let taken = tx
            .prepare_cached(
                "UPDATE tasks SET key = NULL, number = NULL WHERE key = ?1 AND uuid <> ?2",
            )?
            .execute(params![k, u])?;
        if taken > 0 {
            tracing::error!(key = %k, uuid = %u,
                "KEY DISAGREEMENT: another local task held this key; the server wins");
        }
    }
    let number = match (&t.key, t.number) {
        (Some(_), Some(n)) => Some(n as i64),
        _ => tx
            .prepare_cached("SELECT number FROM tasks WHERE uuid = ?1")?
            .query_row([&u], |r| r.get(0))
            .optional()?
            .flatten(),
    };
    let mut closed = 0;
    if t.key.is_some() {
        closed = tx
            .prepare_cached(
                "UPDATE outbox SET state = 'done', last_error = NULL, error_code = NULL,
             next_attempt_at = NULL
             WHERE uuid = ?1 AND op = 'create' AND sent = 1 AND state = 'pending'",
            )?
            .execute([&u])?;
    }
    let busy: bool = tx
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM outbox WHERE uuid = ?1
             AND state IN ('pending', 'in_progress', 'failed'))",
        )?
        .query_row([&u], |r| r.get(0))?;
    let tags = serde_json::to_string(&t.tags).unwrap_or_else(|_| "[]".into());
    let previous = serde_json::to_string(&t.previous_keys).unwrap_or_else(|_| "[]".into());
    let conflicts = serde_json::to_string(&t.conflicts).unwrap_or_else(|_| "[]".into());
    let (origin, origin_key) = origin_columns(t.origin.as_ref());
    let commits = serde_json::to_string(&t.commits).unwrap_or_else(|_| "[]".into());
    let changed = if local.is_none() {
        tx.prepare_cached(
            "INSERT INTO tasks (uuid, key, project, number, description, notes, status, tags,
                created_at, modified_at, due, priority, parent, previous_keys, conflicts,
                created_by, assignee, origin, origin_key, commits)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                ?17, ?18, ?19, ?20)",
        )?
        .execute(params![
            u,
            key,
            t.project,
            number,
            t.description,
            t.notes,
            t.status.as_str(),
            tags,
            ts(t.created_at),
            ts(t.modified_at),
            t.due.map(ts),
            t.priority.map(callsign_core::Priority::as_str),
            t.parent.map(|p| p.to_string()),
            previous,
            conflicts,
            t.created_by,
            t.assignee,
            origin,
            origin_key,
            commits
        ])?
    } else if busy {
        // The origin is the server's to say, like the key: bound even while edits wait here.
        tx.prepare_cached(
            "UPDATE tasks SET key = ?2, number = ?3, previous_keys = ?4, created_by = ?5,
                origin = ?6, origin_key = ?7
                WHERE uuid = ?1 AND (key IS NOT ?2 OR number IS NOT ?3 OR previous_keys IS NOT ?4
                OR created_by IS NOT ?5 OR origin IS NOT ?6)",
        )?
        .execute(params![
            u,
            key,
            number,
            previous,
            t.created_by,
            origin,
            origin_key
        ])?
    } else {
        tx.prepare_cached(
            "UPDATE tasks SET key = ?2, number = ?3, project = ?4, description = ?5, notes = ?6,
                status = ?7, tags = ?8, created_at = ?9, modified_at = ?10, due = ?11,
                priority = ?12, parent = ?13, previous_keys = ?14, conflicts = ?15,
                created_by = ?16, assignee = ?17, origin = ?18, origin_key = ?19, commits = ?20
                WHERE uuid = ?1",
        )?
        .execute(params![
            u,
            key,
            number,
            t.project,
            t.description,
            t.notes,
            t.status.as_str(),
            tags,
            ts(t.created_at),
            ts(t.modified_at),
            t.due.map(ts),
            t.priority.map(callsign_core::Priority::as_str),
            t.parent.map(|p| p.to_string()),
            previous,
            conflicts,
            t.created_by,
            t.assignee,
            origin,
            origin_key,
            commits
        ])?
    };
    Ok(changed > 0 || closed > 0)
}

impl Store {
    /// The local task that holds `key`, if any.
    pub fn key_owner(&self, key: &str) -> Result<Option<uuid::Uuid>> {
        let u: Option<String> = self
            .conn
            .prepare_cached("SELECT uuid FROM tasks WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?;
        Ok(u.and_then(|u| uuid::Uuid::parse_str(&u).ok()))
    }

    /// Records the answers to a claimed batch, in one transaction: row states move as the
    /// outcomes say, then returned tasks are reconciled. Returns the UUIDs of tasks that changed.
    pub fn record_answers(
        &mut self,
        answers: &[(OutboxRow, Outcome)],
        retry_at: impl Fn(&OutboxRow) -> i64,
        now_ms: i64,
    ) -> Result<Vec<uuid::Uuid>> {
        let tx = self.conn.transaction()?;
        let mut changed = Vec::new();
        for (row, outcome) in answers {
            let (state, error, code, next) = match outcome {
                Outcome::Done(_) => ("done", None, None, None),
                Outcome::Retry(m, code) => (
                    "pending",
                    Some(m.as_str()),
                    code.map(|c| c.as_str()),
                    Some(retry_at(row)),
                ),
                Outcome::Fail(r) => (
                    "failed",
                    Some(r.message.as_str()),
                    r.code.map(|c| c.as_str()),
                    None,
                ),
            };
            tx.prepare_cached(
                "UPDATE outbox SET state = ?2, last_error = ?3, error_code = ?4,
                    next_attempt_at = ?5, last_touch = ?6 WHERE id = ?1 AND state = 'in_progress'",
            )?
            .execute(params![row.id, state, error, code, next, now_ms])?;
            if !matches!(outcome, Outcome::Done(_)) {
                changed.push(row.uuid);
            }
        }
        for (_, outcome) in answers {
            if let Outcome::Done(Some(task)) = outcome {
                if apply_task(&tx, task)? {
                    changed.push(task.uuid);
                }
            }
        }
        tx.commit()?;
        Ok(changed)
    }

    /// Applies a page of the change feed and stores its cursor, in one transaction.
    pub fn apply_changes(&mut self, tasks: &[Task], cursor: &str) -> Result<Vec<uuid::Uuid>> {
        let tx = self.conn.transaction()?;
        let mut changed = Vec::new();
        for t in tasks {
            if apply_task(&tx, t)? {
                changed.push(t.uuid);
            }
        }
        tx.execute(
            "INSERT INTO kv (name, value) VALUES (?1, ?2)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            [CURSOR, cursor],
        )?;
        tx.commit()?;
        Ok(changed)
    }
}
