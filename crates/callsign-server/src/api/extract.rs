//! Request extractors whose rejections are problem+json, and the reply of a mutation.
use axum::extract::{FromRequest, FromRequestParts, Json, Request};
use axum::http::{header, request::Parts, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use callsign_core::{validate, ErrorCode};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::protocol::Reply;
use crate::state::AppState;

/// The longest request target (path and query) answered; longer is `414 uri_too_long`.
pub const MAX_URI: usize = 8 * 1024;
/// The most header bytes (names and values) answered; more is `431 headers_too_large`.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;
/// The most header fields answered; more is `431 headers_too_large`.
pub const MAX_HEADERS: usize = 64;

/// Refuses, as problem+json, a request whose target or headers are larger than any client of
/// this API sends. hyper itself answers beyond its own limits (a target over 65,534 bytes,
/// a head over its read buffer) with an empty `414`/`431` and closes the connection; these
/// lower limits mean a request gets this server's problem+json answer first.
pub async fn head_limits(req: Request, next: axum::middleware::Next) -> Result<Response, ApiError> {
    let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if target > MAX_URI {
        return Err(ApiError::new(
            ErrorCode::UriTooLong,
            format!("the request target is {target} bytes; at most {MAX_URI} are read"),
        ));
    }
    let headers = req.headers();
    let bytes: usize = headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len())
        .sum();
    if headers.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return Err(ApiError::new(
            ErrorCode::HeadersTooLarge,
            format!(
                "{} headers, {bytes} bytes; at most {MAX_HEADERS} headers and {MAX_HEADER_BYTES} bytes are read",
                headers.len()
            ),
        ));
    }
    Ok(next.run(req).await)
}

/// Bodies this small skip the body budget (most requests: a task is a few KiB).
pub const SMALL_BODY: u64 = 64 * 1024;

/// Holds a request whose body is large until the body budget has room for it: a permit per
/// KiB of its `Content-Length` (a body of unknown length counts as the largest the route
/// takes), kept until the answer is ready, since the parsed request and the work done with it
/// are a few times the body's size. Past the budget, large requests wait their turn with their
/// bodies unread (in the kernel's socket buffers), so memory in flight stays bounded; small
/// ones are not held.
pub async fn body_budget(
    axum::extract::State(state): axum::extract::State<AppState>,
    req: Request,
    next: axum::middleware::Next,
) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let has_body = !matches!(
        *req.method(),
        axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::DELETE
    );
    let route_max = if req.uri().path() == "/v1/sync" {
        super::SYNC_BODY_LIMIT
    } else {
        super::BODY_LIMIT
    } as u64;
    let weight = match declared {
        Some(n) => n.min(route_max),
        None if has_body => route_max,
        None => 0,
    };
    if weight <= SMALL_BODY {
        return next.run(req).await;
    }
    let budget = &state.body_budget;
    let kib = u32::try_from(weight.div_ceil(1024))
        .unwrap_or(u32::MAX)
        .min(state.body_budget_kib);
    let Ok(_permit) = budget.acquire_many(kib).await else {
        return ApiError::unavailable("the server is shutting down").into_response();
    };
    next.run(req).await
}

/// A task route's `{id}` as text; a path that is not UTF-8 (`%FF`) is `400 invalid_ref`.
pub struct RawRef(pub String);

impl<S: Send + Sync> FromRequestParts<S> for RawRef {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<String>::from_request_parts(parts, state)
            .await
            .map(|p| RawRef(p.0))
            .map_err(|e| {
                ApiError::new(
                    ErrorCode::InvalidRef,
                    format!("{}: use a task UUID or a key like SYN-42", e.body_text()),
                )
            })
    }
}

/// `Json<T>` whose rejections are `413 payload_too_large`, `408 request_timeout` or
/// `422 invalid_body` (unknown fields included), with serde's message naming the field.
pub struct ApiJson<T>(pub T);

/// `application/json` or `application/<anything>+json`, as axum's `Json` takes.
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    let Some(ct) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = ApiError;

    /// The whole body must arrive within the body-read timeout (`408 request_timeout`), and
    /// be a JSON object (serde would also take a struct written as an array).
    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        if !is_json(req.headers()) {
            return Err(ApiError::new(
                ErrorCode::InvalidBody,
                "send the body as JSON with Content-Type: application/json",
            ));
        }
        let limit = state.config.body_read_timeout;
        let Ok(read) =
            tokio::time::timeout(limit, axum::body::Bytes::from_request(req, state)).await
        else {
            return Err(ApiError::new(
                ErrorCode::RequestTimeout,
                format!("the request body did not arrive within {limit:?}"),
            ));
        };
        let bytes = match read {
            Ok(b) => b,
            Err(rej) if rej.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                return Err(ApiError::new(
                    ErrorCode::PayloadTooLarge,
                    "the request body is larger than this endpoint accepts",
                ))
            }
            Err(rej) => return Err(ApiError::new(ErrorCode::InvalidBody, rej.body_text())),
        };
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(ApiError::new(
                ErrorCode::InvalidBody,
                "the request body must be a JSON object",
            ));
        }
        Json::<T>::from_bytes(&bytes)
            .map(|Json(v)| ApiJson(v))
            .map_err(|rej| ApiError::new(ErrorCode::InvalidBody, rej.body_text()))
    }
}

static IDEMPOTENCY_KEY: axum::http::HeaderName =
    axum::http::HeaderName::from_static("idempotency-key");

/// The `Idempotency-Key` header, required on every create and update (once).
pub struct IdemKey(pub String);

impl<S: Send + Sync> FromRequestParts<S> for IdemKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        super::auth::single_header(parts, &IDEMPOTENCY_KEY)?;
        let Some(v) = parts.headers.get(&IDEMPOTENCY_KEY) else {
            return Err(ApiError::new(
                ErrorCode::IdempotencyKeyMissing,
                "creates and updates need an Idempotency-Key header (a fresh random string per change; resend it unchanged on retry)",
            ));
        };
        let k = v.to_str().unwrap_or("");
        validate::idempotency_key(k)
            .map_err(|e| ApiError::new(ErrorCode::IdempotencyKeyInvalid, e.0))?;
        Ok(IdemKey(k.to_owned()))
    }
}

/// A stored answer as its HTTP response (`Idempotent-Replayed: true` on a replay).
pub fn reply_response(reply: Reply) -> Response {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::OK);
    let mut res = (status, reply.body).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if reply.replayed {
        h.insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    res
}
