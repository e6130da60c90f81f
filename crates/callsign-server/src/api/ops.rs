//! Operational endpoints: `/healthz`, `/metrics`, `/openapi.json`, and the 404 fallback.
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use callsign_core::ErrorCode;
use utoipa::OpenApi;

use crate::db::{now_ms, slots};
use crate::error::{ApiError, ApiResult};
use crate::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Callsign sync API",
        version = "1",
        description = "Tasks with speakable keys (SYN-42) that are never duplicated, skipped or lost."
    ),
    paths(
        super::projects::list,
        super::projects::create,
        super::tasks::create,
        super::tasks::get,
        super::tasks::update,
        super::changes::list,
        super::sync::sync,
    ),
    components(schemas(
        callsign_core::dto::Task,
        callsign_core::dto::NewTask,
        callsign_core::dto::TaskPatch,
        callsign_core::dto::TaskStatus,
        callsign_core::dto::Project,
        callsign_core::dto::NewProject,
        callsign_core::dto::ProjectList,
        callsign_core::dto::ChangesPage,
        callsign_core::dto::Mutation,
        callsign_core::dto::MutationOp,
        callsign_core::dto::SyncRequest,
        callsign_core::dto::SyncResponse,
        callsign_core::dto::MutationResult,
        callsign_core::Problem,
        callsign_core::ErrorCode,
    ))
)]
pub struct ApiDoc;

pub async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({"status": "ok"}))
}

pub async fn metrics(State(state): State<AppState>) -> ApiResult<impl IntoResponse> {
    let window = i64::try_from(state.config.idempotency_window.as_millis()).unwrap_or(i64::MAX);
    let since = now_ms().saturating_sub(window);
    let (spans, pending) = state
        .db
        .read(move |c| {
            let spans = slots::retry_spans(c, since)?;
            let pending: i64 = c.query_row(
                "SELECT COUNT(*) FROM slots WHERE state = 'pending'",
                [],
                |r| r.get(0),
            )?;
            Ok((spans, pending))
        })
        .await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(&spans, pending),
    ))
}

pub async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

pub async fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "no such endpoint; see /openapi.json")
}
