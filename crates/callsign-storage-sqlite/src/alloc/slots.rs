//! Idempotency slots, task reservations, counters and keys: the SQL of the key protocol.
//!
//! Invariant (G2): a number comes from [`bump_counter`] only inside the transaction that also
//! calls [`insert_key`] and [`commit_slot`]; the callers (`protocol::commit_create`, and
//! `protocol::commit_update` for a move) guarantee it.
use rusqlite::{params, Connection, OptionalExtension, Row};
use uuid::Uuid;

use super::{AccountId, DbError, Result};
pub use callsign_storage::rows::{child_scope, KeyRow, Slot, SlotState};

/// The columns [`slot_from_row`] reads, as a literal so the queries below are constants (no
/// `format!` on the writer's path).
macro_rules! slot_cols {
    () => {
        "id, account_id, idem_key, fingerprint, op, task_uuid, request, state, \
         response_status, response_body, attempts, created_at"
    };
}

fn slot_from_row(r: &Row<'_>) -> rusqlite::Result<Slot> {
    let state: String = r.get(7)?;
    Ok(Slot {
        id: r.get(0)?,
        account_id: r.get(1)?,
        idem_key: r.get(2)?,
        fingerprint: r.get(3)?,
        op: r.get(4)?,
        task_uuid: r.get(5)?,
        request: r.get(6)?,
        state: SlotState::parse(&state),
        response_status: r.get(8)?,
        response_body: r.get(9)?,
        attempts: r.get(10)?,
        created_at: r.get(11)?,
    })
}

pub fn get_slot(conn: &Connection, account: AccountId, idem: &str) -> Result<Option<Slot>> {
    const SQL: &str = concat!(
        "SELECT ",
        slot_cols!(),
        " FROM slots WHERE account_id = ?1 AND idem_key = ?2"
    );
    Ok(conn
        .prepare_cached(SQL)?
        .query_row(params![account, idem], slot_from_row)
        .optional()?)
}

/// The slot of `(account, idem)`, read by the row id phase 1 found or made it at; by the key
/// if that row no longer holds this slot.
pub fn get_slot_at(
    conn: &Connection,
    account: AccountId,
    idem: &str,
    id: i64,
) -> Result<Option<Slot>> {
    const SQL: &str = concat!("SELECT ", slot_cols!(), " FROM slots WHERE id = ?1");
    let slot = conn
        .prepare_cached(SQL)?
        .query_row([id], slot_from_row)
        .optional()?;
    match slot.filter(|s| s.account_id == account && s.idem_key == idem) {
        Some(slot) => Ok(Some(slot)),
        None => get_slot(conn, account, idem),
    }
}

/// Records another attempt with this key (for the retry-span metric).
pub fn touch_slot(conn: &Connection, account: AccountId, idem: &str, now: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE slots SET attempts = attempts + 1, last_seen_at = ?3
         WHERE account_id = ?1 AND idem_key = ?2",
    )?
    .execute(params![account, idem, now])?;
    Ok(())
}

pub fn delete_slot(conn: &Connection, account: AccountId, idem: &str) -> Result<()> {
    conn.execute(
        "DELETE FROM slots WHERE account_id = ?1 AND idem_key = ?2",
        params![account, idem],
    )?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub fn insert_pending_slot(
    conn: &Connection,
    account: AccountId,
    idem: &str,
    fingerprint: &[u8],
    op: &str,
    uuid: Uuid,
    request: &str,
    now: i64,
) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO slots (account_id, idem_key, fingerprint, op, task_uuid, request, state,
                            created_at, last_seen_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?7)",
    )?
    .execute(params![account, idem, fingerprint, op, uuid, request, now])?;
    Ok(conn.last_insert_rowid())
}

