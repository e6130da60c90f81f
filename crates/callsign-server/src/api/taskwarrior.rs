//! TaskChampion's sync protocol, for Taskwarrior 3's `task sync` (`crate::taskwarrior`):
//! `GET /v1/client/get-child-version/{parent}`, `POST /v1/client/add-version/{parent}`,
//! `GET /v1/client/snapshot`, `POST /v1/client/add-snapshot/{version}`, each with the
//! `X-Client-Id` an admin issued for the account. Answers and headers are the protocol's;
//! errors are problem+json.
//!
//! The chain's protocol runs on a blocking thread of its own (`taskchampion_sync_server_core`'s
//! futures are not `Send`), driving the rest of the server from there.
use std::future::Future;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use callsign_core::ErrorCode;
use taskchampion_sync_server_core::{
    AddVersionResult, GetVersionResult, ServerError, SnapshotUrgency,
};
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::taskwarrior::{self, internal, Taskwarrior};

pub const HISTORY_SEGMENT: &str = "application/vnd.taskchampion.history-segment";
pub const SNAPSHOT: &str = "application/vnd.taskchampion.snapshot";

/// The account's service and link for this request's `X-Client-Id`.
async fn linked(
    state: &AppState,
    headers: &HeaderMap,
) -> ApiResult<(Arc<Taskwarrior>, taskwarrior::Link)> {
    let tw = state.taskwarrior.clone().ok_or_else(|| {
        ApiError::new(
            ErrorCode::NotImplemented,
            match state.config.database {
                callsign_storage::Database::Sqlite(_) => {
                    "Taskwarrior sync is off: start the server with --taskwarrior-key-file \
                     (docs/TASKWARRIOR.md)"
                }
                callsign_storage::Database::Postgres(_) => {
                    "Taskwarrior sync is not available on PostgreSQL yet"
                }
            },
        )
    })?;
    let mut values = headers.get_all("x-client-id").iter();
    let id = match (values.next(), values.next()) {
        (Some(v), None) => v.to_str().ok().and_then(|v| Uuid::parse_str(v.trim()).ok()),
        _ => None,
    }
    .ok_or_else(|| {
        ApiError::new(
            ErrorCode::InvalidClientId,
            "send one X-Client-Id header with the client id from `callsign-server account \
             taskwarrior` (Taskwarrior's sync.server.client_id)",
        )
    })?;
    let link = tw.link_by_client(id).await?;
    Ok((tw, link))
}

/// Runs `work` on a blocking thread that drives it to the end on this runtime.
async fn blocking<T, F, Fut>(work: F) -> ApiResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ApiResult<T>>,
{
    let rt = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || rt.block_on(work()))
        .await
        .map_err(internal)?
}

fn chain_err(e: ServerError) -> ApiError {
    match e {
        ServerError::NoSuchClient => ApiError::new(
            ErrorCode::UnknownClient,
            "this client id has no chain on the server",
        ),
        ServerError::Other(e) => internal(e),
    }
}

fn content_type_is(headers: &HeaderMap, want: &str) -> ApiResult<()> {
    let got = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if got.split(';').next().map(str::trim) == Some(want) {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            format!("send Content-Type: {want}"),
        ))
    }
}

fn non_empty(body: &Bytes) -> ApiResult<()> {
    if body.is_empty() {
        return Err(ApiError::new(ErrorCode::InvalidBody, "the body is empty"));
    }
    Ok(())
}

fn uuid_header(name: &'static str, v: Uuid) -> (&'static str, HeaderValue) {
    (
        name,
        HeaderValue::from_str(&v.to_string()).expect("a UUID is a header value"),
    )
}

/// Settles the account with Taskwarrior's news and the server's own; a failure is logged and
/// left to the next sync (what Taskwarrior sent is in the chain already).
async fn settle_now(state: &AppState, tw: &Taskwarrior, account: callsign_storage::AccountId) {
    let _one = tw.settling(account).await;
    let _alone = match tw.links.exclusive(account).await {
        Ok(g) => g,
        Err(e) => {
            tracing::warn!(account, error = %e, "locking a Taskwarrior settle");
            return;
        }
    };
    let link = match tw.links.link_of(account).await {
        Ok(Some(l)) => l,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(account, error = %e, "reading a Taskwarrior link");
            return;
        }
    };
    match taskwarrior::settle(state, tw, &link).await {
        Ok(s) => {
            let m = &state.metrics;
            m.taskwarrior("settle_ok", 1);
            m.taskwarrior("keyed", s.keyed);
            m.taskwarrior("restored", s.restored);
            m.taskwarrior("fed", s.touched);
            tracing::debug!(account, ?s, "settled a Taskwarrior sync");
        }
        Err(e) => {
            state.metrics.taskwarrior("settle_failed", 1);
            tracing::warn!(account, error = %e, "settling a Taskwarrior sync; the next one retries");
        }
    }
}

