//! The HTTP API v1 (DESIGN.md section 4): one module per endpoint group.
//!
//! Every `/v1` handler takes [`auth::Account`] (or [`resolve::Resolved`], which includes it), so
//! every query is scoped to the token's account. Errors leave as problem+json ([`ApiError`]).
pub mod auth;
mod changes;
mod extract;
mod members;
mod ops;
pub mod projects;
mod recovery;
pub mod resolve;
mod sync;
mod tasks;
pub mod taskwarrior;

use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, patch, post, put};
use axum::Router;

use crate::state::AppState;

pub use crate::state::{BODY_LIMIT, SYNC_BODY_LIMIT};

/// The whole service, ready for `axum::serve` or `tower::ServiceExt::oneshot`.
pub fn router(state: AppState) -> Router {
    let single = Router::new()
        .route("/v1/projects", get(projects::list).post(projects::create))
        .route("/v1/projects/{prefix}", patch(projects::update))
        .route("/v1/me", get(members::me))
        .route("/v1/members", get(members::list))
        .route("/v1/members/{name}", delete(members::remove))
        .route("/v1/invites", post(members::invite))
        .route("/v1/join", post(members::join))
        .route(
            "/v1/tasks/{id}",
            put(tasks::create).get(tasks::get).patch(tasks::update),
        )
        .route("/v1/changes", get(changes::list))
        .layer(DefaultBodyLimit::max(BODY_LIMIT));
    let batch = Router::new()
        .route("/v1/sync", post(sync::sync))
        .route("/v1/recovery/witness", post(recovery::witness))
        .route(
            "/v1/client/get-child-version/{parent}",
            get(taskwarrior::get_child_version),
        )
        .route(
            "/v1/client/add-version/{parent}",
            post(taskwarrior::add_version),
        )
        .route("/v1/client/snapshot", get(taskwarrior::get_snapshot))
        .route(
            "/v1/client/add-snapshot/{version}",
            post(taskwarrior::add_snapshot),
        )
        .layer(DefaultBodyLimit::max(SYNC_BODY_LIMIT));
    Router::new()
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .route("/openapi.json", get(ops::openapi))
        .merge(single)
        .merge(batch)
        .fallback(ops::not_found)
        .method_not_allowed_fallback(ops::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            extract::body_budget,
        ))
        .layer(axum::middleware::from_fn(extract::head_limits))
        .with_state(state)
}

pub use ops::ApiDoc;