/// Marks the pending slot with row id `id` (from [`Slot::id`]) committed with its response.
/// Returns false if it was not pending.
pub fn commit_slot(
    conn: &Connection,
    id: i64,
    number: Option<i64>,
    status: u16,
    body: &str,
    now: i64,
) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE slots SET state = 'committed', number = ?2, response_status = ?3,
                              response_body = ?4, settled_at = ?5
             WHERE id = ?1 AND state = 'pending'",
        )?
        .execute(params![id, number, status, body, now])?;
    Ok(n == 1)
}

pub fn fail_slot(conn: &Connection, account: AccountId, idem: &str, now: i64) -> Result<bool> {
    let n = conn.execute(
        "UPDATE slots SET state = 'failed', settled_at = ?3
         WHERE account_id = ?1 AND idem_key = ?2 AND state = 'pending'",
        params![account, idem, now],
    )?;
    Ok(n == 1)
}

/// The reservation of a task UUID: (project id, fingerprint of the creating request).
pub fn task_row(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
) -> Result<Option<(i64, Vec<u8>)>> {
    Ok(conn
        .prepare_cached(
            "SELECT project_id, fingerprint FROM tasks WHERE account_id = ?1 AND uuid = ?2",
        )?
        .query_row(params![account, uuid], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// The parent a task was reserved under, if it is a subtask.
pub fn parent_of(conn: &Connection, account: AccountId, uuid: Uuid) -> Result<Option<Uuid>> {
    Ok(conn
        .prepare_cached("SELECT parent_uuid FROM tasks WHERE account_id = ?1 AND uuid = ?2")?
        .query_row(params![account, uuid], |r| r.get(0))
        .optional()?
        .flatten())
}

/// The subtasks reserved under `parent`, in reservation order.
pub fn children_of(conn: &Connection, account: AccountId, parent: Uuid) -> Result<Vec<Uuid>> {
    let mut st = conn.prepare_cached(
        "SELECT uuid FROM tasks WHERE account_id = ?1 AND parent_uuid = ?2 ORDER BY created_at",
    )?;
    let rows = st.query_map(params![account, parent], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn insert_task_row(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
    project: i64,
    parent: Option<Uuid>,
    fingerprint: &[u8],
    now: i64,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO tasks (account_id, uuid, project_id, parent_uuid, fingerprint, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![account, uuid, project, parent, fingerprint, now])?;
    Ok(())
}

/// Drops a reservation that never got a number and that no pending slot still needs.
pub fn release_task_row(conn: &Connection, account: AccountId, uuid: Uuid) -> Result<()> {
    conn.execute(
        "DELETE FROM tasks WHERE account_id = ?1 AND uuid = ?2
           AND NOT EXISTS (SELECT 1 FROM keys WHERE account_id = ?1 AND task_uuid = ?2)
           AND NOT EXISTS (SELECT 1 FROM slots WHERE account_id = ?1 AND task_uuid = ?2
                                                 AND state = 'pending')",
        params![account, uuid],
    )?;
    Ok(())
}

pub fn current_key(conn: &Connection, account: AccountId, uuid: Uuid) -> Result<Option<KeyRow>> {
    Ok(conn
        .prepare_cached(
            "SELECT k.project_id, p.prefix, k.number, k.scope
             FROM keys k JOIN projects p ON p.id = k.project_id
             WHERE k.account_id = ?1 AND k.task_uuid = ?2 AND k.current = 1",
        )?
        .query_row(params![account, uuid], |r| {
            Ok(KeyRow {
                project_id: r.get(0)?,
                prefix: r.get(1)?,
                number: r.get(2)?,
                scope: r.get(3)?,
            })
        })
        .optional()?)
}

/// A task's current key and the keys it had before it, oldest first: one read of its rows.
/// A key row's names are its project's prefixes of the epochs it was in force (a rename gives
/// a current row a new name; the one before stays a previous key).
pub fn keys_of(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
) -> Result<(Option<KeyRow>, Vec<String>)> {
    let mut st = conn.prepare_cached(
        "SELECT k.project_id, h.prefix, k.number, k.scope, k.current AND h.epoch = p.epoch
         FROM keys k JOIN projects p ON p.id = k.project_id
         JOIN prefix_epochs h ON h.project_id = k.project_id AND h.epoch >= k.epoch
                             AND h.epoch <= COALESCE(k.until_epoch, p.epoch)
         WHERE k.account_id = ?1 AND k.task_uuid = ?2
         ORDER BY k.assigned_at, k.rowid, h.epoch",
    )?;
    let rows = st.query_map(params![account, uuid], |r| {
        let key = KeyRow {
            project_id: r.get(0)?,
            prefix: r.get(1)?,
            number: r.get(2)?,
            scope: r.get(3)?,
        };
        Ok((key, r.get::<_, bool>(4)?))
    })?;
    let (mut current, mut previous) = (None, Vec::new());
    for row in rows {
        match row? {
            (key, true) => current = Some(key),
            (key, false) => previous.push(key.key()),
        }
    }
    // A project that took back an earlier prefix names a row by it twice.
    let now = current.as_ref().map(KeyRow::key);
    let mut seen = std::collections::HashSet::new();
    previous.retain(|k| Some(k) != now.as_ref() && seen.insert(k.clone()));
    Ok((current, previous))
}

/// The id of the project a prefix names (its current prefix or an earlier one).
pub fn project_id(conn: &Connection, account: AccountId, prefix: &str) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT project_id FROM prefixes WHERE account_id = ?1 AND prefix = ?2")?
        .query_row(params![account, prefix], |r| r.get(0))
        .optional()?)
}

/// Gives a task a new current key, `number` in `(project, scope)`; its old one stays, no longer
/// current. Only call it in the transaction that bumped the counter.
pub fn rekey(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
    (project, scope, number): (i64, &str, i64),
    now: i64,
) -> Result<()> {
    retire_current(conn, account, uuid)?;
    insert_key(conn, account, project, scope, number, uuid, now)?;
    set_task_project(conn, account, uuid, project)
}

/// Makes the current key of `uuid` an earlier one, in force until its project's present epoch.
fn retire_current(conn: &Connection, account: AccountId, uuid: Uuid) -> Result<()> {
    conn.prepare_cached(
        "UPDATE keys SET current = 0,
                         until_epoch = (SELECT epoch FROM projects WHERE id = keys.project_id)
         WHERE account_id = ?1 AND task_uuid = ?2 AND current = 1",
    )?
    .execute(params![account, uuid])?;
    Ok(())
}

/// The number of the key `uuid` holds in `(project, scope)` that was bound after its current
/// key, if any. Only a witness binds such a key: it is the key of a move the server lost to a
/// rollback, which the devices brought back (docs/RECOVERY.md).
pub fn lost_move_key(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
    project: i64,
    scope: &str,
) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT e.number FROM keys e
             JOIN keys c ON c.account_id = e.account_id AND c.task_uuid = e.task_uuid
                        AND c.current = 1
             WHERE e.account_id = ?1 AND e.task_uuid = ?2 AND e.project_id = ?3
               AND e.scope = ?4 AND e.current = 0 AND e.assigned_at > c.assigned_at
             ORDER BY e.assigned_at DESC, e.number DESC LIMIT 1",
        )?
        .query_row(params![account, uuid, project, scope], |r| r.get(0))
        .optional()?)
}

