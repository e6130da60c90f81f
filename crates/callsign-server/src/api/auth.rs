//! Bearer-token authentication: the extractor every `/v1` handler starts with.
use axum::extract::FromRequestParts;
use axum::http::{header, request::Parts};
use callsign_core::ErrorCode;

use crate::db::{accounts, AccountId};
use crate::error::ApiError;
use crate::AppState;

/// The account the request's bearer token belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Account(pub AccountId);

fn unauthorized() -> ApiError {
    ApiError::new(
        ErrorCode::Unauthorized,
        "send Authorization: Bearer <token> with a token from `callsign-server token create`",
    )
}

impl FromRequestParts<AppState> for Account {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .ok_or_else(unauthorized)?;
        state
            .db
            .read(move |c| accounts::account_for_token(c, &token))
            .await?
            .map(Account)
            .ok_or_else(unauthorized)
    }
}
