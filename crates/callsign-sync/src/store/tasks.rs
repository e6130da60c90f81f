//! Task rows: how one is read (its columns, a row as a task), lookup. Local create and edit
//! (each one transaction with its outbox row) are in `edit`; listing many tasks is in `listing`.
use std::collections::HashMap;

use callsign_core::dto::{Origin, TaskStatus};
use callsign_core::{Priority, TaskKey, TaskRef};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension, Row};
use uuid::Uuid;

#[cfg(test)]
use super::types::TaskQuery;
use super::Store;
use crate::error::{Error, Result};
use crate::model::{LocalTask, SyncState};

/// The task columns, in the order [`task_row`] reads them: a macro, so [`SELECT`] is built from
/// the very same list at compile time.
macro_rules! task_columns {
    () => {
        "t.uuid, t.key, t.project, t.number, t.description, t.notes, t.status, t.tags,
        t.created_at, t.modified_at, t.due, t.priority, t.parent, t.previous_keys, t.conflicts,
        t.created_by, t.assignee, t.origin, t.commits"
    };
}

/// The task columns, in the order [`task_row`] reads them.
pub(super) const TASK_COLUMNS: &str = task_columns!();
/// How many there are: [`map_task`]'s further columns come after them.
const N_TASK_COLUMNS: usize = 19;

/// One task with its outbox facts computed for it alone (the 5 columns after
/// [`TASK_COLUMNS`], for [`map_task`]) and its subtask counts (the 2 after those): for a lookup.
/// A listing computes the same facts for every task in one pass ([`super::listing`]).
const SELECT: &str = concat!(
    "SELECT ",
    task_columns!(),
    ",
    (SELECT COUNT(*) FROM outbox o WHERE o.uuid = t.uuid AND o.state <> 'done'),
    (SELECT COUNT(*) FROM outbox o WHERE o.uuid = t.uuid AND o.state = 'failed'),
    (SELECT o.last_error FROM outbox o WHERE o.uuid = t.uuid AND o.state <> 'done'
        AND o.last_error IS NOT NULL ORDER BY o.state = 'failed' DESC, o.id DESC LIMIT 1),
    (SELECT MIN(o.next_attempt_at) FROM outbox o WHERE o.uuid = t.uuid AND o.state = 'pending'),
    (SELECT o.error_code FROM outbox o WHERE o.uuid = t.uuid AND o.state <> 'done'
        AND o.last_error IS NOT NULL ORDER BY o.state = 'failed' DESC, o.id DESC LIMIT 1),
    (SELECT COUNT(*) FROM tasks c WHERE c.parent = t.uuid),
    (SELECT COUNT(*) FROM tasks c WHERE c.parent = t.uuid AND c.status = 'pending')
    FROM tasks t"
);

/// What a task's open (not done) outbox rows say about it: the input of its sync state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct OutboxFacts {
    /// Rows not yet done (pending, in progress or failed).
    pub open_rows: u32,
    /// Of those, the failed ones.
    pub failed: u32,
    /// The error of the newest (highest id) failed row that has one, else of the newest open
    /// row that has one: a failed task explains its failure, not a later row's retry.
    pub last_error: Option<String>,
    /// The earliest `next_attempt_at` of the pending rows.
    pub next_attempt_at: Option<i64>,
    /// The server's error code on the row `last_error` comes from.
    pub error_code: Option<String>,
}

/// A task row with its outbox facts: first [`TASK_COLUMNS`], then the facts in
/// [`OutboxFacts`] order, then the subtask counts (all and pending), as [`SELECT`] reads them.
fn map_task(r: &Row<'_>) -> rusqlite::Result<LocalTask> {
    const F: usize = N_TASK_COLUMNS;
    let facts = OutboxFacts {
        open_rows: r.get::<_, i64>(F)? as u32,
        failed: r.get::<_, i64>(F + 1)? as u32,
        last_error: r.get(F + 2)?,
        next_attempt_at: r.get(F + 3)?,
        error_code: r.get(F + 4)?,
    };
    let mut task = with_facts(task_row(r)?, facts);
    task.children = r.get::<_, i64>(F + 5)? as u32;
    task.open_children = r.get::<_, i64>(F + 6)? as u32;
    Ok(task)
}

/// The `origin` and `origin_key` columns for a task's origin: its JSON, and its key as
/// [`Origin::normal_key`] writes it (what [`Store::find`] looks an origin key up by).
pub(super) fn origin_columns(origin: Option<&Origin>) -> (Option<String>, Option<String>) {
    let json = origin.and_then(|o| serde_json::to_string(o).ok());
    let key = origin
        .and_then(|o| o.key.as_deref())
        .map(Origin::normal_key);
    (json, key)
}

