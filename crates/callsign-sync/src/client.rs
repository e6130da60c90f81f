//! The HTTP side: `POST /v1/sync`, `GET /v1/changes`, `GET /v1/projects`, with the bearer token,
//! and the reconnect probe `GET /healthz`.
//!
//! Every failure comes back as a [`CallError`] that says whether to retry and honours the
//! server's `Retry-After`. No request waits longer than [`REQUEST_TIMEOUT`]; connecting gives up
//! after [`CONNECT_TIMEOUT`], so an unreachable server is reported quickly.
use std::time::Duration;

use callsign_core::dto::{ChangesPage, ProjectList, SyncRequest, SyncResponse};
use callsign_core::{ErrorCode, Problem};
use serde::de::DeserializeOwned;

use crate::backoff::parse_retry_after;
use crate::error::Error;
use crate::settings::Token;

pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the reconnect probe waits for `/healthz`.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub struct CallError {
    pub error: Error,
    pub retry_after: Option<Duration>,
}

impl CallError {
    pub fn is_transient(&self) -> bool {
        self.error.is_transient()
    }
}

impl From<CallError> for Error {
    fn from(e: CallError) -> Error {
        e.error
    }
}

#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: Token,
}

impl Client {
    pub fn new(base: &str, token: Token) -> Result<Client, Error> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| Error::Protocol(format!("HTTP client: {e}")))?;
        Ok(Client {
            http,
            base: base.trim_end_matches('/').to_owned(),
            token,
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub async fn sync(&self, req: &SyncRequest) -> Result<SyncResponse, CallError> {
        let rb = self.http.post(format!("{}/v1/sync", self.base)).json(req);
        self.send(rb).await
    }

    pub async fn changes(
        &self,
        since: Option<&str>,
        limit: usize,
    ) -> Result<ChangesPage, CallError> {
        let mut q = vec![("limit", limit.to_string())];
        if let Some(s) = since {
            q.push(("since", s.to_owned()));
        }
        let rb = self.http.get(format!("{}/v1/changes", self.base)).query(&q);
        self.send(rb).await
    }

    pub async fn projects(&self) -> Result<ProjectList, CallError> {
        let rb = self.http.get(format!("{}/v1/projects", self.base));
        self.send(rb).await
    }

    /// The cheap reconnect probe: does the server answer `GET /healthz` with a success within
    /// [`PROBE_TIMEOUT`]? No token is sent (the route needs none).
    pub async fn reachable(&self) -> bool {
        let rb = self.http.get(format!("{}/healthz", self.base));
        matches!(rb.timeout(PROBE_TIMEOUT).send().await, Ok(r) if r.status().is_success())
    }

    async fn send<T: DeserializeOwned>(&self, rb: reqwest::RequestBuilder) -> Result<T, CallError> {
        let unreachable = |e: reqwest::Error| CallError {
            error: Error::Unreachable {
                url: self.base.clone(),
                reason: describe(&e),
            },
            retry_after: None,
        };
        let resp = rb
            .bearer_auth(self.token.expose())
            .send()
            .await
            .map_err(unreachable)?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let bytes = resp.bytes().await.map_err(unreachable)?;
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|e| CallError {
                error: Error::Protocol(format!("{e}")),
                retry_after: None,
            });
        }
        let problem = serde_json::from_slice::<Problem>(&bytes).unwrap_or_else(|_| {
            let code = match status.as_u16() {
                401 => ErrorCode::Unauthorized,
                413 => ErrorCode::PayloadTooLarge,
                s if s >= 500 => ErrorCode::Unavailable,
                _ => ErrorCode::InvalidBody,
            };
            let mut p = Problem::new(code, format!("HTTP {status}"));
            p.status = status.as_u16();
            p
        });
        Err(CallError {
            error: Error::Server(problem),
            retry_after,
        })
    }
}

/// A one-line reason for a transport failure (reqwest's Display hides the cause chain).
fn describe(e: &reqwest::Error) -> String {
    let mut parts = vec![if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "connection failed".to_owned()
    } else {
        "connection lost".to_owned()
    }];
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        parts.push(s.to_string());
        src = s.source();
    }
    parts.dedup();
    parts.join(": ")
}