/// Makes `number` in `(project, scope)`, an earlier key of `uuid`, its current key again
/// (it takes no number: the task holds it already). The key is to be written onto the task.
pub fn take_back(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
    (project, scope, number): (i64, &str, i64),
    now: i64,
) -> Result<()> {
    retire_current(conn, account, uuid)?;
    conn.prepare_cached(
        "UPDATE keys SET current = 1, until_epoch = NULL, in_store = 0, assigned_at = ?6
         WHERE account_id = ?1 AND project_id = ?2 AND scope = ?3 AND number = ?4
           AND task_uuid = ?5",
    )?
    .execute(params![account, project, scope, number, uuid, now])?;
    set_task_project(conn, account, uuid, project)
}

/// Puts a reserved task in another project (a subtask follows its parent).
pub fn set_task_project(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
    project: i64,
) -> Result<()> {
    conn.prepare_cached("UPDATE tasks SET project_id = ?3 WHERE account_id = ?1 AND uuid = ?2")?
        .execute(params![account, uuid, project])?;
    Ok(())
}

/// Takes the next number of `(project, scope)`. Only call it in the transaction that binds
/// the number (see the module doc).
pub fn bump_counter(conn: &Connection, project: i64, scope: &str) -> Result<i64> {
    // A recovering project numbers nothing (docs/RECOVERY.md): its counter may be behind keys
    // the devices hold. The error rolls back this item's savepoint; its slot stays pending.
    if let Some(prefix) = super::recovery::recovering_prefix(conn, project)? {
        return Err(DbError::Recovering(prefix));
    }
    Ok(conn
        .prepare_cached(
            "INSERT INTO counters (project_id, scope, last) VALUES (?1, ?2, 1)
             ON CONFLICT (project_id, scope) DO UPDATE SET last = last + 1
             RETURNING last",
        )?
        .query_row(params![project, scope], |r| r.get(0))?)
}

