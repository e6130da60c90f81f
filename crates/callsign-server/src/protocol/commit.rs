//! The phase-2 transactions, shared by requests and the reaper, and task loading.
use std::collections::HashMap;

use callsign_core::dto::Task;
use rusqlite::{params, Connection, OptionalExtension};
use uuid::Uuid;

use super::{Reply, Reserved};
use crate::db::{self, changes, slots, AccountId, DbError, KeyRow};
use crate::store::Snapshot;
use crate::AppState;

fn to_task(s: &Snapshot, prefix: &str, key: Option<&KeyRow>) -> Task {
    Task {
        uuid: s.uuid,
        key: key.map(KeyRow::key),
        project: key.map_or_else(|| prefix.to_owned(), |k| k.prefix.clone()),
        number: key.map(|k| k.number as u64),
        description: s.description.clone(),
        notes: s.notes.clone(),
        status: s.status,
        tags: s.tags.clone(),
        created_at: s.created_at,
        modified_at: s.modified_at,
    }
}

fn json(task: &Task) -> db::Result<String> {
    serde_json::to_string(task).map_err(|e| DbError::CommitFailed(e.to_string()))
}

/// The slot of `(account, idem)`, by the row id phase 1 (or the reaper) passed on.
fn slot(
    conn: &Connection,
    account: AccountId,
    idem: &str,
    at: Reserved,
) -> db::Result<slots::Slot> {
    slots::get_slot_at(conn, account, idem, at.slot)?
        .ok_or_else(|| DbError::CommitFailed("slot vanished".into()))
}

/// Settles a pending create slot whose task is in TaskChampion: the number is taken from the
/// counter here and only here, in the transaction that commits the slot (G2). A UUID that has
/// a key keeps it (G1), and the answer is then `200` instead of `201`. A slot no longer pending
/// answers with what it stored. `at` is what phase 1 reserved (the reaper passes the slot it
/// read, with no project).
pub fn commit_create(
    conn: &Connection,
    account: AccountId,
    idem: &str,
    at: Reserved,
    snapshot: &Snapshot,
    now: i64,
) -> db::Result<Reply> {
    let slot = slot(conn, account, idem, at)?;
    if slot.state != slots::SlotState::Pending {
        return stored(slot);
    }
    let uuid = slot.task_uuid;
    let project_id = match at.project {
        Some(p) => p,
        None => {
            slots::task_row(conn, account, uuid)?
                .ok_or_else(|| DbError::CommitFailed("task reservation vanished".into()))?
                .0
        }
    };
    let (status, number, key) = match slots::current_key(conn, account, uuid)? {
        Some(k) => (200, None, k),
        None => {
            let n = slots::bump_counter(conn, project_id, "")?;
            slots::insert_key(conn, account, project_id, n, uuid, now)?;
            let prefix: String = conn
                .prepare_cached("SELECT prefix FROM projects WHERE id = ?1")?
                .query_row([project_id], |r| r.get(0))?;
            let key = KeyRow {
                project_id,
                prefix,
                number: n,
            };
            (201, Some(n), key)
        }
    };
    let body = json(&to_task(snapshot, &key.prefix, Some(&key)))?;
    slots::commit_slot(conn, slot.id, number, status, &body, now)?;
    let change = changes::append(conn, account, uuid, now)?;
    Ok(Reply {
        status,
        body,
        replayed: false,
        change: Some(change),
    })
}

/// Settles a pending update slot whose patch is applied in TaskChampion.
pub fn commit_update(
    conn: &Connection,
    account: AccountId,
    idem: &str,
    at: Reserved,
    snapshot: &Snapshot,
    now: i64,
) -> db::Result<Reply> {
    let slot = slot(conn, account, idem, at)?;
    if slot.state != slots::SlotState::Pending {
        return stored(slot);
    }
    let key = slots::current_key(conn, account, slot.task_uuid)?;
    let prefix = key.as_ref().map(|k| k.prefix.clone()).unwrap_or_default();
    let body = json(&to_task(snapshot, &prefix, key.as_ref()))?;
    slots::commit_slot(conn, slot.id, None, 200, &body, now)?;
    let change = changes::append(conn, account, slot.task_uuid, now)?;
    Ok(Reply {
        status: 200,
        body,
        replayed: false,
        change: Some(change),
    })
}

fn stored(slot: slots::Slot) -> db::Result<Reply> {
    match (slot.response_status, slot.response_body) {
        (Some(status), Some(body)) => Ok(Reply {
            status,
            body,
            replayed: true,
            change: None,
        }),
        _ => Err(DbError::CommitFailed(
            "slot was failed by the reaper".into(),
        )),
    }
}

/// The project prefix and current key of each reserved task.
fn task_meta(
    conn: &Connection,
    account: AccountId,
    uuids: &[Uuid],
) -> db::Result<HashMap<Uuid, (String, Option<KeyRow>)>> {
    let mut st = conn.prepare_cached(
        "SELECT p.prefix FROM tasks t JOIN projects p ON p.id = t.project_id
         WHERE t.account_id = ?1 AND t.uuid = ?2",
    )?;
    let mut out = HashMap::with_capacity(uuids.len());
    for &u in uuids {
        let prefix: Option<String> = st.query_row(params![account, u], |r| r.get(0)).optional()?;
        if let Some(prefix) = prefix {
            out.insert(u, (prefix, slots::current_key(conn, account, u)?));
        }
    }
    Ok(out)
}

/// Loads tasks as the API shows them: content from TaskChampion, key from the allocation
/// database (the authority). `None` for a UUID this account never reserved or whose task is
/// not in the store.
pub async fn load_tasks(
    state: &AppState,
    account: AccountId,
    uuids: Vec<Uuid>,
) -> crate::error::ApiResult<Vec<Option<Task>>> {
    let list = uuids.clone();
    let meta = state.db.read(move |c| task_meta(c, account, &list)).await?;
    let snaps = state.store.get(account, uuids.clone()).await?;
    Ok(uuids
        .iter()
        .zip(snaps)
        .map(|(u, s)| {
            let (prefix, key) = meta.get(u)?;
            Some(to_task(&s?, prefix, key.as_ref()))
        })
        .collect())
}
