//! Moves on PostgreSQL, inside phase 2's commit (the account row is locked, so nothing else
//! numbers in the account meanwhile): the same steps as SQLite's `move_tree`
//! (`callsign_storage_sqlite::alloc::protocol`), one statement each. The task takes the new
//! project's next number, each subtask (parents first, siblings by old number) the next number
//! under its parent's new key, and subtasks with no key yet only change project. Each old key
//! row stays, no longer current, with the epoch it was retired in (`until_epoch`), so it still
//! names its task by every prefix its project had while it was in force (`PREVIOUS_KEYS`).
//! Moves are rare; they do not take the batched path.
use std::collections::{HashMap, VecDeque};

use deadpool_postgres::{GenericClient, Transaction};
use tokio_postgres::Row;
use uuid::Uuid;

use super::current_key;
use crate::error::{DbError, Result};
use callsign_storage::{AccountId, KeyRow};

/// The id of the project a prefix names (its current prefix or an earlier one).
pub(super) async fn project_id(
    c: &impl GenericClient,
    account: AccountId,
    prefix: &str,
) -> Result<Option<i64>> {
    Ok(c.query_opt(
        "SELECT project_id FROM prefixes WHERE account_id = $1 AND prefix = $2",
        &[&account, &prefix],
    )
    .await?
    .map(|r| r.get(0)))
}

/// The keys tasks `$2` had before their current ones, oldest first (read by
/// [`previous_rows`]): each key row by every prefix its project had while it was in force
/// (`epoch ..= until_epoch`), but the current row by its present prefix. Keys a witness bound
/// together are in the order it bound them (`bound_rank`), before a key numbered with them.
pub(super) const PREVIOUS_KEYS: &str = "SELECT k.task_uuid, k.project_id, h.prefix, k.number,
            k.scope
     FROM keys k JOIN projects p ON p.id = k.project_id
     JOIN prefix_epochs h ON h.project_id = k.project_id AND h.epoch >= k.epoch
                         AND h.epoch <= COALESCE(k.until_epoch, p.epoch)
     WHERE k.account_id = $1 AND k.task_uuid = ANY($2)
       AND NOT (k.current AND h.prefix = p.prefix)
     ORDER BY k.assigned_at, k.bound_rank NULLS LAST, k.project_id, k.scope, k.number,
              h.epoch";

/// The keys each of `uuids` had before its current one, oldest first (tasks with none are
/// absent).
pub(super) async fn previous_keys(
    c: &impl GenericClient,
    account: AccountId,
    uuids: &[Uuid],
) -> Result<HashMap<Uuid, Vec<String>>> {
    let st = c.prepare_cached(PREVIOUS_KEYS).await?;
    Ok(previous_rows(&c.query(&st, &[&account, &uuids]).await?))
}