impl Store {
    /// Every task that has a key here, parents before their subtasks: what this device brings
    /// back after the server was rolled back (docs/RECOVERY.md).
    pub fn keyed_tasks(&self) -> Result<Vec<LocalTask>> {
        let sql = format!(
            "SELECT {TASK_COLUMNS} FROM tasks t WHERE t.key IS NOT NULL
             ORDER BY length(t.key) - length(replace(t.key, '.', '')), t.key"
        );
        let mut st = self.conn.prepare(&sql)?;
        let rows = st.query_map([], task_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

/// The [`TASK_COLUMNS`] of a row, as a task with nothing open in the outbox.
pub(super) fn task_row(r: &Row<'_>) -> rusqlite::Result<LocalTask> {
    let text = |i: usize| r.get::<_, String>(i);
    let bad = |i: usize, e: String| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, e.into())
    };
    let parse = |i: usize, t: &str| {
        DateTime::parse_from_rfc3339(t)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| bad(i, e.to_string()))
    };
    let time = |i: usize| parse(i, &text(i)?);
    let due = r
        .get::<_, Option<String>>(10)?
        .map(|t| parse(10, &t))
        .transpose()?;
    let priority = r
        .get::<_, Option<String>>(11)?
        .map(|p| Priority::parse(&p).map_err(|e| bad(11, e.to_string())))
        .transpose()?;
    let key: Option<String> = r.get(1)?;
    let parent = r
        .get::<_, Option<String>>(12)?
        .map(|p| Uuid::parse_str(&p).map_err(|e| bad(12, e.to_string())))
        .transpose()?;
    let origin = r
        .get::<_, Option<String>>(17)?
        .map(|o| serde_json::from_str(&o).map_err(|e| bad(17, e.to_string())))
        .transpose()?;
    Ok(LocalTask {
        uuid: Uuid::parse_str(&text(0)?).map_err(|e| bad(0, e.to_string()))?,
        sync_state: SyncState::Synced,
        key,
        project: text(2)?,
        number: r.get::<_, Option<i64>>(3)?.map(|n| n as u64),
        description: text(4)?,
        notes: text(5)?,
        status: TaskStatus::parse(&text(6)?).ok_or_else(|| bad(6, "status".into()))?,
        tags: serde_json::from_str(&text(7)?).map_err(|e| bad(7, e.to_string()))?,
        due,
        priority,
        parent,
        previous_keys: serde_json::from_str(&text(13)?).map_err(|e| bad(13, e.to_string()))?,
        conflicts: serde_json::from_str(&text(14)?).map_err(|e| bad(14, e.to_string()))?,
        created_by: r.get(15)?,
        assignee: r.get(16)?,
        origin,
        commits: serde_json::from_str(&text(18)?).map_err(|e| bad(18, e.to_string()))?,
        children: 0,
        open_children: 0,
        held_by: None,
        created_at: time(8)?,
        modified_at: time(9)?,
        open_rows: 0,
        last_error: None,
        error_code: None,
        next_attempt_at: None,
    })
}

/// The task with its outbox facts and the sync state they make: failed if any open row failed,
/// else provisional until it has a key, else synced.
pub(super) fn with_facts(mut task: LocalTask, facts: OutboxFacts) -> LocalTask {
    task.sync_state = match (facts.failed, &task.key) {
        (1.., _) => SyncState::Failed,
        (_, None) => SyncState::Provisional,
        (_, Some(_)) => SyncState::Synced,
    };
    task.open_rows = facts.open_rows;
    task.last_error = facts.last_error;
    task.error_code = facts.error_code;
    task.next_attempt_at = facts.next_attempt_at;
    task
}

/// The provisional subtasks a refused ancestor holds back (an ancestor without a key whose create
/// failed), each with one such ancestor: every such subtask, or only `?1`'s.
const HELD_BY: &str = "WITH RECURSIVE up(child, anc) AS (
        SELECT uuid, parent FROM tasks WHERE parent IS NOT NULL AND key IS NULL
            AND (?1 IS NULL OR uuid = ?1)
        UNION ALL
        SELECT up.child, t.parent FROM up JOIN tasks t ON t.uuid = up.anc
            WHERE t.parent IS NOT NULL AND t.key IS NULL)
    SELECT up.child, up.anc FROM up WHERE EXISTS (SELECT 1 FROM outbox o
        WHERE o.uuid = up.anc AND o.op = 'create' AND o.state = 'failed')";

