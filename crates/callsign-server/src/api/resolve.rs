//! The resolver: turns the `{id}` of a task route (a UUID or a key, leniently) into the task's
//! UUID, once, before any handler logic runs. Scoped to the caller's account, so another
//! account's task is simply not found.
//!
//! [`Resolved`] is an extractor: auth first, then the `{id}` is parsed (`TaskRef::parse`: a
//! UUID first, then a key in any of its forms, `SYN-42`, `syn-42`, `SYN 42`, `syn42`,
//! `SYN-42.1`; neither is `invalid_ref`) and resolved in the caller's account before the
//! handler runs. A key is looked up by (prefix, scope, number) through
//! `AllocStore::uuid_for_key`, so a key a move or a rename retired still names its task, and
//! the handler answers with the current key. A key that names nothing so, or text that is no
//! key (`#12`), may be the key an imported task had in its tracker (`AllocStore::
//! origin_holders`). An unknown prefix is `404 unknown_prefix`, an unknown number or UUID
//! `404 task_not_found`.
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use callsign_core::dto::Origin;
use callsign_core::{ErrorCode, TaskRef};
use uuid::Uuid;

use super::auth::Account;
use super::extract::RawRef;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use callsign_storage::AccountId;

/// A task route's `{id}`, resolved.
#[derive(Debug, Clone, Copy)]
pub struct Resolved {
    pub account: AccountId,
    pub uuid: Uuid,
}

impl FromRequestParts<AppState> for Resolved {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Account(account) = Account::from_request_parts(parts, state).await?;
        let RawRef(raw) = RawRef::from_request_parts(parts, state).await?;
        let uuid = match TaskRef::parse(&raw) {
            Ok(r) => resolve(state, account, r).await?,
            // Not a UUID or a key here, but maybe a key another tracker gave (`#12`).
            Err(e) => by_origin(state, account, &raw)
                .await?
                .ok_or_else(|| ApiError::new(ErrorCode::InvalidRef, e.to_string()))?,
        };
        Ok(Resolved { account, uuid })
    }
}

/// UUID: a task this account reserved. Key: the prefix must name one of the account's
/// projects (`unknown_prefix`), the number a task in it (`task_not_found`).
pub async fn resolve(state: &AppState, account: AccountId, r: TaskRef) -> ApiResult<Uuid> {
    match r {
        TaskRef::Uuid(u) => {
            let found = state.alloc.task_reserved(account, u).await?;
            found
                .then_some(u)
                .ok_or_else(|| ApiError::new(ErrorCode::TaskNotFound, format!("no task {u}")))
        }
        TaskRef::Key(k) => {
            let prefix = k.prefix.to_string();
            let number = i64::try_from(k.number).unwrap_or(i64::MAX);
            let found = state
                .alloc
                .uuid_for_key(account, &prefix, &k.scope(), number)
                .await?;
            if let Ok(u) = found {
                return Ok(u);
            }
            // A key no task here has had may be the key an imported task had in its tracker.
            if let Some(u) = by_origin(state, account, &k.to_string()).await? {
                return Ok(u);
            }
            match found {
                Ok(u) => Ok(u),
                Err(false) => Err(ApiError::new(
                    ErrorCode::UnknownPrefix,
                    format!("no project with prefix {}", k.prefix),
                )),
                Err(true) => Err(ApiError::new(
                    ErrorCode::TaskNotFound,
                    format!("no task {k}"),
                )),
            }
        }
    }
}

/// The imported task whose key in its tracker `text` is (`ENG-42`, `#12`, any case).
async fn by_origin(state: &AppState, account: AccountId, text: &str) -> ApiResult<Option<Uuid>> {
    let key = Origin::normal_key(text);
    let mut found = state
        .alloc
        .origin_holders(account, vec![key.clone()])
        .await?;
    Ok(found.remove(&key))
}
