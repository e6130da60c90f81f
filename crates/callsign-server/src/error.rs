//! The server's error type and its one mapping to HTTP: `application/problem+json` bodies with
//! a stable `code` (RFC 9457). Internal details are logged, never sent.
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use callsign_core::{ErrorCode, Problem};

use crate::db::DbError;
use crate::store::StoreError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub detail: String,
    /// Seconds for a `Retry-After` header.
    pub retry_after: Option<u64>,
}

pub type ApiResult<T> = std::result::Result<T, ApiError>;

impl ApiError {
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        ApiError {
            code,
            detail: detail.into(),
            retry_after: None,
        }
    }

    /// Phase 2 could not finish: nothing was numbered; retry with the same idempotency key.
    pub fn unavailable(detail: impl Into<String>) -> Self {
        ApiError {
            code: ErrorCode::Unavailable,
            detail: detail.into(),
            retry_after: Some(1),
        }
    }

    pub fn in_progress() -> Self {
        ApiError {
            code: ErrorCode::RequestInProgress,
            detail: "a request with this idempotency key is being processed; retry shortly".into(),
            retry_after: Some(1),
        }
    }

    pub fn problem(&self) -> Problem {
        Problem::new(self.code, self.detail.clone())
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.detail)
    }
}

impl From<DbError> for ApiError {
    fn from(e: DbError) -> Self {
        tracing::error!(error = %e, "allocation database error");
        ApiError::unavailable("the server could not reach its database; retry later")
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        tracing::error!(error = %e, "task store error");
        ApiError::unavailable("the server could not reach its task store; retry later")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let problem = self.problem();
        let status =
            StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let mut res = (status, body).into_response();
        let headers = res.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        res
    }
}
