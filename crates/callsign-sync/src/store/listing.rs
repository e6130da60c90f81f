//! Listing tasks in one pass: the open outbox rows are read once and summed up per task, then
//! the task rows are read once and each gets its sums.
//!
//! A single task's lookup computes the same [`OutboxFacts`] in SQL for that task alone
//! (`tasks::SELECT`); doing that for every task of a listing costs four index searches and row
//! reads per task (the listing of 50,000 tasks spent most of its time there). The two must agree
//! to the field: `store::tests` compares them on a store with every kind of row.
use std::collections::HashMap;

use rusqlite::params;

use super::tasks::{held_by, task_row, with_facts, OutboxFacts, TASK_COLUMNS};
use super::types::TaskQuery;
use super::Store;
use crate::error::Result;
use crate::model::LocalTask;

/// Folds open rows, in any order, into their task's facts. The newest failed row's error wins,
/// else the newest error, so the fold keeps the rank it came from.
#[derive(Debug, Default)]
struct Open {
    facts: OutboxFacts,
    /// (from a failed row, row id) of the error kept.
    last_error_rank: (bool, i64),
}

impl Open {
    /// `state` is not `done` (the query reads open rows only).
    fn add(
        &mut self,
        id: i64,
        state: &str,
        error: Option<(String, Option<String>)>,
        next_at: Option<i64>,
    ) {
        let f = &mut self.facts;
        f.open_rows += 1;
        if state == "failed" {
            f.failed += 1;
        }
        if let Some((e, code)) = error {
            let rank = (state == "failed", id);
            if f.last_error.is_none() || rank > self.last_error_rank {
                f.last_error = Some(e);
                f.error_code = code;
                self.last_error_rank = rank;
            }
        }
        if state == "pending" {
            f.next_attempt_at = match (f.next_attempt_at, next_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    }
}

impl Store {
    /// The projects (prefixes) of the tasks held here.
    pub fn projects_in_use(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT DISTINCT project FROM tasks")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Whether an earlier key held here, or an imported task's key from its tracker, has
    /// `prefix` (upper-case; the tasks' own projects are [`Store::projects_in_use`]).
    pub fn holds_prefix(&self, prefix: &str) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM tasks WHERE origin_key LIKE ?1 || '-%')
                     OR EXISTS (SELECT 1 FROM tasks t, json_each(t.previous_keys) k
                                WHERE k.value LIKE ?1 || '-%')",
            )?
            .query_row([prefix], |r| r.get(0))?)
    }

    /// The tasks linked to the commit `hash` (a full hash).
    pub fn tasks_with_commit(&self, hash: &str) -> Result<Vec<uuid::Uuid>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT DISTINCT t.uuid FROM tasks t, json_each(t.commits) c
             WHERE json_extract(c.value, '$.hash') = ?1",
        )?;
        let rows = stmt.query_map([hash], |r| r.get::<_, String>(0))?;
        let mut out = Vec::new();
        for u in rows {
            if let Ok(u) = uuid::Uuid::parse_str(&u?) {
                out.push(u);
            }
        }
        Ok(out)
    }

    /// Tasks in capture order (pending only unless `filter.all`), narrowed by the filter, each
    /// with its sync state. Both reads happen in one read transaction, so the facts match the
    /// tasks even while another process writes.
    pub fn list(&self, filter: &TaskQuery) -> Result<Vec<LocalTask>> {
        let tx = self.conn.unchecked_transaction()?;
        let mut open: HashMap<String, Open> = HashMap::new();
        {
            // The open states by name (the CHECK allows no others), so the search runs on
            // `outbox_by_state` and skips the done rows, which grow with the store's history.
            let mut stmt = tx.prepare_cached(
                "SELECT uuid, id, state, last_error, next_attempt_at, error_code FROM outbox
                 WHERE state IN ('pending', 'in_progress', 'failed')",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let state = r.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
                let last_error: Option<String> = r.get(3)?;
                let error = last_error.map(|e| Ok::<_, rusqlite::Error>((e, r.get(5)?)));
                let (id, next_at) = (r.get(1)?, r.get(4)?);
                open.entry(r.get(0)?)
                    .or_default()
                    .add(id, state, error.transpose()?, next_at);
            }
        }
        // Subtask counts per parent: (all, pending).
        let mut children: HashMap<String, (u32, u32)> = HashMap::new();
        {
            let mut stmt = tx.prepare_cached(
                "SELECT parent, COUNT(*), SUM(status = 'pending') FROM tasks
                 WHERE parent IS NOT NULL GROUP BY parent",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let counts = (r.get::<_, i64>(1)? as u32, r.get::<_, i64>(2)? as u32);
                children.insert(r.get(0)?, counts);
            }
        }
        let mut held = held_by(&tx, None)?;
        let sql = format!(
            "SELECT {TASK_COLUMNS} FROM tasks t
             WHERE (?1 OR t.status = 'pending') AND (?2 IS NULL OR t.project = upper(?2))
                AND (?3 IS NULL OR instr(lower(t.description || ' ' || t.notes || ' '
                    || coalesce(t.key, '') || ' ' || coalesce(t.origin_key, '')), lower(?3)) > 0)
                AND (?4 IS NULL OR t.parent = ?4)
             ORDER BY t.created_at, t.rowid"
        );
        let mut stmt = tx.prepare_cached(&sql)?;
        let mut rows = stmt.query(params![
            filter.all,
            filter.project,
            filter.text,
            filter.parent.map(|p| p.to_string())
        ])?;
        let mut tasks = Vec::new();
        while let Some(r) = rows.next()? {
            let uuid = r.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
            let facts = open.remove(uuid).map(|o| o.facts).unwrap_or_default();
            let (all, pending) = children.remove(uuid).unwrap_or_default();
            let mut task = with_facts(task_row(r)?, facts);
            (task.children, task.open_children) = (all, pending);
            task.held_by = held.remove(&task.uuid);
            tasks.push(task);
        }
        Ok(tasks)
    }
}
