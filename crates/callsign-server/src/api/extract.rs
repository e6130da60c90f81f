//! Request extractors whose rejections are problem+json, and the reply of a mutation.
use axum::extract::{FromRequest, FromRequestParts, Json, Request};
use axum::http::{header, request::Parts, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use callsign_core::{validate, ErrorCode};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::protocol::Reply;

/// `Json<T>` whose rejections are `413 payload_too_large` or `422 invalid_body` (unknown
/// fields included), with serde's message naming the field.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(ApiJson(v)),
            Err(rej) if rej.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(ApiError::new(
                ErrorCode::PayloadTooLarge,
                "the request body is larger than this endpoint accepts",
            )),
            Err(rej) => Err(ApiError::new(ErrorCode::InvalidBody, rej.body_text())),
        }
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

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::OK);
        let mut res = (status, self.body).into_response();
        let h = res.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if self.replayed {
            h.insert("idempotent-replayed", HeaderValue::from_static("true"));
        }
        res
    }
}