/// [`HELD_BY`] as a map from subtask to the holding ancestor's label (its provisional short id).
pub(super) fn held_by(
    conn: &rusqlite::Connection,
    only: Option<Uuid>,
) -> Result<HashMap<Uuid, String>> {
    let mut stmt = conn.prepare_cached(HELD_BY)?;
    let mut rows = stmt.query([only.map(|u| u.to_string())])?;
    let mut out = HashMap::new();
    while let Some(r) = rows.next()? {
        let (child, anc): (String, String) = (r.get(0)?, r.get(1)?);
        if let (Ok(child), Ok(anc)) = (Uuid::parse_str(&child), Uuid::parse_str(&anc)) {
            out.entry(child)
                .or_insert_with(|| format!("~{}", &anc.simple().to_string()[..8]));
        }
    }
    Ok(out)
}

pub(crate) fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The task row of `uuid` as the transaction sees it (no outbox facts), or `NotFound`.
pub(super) fn task_in(tx: &rusqlite::Transaction<'_>, uuid: Uuid) -> Result<LocalTask> {
    let u = uuid.to_string();
    tx.query_row(
        &format!("SELECT {TASK_COLUMNS} FROM tasks t WHERE t.uuid = ?1"),
        [&u],
        task_row,
    )
    .optional()?
    .ok_or(Error::NotFound(u))
}

/// `uuids` as a JSON array, for `json_each(?)`: a whole set in one bound parameter.
pub(super) fn uuid_array(uuids: impl IntoIterator<Item = Uuid>) -> String {
    let all: Vec<String> = uuids.into_iter().map(|u| u.to_string()).collect();
    serde_json::to_string(&all).unwrap_or_else(|_| "[]".into())
}

impl Store {
    pub fn task(&self, uuid: Uuid) -> Result<Option<LocalTask>> {
        // Cached: an import's progress reads every one of its tasks.
        let sql = format!("{SELECT} WHERE t.uuid = ?1");
        self.conn
            .prepare_cached(&sql)?
            .query_row([uuid.to_string()], map_task)
            .optional()?
            .map(|t| self.with_held(t))
            .transpose()
    }