/// Inserts a current key, in force from its project's present epoch (prefix) on.
pub fn insert_key(
    conn: &Connection,
    account: AccountId,
    project: i64,
    scope: &str,
    number: i64,
    uuid: Uuid,
    now: i64,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO keys (account_id, project_id, scope, number, task_uuid, assigned_at, epoch)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, (SELECT epoch FROM projects WHERE id = ?2))",
    )?
    .execute(params![account, project, scope, number, uuid, now])?;
    Ok(())
}

/// Resolves `PREFIX-N` in an account: `Err(false)` for a prefix no project has or had,
/// `Err(true)` for an unknown number. Keys that are no longer current still name their task
/// (G1), each by the prefixes its project had while it was in force: after SYN became SYX,
/// SYN-1 and SYX-1 name the task numbered 1 before the rename, SYN-2 names nothing if 2 came
/// after it.
pub fn uuid_for_key(
    conn: &Connection,
    account: AccountId,
    prefix: &str,
    scope: &str,
    number: i64,
) -> Result<std::result::Result<Uuid, bool>> {
    let Some(project) = project_id(conn, account, prefix)? else {
        return Ok(Err(false));
    };
    let uuid = conn
        .prepare_cached(
            "SELECT k.task_uuid FROM keys k JOIN projects p ON p.id = k.project_id
             WHERE k.account_id = ?1 AND k.project_id = ?2 AND k.scope = ?3 AND k.number = ?4
               AND EXISTS (SELECT 1 FROM prefix_epochs h
                           WHERE h.project_id = k.project_id AND h.prefix = ?5
                             AND h.epoch >= k.epoch
                             AND h.epoch <= COALESCE(k.until_epoch, p.epoch))",
        )?
        .query_row(params![account, project, scope, number, prefix], |r| {
            r.get(0)
        })
        .optional()?;
    Ok(uuid.ok_or(true))
}