/// Rows of [`PREVIOUS_KEYS`], by task.
pub(super) fn previous_rows(rows: &[Row]) -> HashMap<Uuid, Vec<String>> {
    let mut out: HashMap<Uuid, Vec<String>> = HashMap::new();
    for r in rows {
        let key = KeyRow {
            project_id: r.get(1),
            prefix: r.get(2),
            number: r.get(3),
            scope: r.get(4),
        };
        // A project that took back an earlier prefix names a row by it twice.
        let keys = out.entry(r.get(0)).or_default();
        let key = key.key();
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    out
}

/// Gives `uuid` its key in `(project, scope)` as its current key; the old key stays. That is
/// the next number, or the key a move the server lost to a rollback had given it, when a device
/// brought that key back: a key the task holds there that was bound after its current one (only
/// a witness binds such a key, docs/RECOVERY.md). Taking it back takes no number.
async fn rekey(
    tx: &Transaction<'_>,
    account: AccountId,
    uuid: Uuid,
    project: i64,
    scope: &str,
    now: i64,
) -> Result<()> {
    let lost_move = tx
        .query_opt(
            "SELECT e.number FROM keys e
             JOIN keys c ON c.account_id = e.account_id AND c.task_uuid = e.task_uuid
                        AND c.current
             WHERE e.account_id = $1 AND e.task_uuid = $2 AND e.project_id = $3
               AND e.scope = $4 AND NOT e.current AND e.assigned_at > c.assigned_at
             ORDER BY e.assigned_at DESC, e.number DESC LIMIT 1",
            &[&account, &uuid, &project, &scope],
        )
        .await?
        .map(|r| r.get::<_, i64>(0));
    let n: i64 = match lost_move {
        Some(n) => n,
        None => tx
            .query_one(
                "INSERT INTO counters (project_id, scope, last) VALUES ($1, $2, 1)
                 ON CONFLICT (project_id, scope) DO UPDATE SET last = counters.last + 1
                 RETURNING last",
                &[&project, &scope],
            )
            .await?
            .get(0),
    };
    tx.execute(
        "UPDATE keys SET current = false, until_epoch = p.epoch FROM projects p
         WHERE keys.account_id = $1 AND keys.task_uuid = $2 AND keys.current
           AND p.id = keys.project_id",
        &[&account, &uuid],
    )
    .await?;
    if lost_move.is_some() {
        tx.execute(
            "UPDATE keys SET current = true, until_epoch = NULL, in_store = false,
                             assigned_at = $6, bound_rank = NULL
             WHERE account_id = $1 AND project_id = $2 AND scope = $3 AND number = $4
               AND task_uuid = $5",
            &[&account, &project, &scope, &n, &uuid, &now],
        )
        .await?;
    } else {
        tx.execute(
            "INSERT INTO keys (account_id, project_id, scope, number, task_uuid, assigned_at,
                               epoch)
             SELECT $1, $2, $3, $4, $5, $6, epoch FROM projects WHERE id = $2",
            &[&account, &project, &scope, &n, &uuid, &now],
        )
        .await?;
    }
    set_project(tx, account, uuid, project).await
}

/// Puts a reserved task in another project (a subtask follows its parent).
pub(super) async fn set_project(
    tx: &Transaction<'_>,
    account: AccountId,
    uuid: Uuid,
    project: i64,
) -> Result<()> {
    tx.execute(
        "UPDATE tasks SET project_id = $3 WHERE account_id = $1 AND uuid = $2",
        &[&account, &uuid, &project],
    )
    .await?;
    Ok(())
}

/// Moves a task and its subtasks to `project` (see SQLite's `move_tree`): the task takes the
/// project's next number, each subtask (parents first, siblings by old number) the next number
/// under its parent's new key; subtasks with no key yet only change project. Returns the
/// subtasks moved.
pub(super) async fn move_tree(
    tx: &Transaction<'_>,
    account: AccountId,
    uuid: Uuid,
    project: i64,
    now: i64,
) -> Result<Vec<Uuid>> {
    rekey(tx, account, uuid, project, "", now).await?;
    let mut moved = Vec::new();
    let mut queue = VecDeque::from([uuid]);
    while let Some(parent) = queue.pop_front() {
        let scope = current_key(tx, account, parent)
            .await?
            .ok_or_else(|| DbError::CommitFailed("a moved task has no key".into()))?
            .child_scope();
        let rows = tx
            .query(
                "SELECT t.uuid, k.number FROM tasks t
                 LEFT JOIN keys k ON k.account_id = t.account_id AND k.task_uuid = t.uuid
                                 AND k.current
                 WHERE t.account_id = $1 AND t.parent_uuid = $2
                 ORDER BY k.number NULLS LAST, t.uuid",
                &[&account, &parent],
            )
            .await?;
        for r in rows {
            let (child, number): (Uuid, Option<i64>) = (r.get(0), r.get(1));
            if number.is_none() {
                set_project(tx, account, child, project).await?;
                continue;
            }
            rekey(tx, account, child, project, &scope, now).await?;
            moved.push(child);
            queue.push_back(child);
        }
    }
    Ok(moved)
}
