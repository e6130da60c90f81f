//! Operational endpoints: `/healthz`, `/metrics`, `/openapi.json`, and the 404 fallback.
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use callsign_core::ErrorCode;
use utoipa::OpenApi;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use callsign_storage::now_ms;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Callsign sync API",
        version = "1",
        description = "Tasks with speakable keys (SYN-42) that are never duplicated, skipped or lost."
    ),
    modifiers(&Contract),
    paths(
        healthz,
        readyz,
        metrics,
        openapi,
        super::projects::list,
        super::projects::create,
        super::projects::update,
        super::members::me,
        super::members::list,
        super::members::remove,
        super::members::invite,
        super::members::join,
        super::tasks::create,
        super::tasks::get,
        super::tasks::update,
        super::changes::list,
        super::sync::sync,
        super::recovery::witness,
    ),
    components(schemas(
        callsign_core::dto::Task,
        callsign_core::dto::NewTask,
        callsign_core::dto::TaskPatch,
        callsign_core::dto::PatchBase,
        callsign_core::dto::CommitLink,
        callsign_core::dto::CommitAction,
        callsign_core::merge::Conflict,
        callsign_core::merge::Field,
        callsign_core::dto::TaskStatus,
        callsign_core::dto::Project,
        callsign_core::dto::NewProject,
        callsign_core::dto::ProjectPatch,
        callsign_core::dto::ProjectList,
        callsign_core::dto::Member,
        callsign_core::dto::MemberList,
        callsign_core::dto::NewInvite,
        callsign_core::dto::Invite,
        callsign_core::dto::JoinRequest,
        callsign_core::dto::Joined,
        callsign_core::Role,
        callsign_core::dto::ChangesPage,
        callsign_core::dto::Mutation,
        callsign_core::dto::MutationOp,
        callsign_core::dto::SyncRequest,
        callsign_core::dto::SyncResponse,
        callsign_core::dto::MutationResult,
        callsign_core::dto::WitnessedTask,
        callsign_core::dto::WitnessRequest,
        callsign_core::dto::WitnessResponse,
        callsign_core::Problem,
        callsign_core::ErrorCode,
    ))
)]
pub struct ApiDoc;

/// What holds for every operation, added to the document in one place: `/v1` operations need
/// the bearer token (`security`) and may answer `401 unauthorized`, `429 too_many_requests`,
/// `400 duplicate_header` and `503 unavailable`; every error answer is
/// `application/problem+json`.
struct Contract;

impl utoipa::Modify for Contract {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::SecurityScheme;
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement};
        use utoipa::openapi::{RefOr, ResponseBuilder};
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "a device token from `callsign-server account create` or `token create`",
                    ))
                    .build(),
            ),
        );
        let problem = || {
            utoipa::openapi::ContentBuilder::new()
                .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                    "Problem",
                ))))
                .build()
        };
        for (path, item) in doc.paths.paths.iter_mut() {
            let ops = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.patch,
                &mut item.delete,
            ];
            for op in ops.into_iter().flatten() {
                let responses = &mut op.responses.responses;
                if path.starts_with("/v1/") {
                    // Joining is how a device without a token gets one.
                    let open = path == "/v1/join";
                    if !open {
                        op.security = Some(vec![SecurityRequirement::new(
                            "bearer",
                            Vec::<String>::new(),
                        )]);
                    }
                    for (status, code) in [
                        ("400", "duplicate_header"),
                        ("401", "unauthorized"),
                        ("429", "too_many_requests (Retry-After)"),
                        ("503", "unavailable (Retry-After)"),
                    ] {
                        if open && status == "401" {
                            continue;
                        }
                        match responses.get_mut(status) {
                            Some(RefOr::T(r)) => {
                                r.description = format!("{}, {code}", r.description)
                            }
                            Some(RefOr::Ref(_)) => {}
                            None => {
                                responses.insert(
                                    status.to_owned(),
                                    RefOr::T(ResponseBuilder::new().description(code).build()),
                                );
                            }
                        }
                    }
                }
                for (status, r) in responses.iter_mut() {
                    if let RefOr::T(r) = r {
                        if status.starts_with('4') || status.starts_with('5') {
                            r.content.clear();
                            r.content
                                .insert("application/problem+json".to_owned(), problem());
                        }
                    }
                }
            }
        }
    }
}

/// Liveness: the process answers. Says nothing about the databases (see [`readyz`]).
#[utoipa::path(get, path = "/healthz", operation_id = "healthz",
    responses((status = 200, description = "the process answers", body = serde_json::Value)))]
pub async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({"status": "ok"}))
}

/// How long `/readyz` waits for its probes before it answers `not_ready`.
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Readiness: the allocation database answers a read and commits a write (a full disk or a
/// read-only file fails here), the task store's worker runs, and no account's replica failed
/// its last open, read or commit. `503 not_ready` says what failed; the log has the details
/// (the endpoint needs no token, so the answer names no file or account).
#[utoipa::path(get, path = "/readyz", operation_id = "readyz", responses(
    (status = 200, description = "ready", body = serde_json::Value),
    (status = 503, description = "not_ready (Retry-After)", body = callsign_core::Problem)))]
pub async fn readyz(State(state): State<AppState>) -> ApiResult<Json<serde_json::Value>> {
    let probe = async {
        let mut failed = Vec::new();
        if let Err(e) = state.alloc.probe().await {
            failed.push(e);
        }
        let (running, failing) = state.tasks.health();
        if !running {
            failed.push("task store worker stopped".to_owned());
        }
        for (account, e) in &failing {
            tracing::warn!(account, error = %e, "readyz: a task database fails");
        }
        if !failing.is_empty() {
            failed.push(format!(
                "the task databases of {} account(s) fail (the server log names them)",
                failing.len()
            ));
        }
        failed
    };
    let failed = tokio::time::timeout(READY_TIMEOUT, probe)
        .await
        .unwrap_or_else(|_| {
            vec![format!(
                "the databases did not answer within {READY_TIMEOUT:?}"
            )]
        });
    if failed.is_empty() {
        Ok(Json(serde_json::json!({"status": "ready"})))
    } else {
        Err(ApiError {
            retry_after: Some(5),
            ..ApiError::new(ErrorCode::NotReady, failed.join("; "))
        })
    }
}

/// Prometheus text (docs/OPERATIONS.md names the series).
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", responses(
    (status = 200, description = "Prometheus text format 0.0.4", body = String, content_type = "text/plain"),
    (status = 503, description = "unavailable", body = callsign_core::Problem)))]
pub async fn metrics(State(state): State<AppState>) -> ApiResult<impl IntoResponse> {
    let period = state.config.idempotency_window.period();
    let since = now_ms().saturating_sub(i64::try_from(period.as_millis()).unwrap_or(i64::MAX));
    let (spans, pending) = state.alloc.retry_stats(since).await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(&spans, pending),
    ))
}

#[utoipa::path(get, path = "/openapi.json", operation_id = "openapi",
    responses((status = 200, description = "this document", body = serde_json::Value)))]
pub async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

pub async fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "no such endpoint; see /openapi.json")
}

/// A known path with a method it does not have; axum adds the `Allow` header.
pub async fn method_not_allowed(method: axum::http::Method) -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!("{method} is not allowed here; the Allow header lists what is"),
    )
}