/// `GET /v1/client/get-child-version/{parent}`: the version after `parent`; when there is
/// none, the server first adds what it has that Taskwarrior has not seen.
pub async fn get_child_version(
    State(state): State<AppState>,
    Path(parent): Path<Uuid>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let (tw, link) = linked(&state, &headers).await?;
    blocking(move || async move {
        let client = link.client_id;
        let mut got = tw
            .core()
            .get_child_version(client, parent)
            .await
            .map_err(chain_err)?;
        if got == GetVersionResult::NotFound {
            settle_now(&state, &tw, link.account).await;
            got = tw
                .core()
                .get_child_version(client, parent)
                .await
                .map_err(chain_err)?;
        }
        Ok(match got {
            GetVersionResult::Success {
                version_id,
                parent_version_id,
                history_segment,
            } => (
                [
                    (
                        header::CONTENT_TYPE.as_str(),
                        HeaderValue::from_static(HISTORY_SEGMENT),
                    ),
                    uuid_header("x-version-id", version_id),
                    uuid_header("x-parent-version-id", parent_version_id),
                ],
                history_segment,
            )
                .into_response(),
            GetVersionResult::NotFound => ApiError::new(
                ErrorCode::NotFound,
                format!("no version after {parent} yet"),
            )
            .into_response(),
            GetVersionResult::Gone => ApiError::new(
                ErrorCode::VersionGone,
                format!("version {parent} is not in this chain"),
            )
            .into_response(),
        })
    })
    .await
}

/// `POST /v1/client/add-version/{parent}`: Taskwarrior's operations since `parent`, sealed.
/// Once they are in the chain the server applies them and numbers the new tasks before it
/// answers, and adds its own version after them.
pub async fn add_version(
    State(state): State<AppState>,
    Path(parent): Path<Uuid>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let (tw, link) = linked(&state, &headers).await?;
    content_type_is(&headers, HISTORY_SEGMENT)?;
    non_empty(&body)?;
    blocking(move || async move {
        tw.check_version(&link, parent, &body)?;
        let (res, urgency) = tw
            .core()
            .add_version(link.client_id, parent, body.to_vec())
            .await
            .map_err(chain_err)?;
        Ok(match res {
            AddVersionResult::Ok(version_id) => {
                crate::crash::point(crate::crash::TASKWARRIOR_AFTER_VERSION);
                settle_now(&state, &tw, link.account).await;
                let mut res = [uuid_header("x-version-id", version_id)].into_response();
                let urgency = match urgency {
                    SnapshotUrgency::None => None,
                    SnapshotUrgency::Low => Some("urgency=low"),
                    SnapshotUrgency::High => Some("urgency=high"),
                };
                if let Some(u) = urgency {
                    res.headers_mut()
                        .insert("x-snapshot-request", HeaderValue::from_static(u));
                }
                res
            }
            AddVersionResult::ExpectedParentVersion(latest) => (
                StatusCode::CONFLICT,
                [uuid_header("x-parent-version-id", latest)],
            )
                .into_response(),
        })
    })
    .await
}

/// `GET /v1/client/snapshot`: the latest snapshot, sealed.
pub async fn get_snapshot(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let (tw, link) = linked(&state, &headers).await?;
    blocking(move || async move {
        let snap = tw
            .core()
            .get_snapshot(link.client_id)
            .await
            .map_err(chain_err)?;
        Ok(match snap {
            Some((version_id, data)) => (
                [
                    (
                        header::CONTENT_TYPE.as_str(),
                        HeaderValue::from_static(SNAPSHOT),
                    ),
                    uuid_header("x-version-id", version_id),
                ],
                data,
            )
                .into_response(),
            None => ApiError::new(ErrorCode::NotFound, "no snapshot yet").into_response(),
        })
    })
    .await
}

/// `POST /v1/client/add-snapshot/{version}`: a snapshot of the state at `version`, sealed.
pub async fn add_snapshot(
    State(state): State<AppState>,
    Path(version): Path<Uuid>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let (tw, link) = linked(&state, &headers).await?;
    content_type_is(&headers, SNAPSHOT)?;
    non_empty(&body)?;
    blocking(move || async move {
        tw.check_snapshot(&link, version, &body)?;
        tw.core()
            .add_snapshot(link.client_id, version, body.to_vec())
            .await
            .map_err(chain_err)?;
        Ok(StatusCode::OK.into_response())
    })
    .await
}