    /// The parents and subtasks of `uuids` that are not among them: the tasks whose view a
    /// change to `uuids` also changes (a parent's subtask counts, a subtask's held state).
    /// One statement; nothing to read when this device has no subtask.
    pub fn related(&self, uuids: &[Uuid]) -> Result<Vec<Uuid>> {
        if uuids.is_empty() || !self.has_subtasks()? {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT t.parent FROM json_each(?1) j JOIN tasks t ON t.uuid = j.value
                WHERE t.parent IS NOT NULL
             UNION
             SELECT c.uuid FROM json_each(?1) j JOIN tasks c ON c.parent = j.value",
        )?;
        let found = stmt
            .query_map([uuid_array(uuids.iter().copied())], |r| {
                r.get::<_, String>(0)
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let given: std::collections::HashSet<&Uuid> = uuids.iter().collect();
        Ok(found
            .iter()
            .filter_map(|u| Uuid::parse_str(u).ok())
            .filter(|u| !given.contains(u))
            .collect())
    }

    /// The task with [`LocalTask::held_by`] filled in (a lookup reads it for the one task).
    fn with_held(&self, mut task: LocalTask) -> Result<LocalTask> {
        if task.parent.is_some() && task.key.is_none() {
            task.held_by = held_by(&self.conn, Some(task.uuid))?.remove(&task.uuid);
        }
        Ok(task)
    }

    /// Resolves, in this order: a UUID; a key (lenient: `syn 42`) the task has, or had (a
    /// moved task keeps naming itself by its old keys); a unique UUID prefix of at least 8 hex
    /// digits (a leading `~`, as in the provisional short id, is accepted); an imported task's
    /// origin key, any case (`ENG-42`, `#12`), even one whose prefix is no project here, and
    /// while the task is still provisional. A key a task has or had wins over an origin key,
    /// so a task numbered `ENG-42` here is `ENG-42` whatever was imported as `ENG-42`.
    pub fn find(&self, input: &str) -> Result<LocalTask> {
        match TaskRef::parse(input) {
            Ok(TaskRef::Uuid(u)) => {
                return self
                    .task(u)?
                    .ok_or_else(|| Error::NotFound(input.to_owned()))
            }
            Ok(TaskRef::Key(k)) => {
                if let Some(t) = self.by_key(&k)? {
                    return Ok(t);
                }
            }
            // Not Callsign's grammar (`#12`): it may still be an origin key.
            Err(_) => {}
        }
        if let Some(t) = self.by_short_id(input)? {
            return Ok(t);
        }
        self.by_origin_key(input)?
            .ok_or_else(|| Error::NotFound(input.to_owned()))
    }

    /// The one task whose UUID starts with these hex digits (at least 8, `~` and dashes
    /// allowed); none for input that is not such a prefix.
    fn by_short_id(&self, input: &str) -> Result<Option<LocalTask>> {
        let hex: String = input.trim().trim_start_matches('~').replace('-', "");
        if hex.len() < 8 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let sql = format!("{SELECT} WHERE replace(t.uuid, '-', '') LIKE ?1 || '%' LIMIT 2");
        let mut stmt = self.conn.prepare(&sql)?;
        let found: Vec<LocalTask> = stmt
            .query_map([hex.to_ascii_lowercase()], map_task)?
            .collect::<rusqlite::Result<_>>()?;
        self.one_of(found, input)
    }

    /// The imported task whose origin key this is (as [`Origin::normal_key`] writes it).
    fn by_origin_key(&self, input: &str) -> Result<Option<LocalTask>> {
        let key = Origin::normal_key(input);
        if key.is_empty() {
            return Ok(None);
        }
        let sql = format!("{SELECT} WHERE t.origin_key = ?1 LIMIT 2");
        let found: Vec<LocalTask> = self
            .conn
            .prepare_cached(&sql)?
            .query_map([key], map_task)?
            .collect::<rusqlite::Result<_>>()?;
        self.one_of(found, input)
    }

    /// The task a lookup found, none, or [`Error::Ambiguous`] for more than one.
    fn one_of(&self, found: Vec<LocalTask>, input: &str) -> Result<Option<LocalTask>> {
        let mut found = found.into_iter();
        match (found.next(), found.next()) {
            (None, _) => Ok(None),
            (Some(t), None) => self.with_held(t).map(Some),
            (Some(_), Some(_)) => Err(Error::Ambiguous(input.to_owned())),
        }
    }

    /// One page of every task (any status), newest first (the reverse of capture order), each
    /// with its facts computed for it alone, and how many tasks there are in all; one read
    /// transaction. The desktop app paints its first screenful from the first page.
    pub fn page(&self, offset: usize, limit: usize) -> Result<(Vec<LocalTask>, u64)> {
        let tx = self.conn.unchecked_transaction()?;
        let sql = format!("{SELECT} ORDER BY t.created_at DESC, t.rowid DESC LIMIT ?1 OFFSET ?2");
        let tasks = tx
            .prepare_cached(&sql)?
            .query_map(params![limit as i64, offset as i64], map_task)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let tasks = tasks
            .into_iter()
            .map(|t| self.with_held(t))
            .collect::<Result<Vec<_>>>()?;
        let total: i64 = tx.query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get(0))?;
        Ok((tasks, total as u64))
    }

    /// The listing as it was before [`super::listing`]: every task's facts computed for it
    /// alone. The reference the one-pass listing is tested against.
    #[cfg(test)]
    pub(super) fn list_per_task(&self, filter: &TaskQuery) -> Result<Vec<LocalTask>> {
        let sql = format!(
            "{SELECT} WHERE (?1 OR t.status = 'pending') AND (?2 IS NULL OR t.project = upper(?2))
                AND (?3 IS NULL OR instr(lower(t.description || ' ' || t.notes || ' '
                    || coalesce(t.key, '') || ' ' || coalesce(t.origin_key, '')), lower(?3)) > 0)
                AND (?4 IS NULL OR t.parent = ?4)
             ORDER BY t.created_at, t.rowid"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let tasks = stmt
            .query_map(
                params![
                    filter.all,
                    filter.project,
                    filter.text,
                    filter.parent.map(|p| p.to_string())
                ],
                map_task,
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        tasks.into_iter().map(|t| self.with_held(t)).collect()
    }

    /// The task whose key this is, or was (a moved task keeps naming itself by old keys).
    fn by_key(&self, key: &TaskKey) -> Result<Option<LocalTask>> {
        let sql = format!("{SELECT} WHERE t.key = ?1");
        let found = self
            .conn
            .query_row(&sql, [key.to_string()], map_task)
            .optional()?;
        let found = match found {
            Some(t) => Some(t),
            None => {
                let sql = format!(
                    "{SELECT} WHERE t.previous_keys <> '[]' AND EXISTS
                        (SELECT 1 FROM json_each(t.previous_keys) j WHERE j.value = ?1)"
                );
                self.conn
                    .query_row(&sql, [key.to_string()], map_task)
                    .optional()?
            }
        };
        found.map(|t| self.with_held(t)).transpose()
    }
}
