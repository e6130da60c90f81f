//! Tasks as the API shows them: content from the task store, key from the allocation store
//! (the authority).
use callsign_core::dto::Task;
use uuid::Uuid;

use crate::db::{AccountId, KeyRow};
use crate::store::Snapshot;
use crate::AppState;

/// A task's answer: its content, and its key (or, before it has one, its project).
pub fn to_task(
    s: &Snapshot,
    prefix: &str,
    key: Option<&KeyRow>,
    parent: Option<Uuid>,
    previous_keys: Vec<String>,
) -> Task {
    Task {
        uuid: s.uuid,
        key: key.map(KeyRow::key),
        project: key.map_or_else(|| prefix.to_owned(), |k| k.prefix.clone()),
        number: key.map(|k| k.number as u64),
        description: s.description.clone(),
        notes: s.notes.clone(),
        status: s.status,
        tags: s.tags.clone(),
        due: s.due,
        priority: s.priority,
        parent,
        previous_keys,
        conflicts: s.conflicts.clone(),
        created_by: s.created_by.clone(),
        assignee: s.assignee.clone(),
        created_at: s.created_at,
        modified_at: s.modified_at,
    }
}

/// Loads tasks as the API shows them. `None` for a UUID this account never reserved or whose
/// task is not in the store.
pub async fn load_tasks(
    state: &AppState,
    account: AccountId,
    uuids: Vec<Uuid>,
) -> crate::error::ApiResult<Vec<Option<Task>>> {
    let meta = state.alloc.task_meta(account, uuids.clone()).await?;
    let snaps = state.tasks.get(account, uuids.clone()).await?;
    Ok(uuids
        .iter()
        .zip(snaps)
        .map(|(u, s)| {
            let m = meta.get(u)?;
            Some(to_task(
                &s?,
                &m.prefix,
                m.key.as_ref(),
                m.parent,
                m.previous.clone(),
            ))
        })
        .collect())
}
