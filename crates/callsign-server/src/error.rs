//! The server's error type and its one mapping to HTTP: `application/problem+json` bodies with
//! a stable `code` (RFC 9457). Internal details are logged, never sent.
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use callsign_core::{ErrorCode, Problem};

use callsign_storage::{Op, Refusal};

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

impl From<callsign_storage::Error> for ApiError {
    fn from(e: callsign_storage::Error) -> Self {
        if let callsign_storage::Error::Recovering { prefix } = &e {
            return recovering(prefix);
        }
        if e.is_task_store() {
            tracing::error!(error = %e, "task store error");
            ApiError::unavailable("the server could not reach its task store; retry later")
        } else {
            tracing::error!(error = %e, "allocation database error");
            ApiError::unavailable("the server could not reach its database; retry later")
        }
    }
}

/// The one table from phase 1's refusals to their answers.
impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::KeyReused(op) => refused_reuse(op),
            Refusal::InProgress => ApiError::in_progress(),
            Refusal::NoProject(prefix) => ApiError::new(
                ErrorCode::ProjectNotFound,
                format!("this account has no project with prefix {prefix}"),
            ),
            Refusal::TaskExists(uuid) => ApiError::new(
                ErrorCode::TaskExists,
                format!("task {uuid} was created by a different request"),
            ),
            Refusal::NotUpdatable { uuid, reserved } => not_updatable(uuid, reserved),
        }
    }
}

/// `503 recovering`: the project numbers nothing until its recovery ends (docs/RECOVERY.md).
/// The task is kept; the same request sent again later gets its key.
pub fn recovering(prefix: &str) -> ApiError {
    ApiError {
        code: ErrorCode::Recovering,
        detail: format!(
            "your task keeps its place and gets its \
             {prefix} key when the team's devices have checked in (retry later with the same \
             idempotency key)"
        ),
        retry_after: ErrorCode::Recovering.retry_hint().map(|d| d.as_secs()),
    }
}

/// `503 recovering` for a change that needs a task the server lacks while the account
/// recovers (`what`: a subtask's parent, an updated task): a device may yet bring it back, so
/// the change is not refused; the same request is decided anew later (after recovery, a task
/// still missing is refused as ever: `422 invalid_parent`, `404 task_not_found`).
pub fn recovering_without(what: &str) -> ApiError {
    ApiError {
        code: ErrorCode::Recovering,
        detail: format!(
            "the server does not have {what} yet, and the team's devices may bring it back; \
             your change keeps its place (retry later with the same idempotency key)"
        ),
        retry_after: ErrorCode::Recovering.retry_hint().map(|d| d.as_secs()),
    }
}

/// `422 idempotency_key_reused`: the key came before with another request.
pub fn refused_reuse(op: Op) -> ApiError {
    ApiError::new(
        ErrorCode::IdempotencyKeyReused,
        format!(
            "this idempotency key was used before with a different {} request",
            op.as_str()
        ),
    )
}

/// An update of a task with no key: `409 task_not_committed` (retry after the create) if the
/// task is reserved, else `404 task_not_found`.
pub fn not_updatable(uuid: uuid::Uuid, reserved: bool) -> ApiError {
    if reserved {
        not_committed(format!(
            "task {uuid} has no key yet; send the update after its create is answered"
        ))
    } else {
        ApiError::new(ErrorCode::TaskNotFound, format!("no task {uuid}"))
    }
}

/// `409 task_not_committed` with `Retry-After: 1`: a task this request needs has no key yet.
pub fn not_committed(detail: String) -> ApiError {
    let mut e = ApiError::new(ErrorCode::TaskNotCommitted, detail);
    e.retry_after = Some(1);
    e
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::to_bytes;
    use uuid::Uuid;

    /// The HTTP answer `e` becomes: status, the problem's `code`, its `Retry-After`.
    async fn answer(e: ApiError) -> (u16, String, Option<String>) {
        let res = e.into_response();
        let status = res.status().as_u16();
        assert_eq!(
            res.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
        let retry = res
            .headers()
            .get(header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_owned());
        let body = to_bytes(res.into_body(), 1 << 16).await.unwrap();
        let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(problem["status"], status, "{problem}");
        (status, problem["code"].as_str().unwrap().to_owned(), retry)
    }

    #[tokio::test]
    async fn every_refusal_has_its_status_code_and_retry() {
        let uuid = Uuid::new_v4();
        let table = [
            (
                Refusal::KeyReused(Op::Create),
                422,
                "idempotency_key_reused",
                None,
            ),
            (Refusal::InProgress, 409, "request_in_progress", Some("1")),
            (
                Refusal::NoProject("ZZZ".into()),
                404,
                "project_not_found",
                None,
            ),
            (Refusal::TaskExists(uuid), 409, "task_exists", None),
            (
                Refusal::NotUpdatable {
                    uuid,
                    reserved: true,
                },
                409,
                "task_not_committed",
                Some("1"),
            ),
            (
                Refusal::NotUpdatable {
                    uuid,
                    reserved: false,
                },
                404,
                "task_not_found",
                None,
            ),
        ];
        for (refusal, status, code, retry) in table {
            let seen = answer(ApiError::from(refusal.clone())).await;
            assert_eq!(
                seen,
                (status, code.to_owned(), retry.map(str::to_owned)),
                "{refusal:?}"
            );
        }
        let detail = ApiError::from(Refusal::KeyReused(Op::Update)).detail;
        assert!(detail.contains("different update request"), "{detail}");
    }
}
