//! Tasks as the API shows them: content from the task store, key from the allocation store
//! (the authority).
use callsign_core::dto::Task;
use callsign_storage::AccountId;
use uuid::Uuid;

use crate::state::AppState;

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
        .map(|(u, s)| Some(meta.get(u)?.settled(&s?).task()))
        .collect())
}