/// Pending slots created before `before`, oldest first.
pub fn pending_slots(conn: &Connection, before: i64, limit: usize) -> Result<Vec<Slot>> {
    const SQL: &str = concat!(
        "SELECT ",
        slot_cols!(),
        " FROM slots WHERE state = 'pending' AND created_at < ?1 ORDER BY created_at LIMIT ?2"
    );
    let mut st = conn.prepare_cached(SQL)?;
    let rows = st.query_map(params![before, limit as i64], slot_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Committed keys not yet confirmed written onto the TaskChampion task.
pub fn keys_not_in_store(
    conn: &Connection,
    before: i64,
    limit: usize,
) -> Result<Vec<(AccountId, Uuid, String)>> {
    let mut st = conn.prepare_cached(
        "SELECT k.account_id, k.task_uuid, k.project_id, p.prefix, k.scope, k.number
         FROM keys k JOIN projects p ON p.id = k.project_id
         WHERE k.in_store = 0 AND k.current = 1 AND k.assigned_at < ?1
         ORDER BY k.assigned_at LIMIT ?2",
    )?;
    let rows = st.query_map(params![before, limit as i64], |r| {
        let key = KeyRow {
            project_id: r.get(2)?,
            prefix: r.get(3)?,
            scope: r.get(4)?,
            number: r.get(5)?,
        };
        Ok((r.get(0)?, r.get(1)?, key.key()))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Records that `key` was written onto the task: `in_store` is set if it is still the task's
/// current key, and cleared if not (a move or rename since made the write stale, and the
/// task store may now hold the older key: the reaper writes the current one).
pub fn mark_in_store(conn: &Connection, account: AccountId, uuid: Uuid, key: &str) -> Result<()> {
    // `in_store` flips where it differs from "the key written is the current one".
    conn.prepare_cached(
        "UPDATE keys SET in_store = 1 - in_store
         WHERE account_id = ?1 AND task_uuid = ?2 AND current = 1
           AND in_store <> (((SELECT prefix FROM projects WHERE id = keys.project_id) || '-'
                             || CASE WHEN scope = '' THEN '' ELSE scope || '.' END
                             || number) = ?3)",
    )?
    .execute(params![account, uuid, key])?;
    Ok(())
}

/// How long clients kept retrying, in ms (slot creation to last attempt), for slots seen more
/// than once and created after `since`; sorted ascending.
pub fn retry_spans(conn: &Connection, since: i64) -> Result<Vec<i64>> {
    let mut st = conn.prepare_cached(
        "SELECT last_seen_at - created_at AS span FROM slots
         WHERE attempts > 1 AND created_at >= ?1
         UNION ALL
         SELECT span_ms FROM purged_slots WHERE span_ms IS NOT NULL AND created_at >= ?1
         ORDER BY 1",
    )?;
    let rows = st.query_map([since], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Purges up to `limit` settled (committed or failed) slots made before `before`, oldest first,
/// leaving for each a line in `purged_slots` (when it was made, its retry span). A replay of a
/// purged key is then a new request: a create finds its task by UUID and keeps its key; the
/// tombstone makes the retry count as late evidence for the window. Returns how many went.
pub fn purge_settled(conn: &Connection, before: i64, limit: usize, now: i64) -> Result<usize> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO purged_slots (account_id, idem_key, created_at, span_ms, purged_at)
         SELECT account_id, idem_key, created_at,
                CASE WHEN attempts > 1 THEN last_seen_at - created_at END, ?3
         FROM slots WHERE state <> 'pending' AND created_at < ?1 ORDER BY id LIMIT ?2",
    )?
    .execute(params![before, limit as i64, now])?;
    Ok(conn
        .prepare_cached(
            "DELETE FROM slots WHERE id IN (SELECT id FROM slots
             WHERE state <> 'pending' AND created_at < ?1 ORDER BY id LIMIT ?2)",
        )?
        .execute(params![before, limit as i64])?)
}

/// When the purged slot of `(account, idem)` was made, if there is one; the tombstone goes
/// (the key starts a new slot).
pub fn take_purged(conn: &Connection, account: AccountId, idem: &str) -> Result<Option<i64>> {
    let at: Option<i64> = conn
        .prepare_cached(
            "DELETE FROM purged_slots WHERE account_id = ?1 AND idem_key = ?2 RETURNING created_at",
        )?
        .query_row(params![account, idem], |r| r.get(0))
        .optional()?;
    Ok(at)
}

/// Drops tombstones purged before `before` (past the evidence period); returns how many.
pub fn forget_purged(conn: &Connection, before: i64, limit: usize) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "DELETE FROM purged_slots WHERE (account_id, idem_key) IN (SELECT account_id,
             idem_key FROM purged_slots WHERE purged_at < ?1 LIMIT ?2)",
        )?
        .execute(params![before, limit as i64])?)
}
