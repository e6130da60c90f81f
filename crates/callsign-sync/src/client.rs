//! The HTTP side: `POST /v1/sync`, `GET /v1/changes`, `GET`/`POST /v1/projects`,
//! `PATCH /v1/projects/{prefix}`, the team's `GET /v1/me`, `GET /v1/members` and
//! `POST /v1/invites`, with the bearer token; `POST /v1/join` and the reconnect probe
//! `GET /healthz` without it.
//!
//! Every failure comes back as a [`CallError`] that says whether to retry and honours the
//! server's `Retry-After`. No request waits longer than [`REQUEST_TIMEOUT`]; connecting gives up
//! after [`CONNECT_TIMEOUT`], so an unreachable server is reported quickly.
//!
//! Nothing the network sends is taken on trust here: an answer is read up to [`MAX_ANSWER`]
//! bytes and no further ([`Error::AnswerTooLarge`]), and a redirect is followed only within the
//! configured origin (scheme, host and port), so task text is never sent anywhere else.
use std::time::Duration;

use callsign_core::dto::{
    Invite, JoinRequest, Joined, Member, MemberList, MutationResult, NewInvite, ProjectList,
    SyncRequest, Task, WitnessRequest, WitnessResponse,
};
use callsign_core::{ErrorCode, Problem};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::backoff::parse_retry_after;
use crate::error::Error;
use crate::settings::Token;

pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the reconnect probe waits for `/healthz`.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// The largest answer read, in bytes. A full page of the change feed (1000 tasks) is a few
/// MiB; one of a thousand tasks each at the field limits is near this, so a caller that meets
/// the cap asks for less ([`crate::pass`] halves its batch or page).
pub const MAX_ANSWER: usize = 64 * 1024 * 1024;
/// How long an idle pooled connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(30);
/// Redirects followed within the origin, at most.
const MAX_REDIRECTS: usize = 5;

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
    /// `None` for a device with no token yet (it can only join).
    token: Option<Token>,
}

impl Client {
    pub fn new(base: &str, token: Token) -> Result<Client, Error> {
        Client::with(base, Some(token))
    }

    /// A client with no token: for `POST /v1/join` only.
    pub fn anonymous(base: &str) -> Result<Client, Error> {
        Client::with(base, None)
    }

    fn with(base: &str, token: Option<Token>) -> Result<Client, Error> {
        let origin = reqwest::Url::parse(base)
            .map_err(|e| Error::Invalid(format!("server URL {base:?}: {e}")))?
            .origin();
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.url().origin() != origin {
                let to = attempt.url().to_string();
                attempt.error(OffOrigin(to))
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(OffOrigin("a redirect loop".into()))
            } else {
                attempt.follow()
            }
        });
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            // Below the server's idle timeout (60 s), so a pooled connection is never one the
            // server has just closed.
            .pool_idle_timeout(POOL_IDLE)
            .redirect(redirects)
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

    pub async fn sync(&self, req: &SyncRequest) -> Result<SyncAnswer, CallError> {
        let rb = self.http.post(format!("{}/v1/sync", self.base)).json(req);
        let raw: RawSync = self.send(rb).await?;
        Ok(SyncAnswer {
            results: raw.results,
            page: Page::read(raw.changes, raw.cursor, raw.has_more),
        })
    }

    /// `GET /v1/changes?since=C&wait=S&limit=1`: held by the server until a change commits
    /// in the account or `wait` passes. Whether anything is newer than `since` (the sync
    /// pass then reads it as usual); an old server that ignores `wait` answers at once.
    pub async fn changed_since(
        &self,
        since: Option<&str>,
        wait: Duration,
    ) -> Result<bool, CallError> {
        let mut q = vec![
            ("limit", "1".to_owned()),
            ("wait", wait.as_secs().to_string()),
        ];
        if let Some(s) = since {
            q.push(("since", s.to_owned()));
        }
        let rb = self
            .http
            .get(format!("{}/v1/changes", self.base))
            .query(&q)
            .timeout(wait + Duration::from_secs(15));
        let raw: RawPage = self.send(rb).await?;
        Ok(!raw.changes.is_empty() || raw.has_more || since.is_some_and(|s| s != raw.cursor))
    }

    pub async fn changes(&self, since: Option<&str>, limit: usize) -> Result<Page, CallError> {
        let mut q = vec![("limit", limit.to_string())];
        if let Some(s) = since {
            q.push(("since", s.to_owned()));
        }
        let rb = self.http.get(format!("{}/v1/changes", self.base)).query(&q);
        let raw: RawPage = self.send(rb).await?;
        let mut page = Page::read(raw.changes, raw.cursor, raw.has_more);
        page.rollback_at = raw.rollback_at;
        Ok(page)
    }

    pub async fn projects(&self) -> Result<ProjectList, CallError> {
        let rb = self.http.get(format!("{}/v1/projects", self.base));
        self.send(rb).await
    }

    /// Creates a project (`prefix` any case; the server checks it and answers `409
    /// prefix_taken` for one in use, `409 prefix_sounds_alike` for one that sounds like
    /// another project's unless `allow_similar`).
    pub async fn create_project(
        &self,
        name: &str,
        prefix: &str,
        allow_similar: bool,
    ) -> Result<callsign_core::dto::Project, CallError> {
        let body = callsign_core::dto::NewProject {
            name: name.to_owned(),
            prefix: prefix.to_owned(),
            allow_similar,
        };
        let rb = self
            .http
            .post(format!("{}/v1/projects", self.base))
            .json(&body);
        self.send(rb).await
    }

    /// Renames a project (`prefix` is its prefix now): `PATCH /v1/projects/{prefix}`. The
    /// server answers `409 prefix_taken` for a prefix any other project of the account has or
    /// had, `404 project_not_found` for no such project.
    pub async fn update_project(
        &self,
        prefix: &str,
        patch: &callsign_core::dto::ProjectPatch,
    ) -> Result<callsign_core::dto::Project, CallError> {
        let rb = self
            .http
            .patch(format!("{}/v1/projects/{prefix}", self.base))
            .json(patch);
        self.send(rb).await
    }

    /// Redeems an invite code: `POST /v1/join` (no token); the new member and their token.
    pub async fn join(&self, req: &JoinRequest) -> Result<Joined, CallError> {
        let rb = self.http.post(format!("{}/v1/join", self.base)).json(req);
        self.send(rb).await
    }

    /// Whose the token is: `GET /v1/me`.
    pub async fn me(&self) -> Result<Member, CallError> {
        self.send(self.http.get(format!("{}/v1/me", self.base)))
            .await
    }

    /// The team: `GET /v1/members`.
    pub async fn members(&self) -> Result<MemberList, CallError> {
        self.send(self.http.get(format!("{}/v1/members", self.base)))
            .await
    }

    /// `POST /v1/recovery/witness`: keyed tasks this device holds, after a rollback.
    pub async fn witness(&self, req: &WitnessRequest) -> Result<WitnessResponse, CallError> {
        let rb = self
            .http
            .post(format!("{}/v1/recovery/witness", self.base))
            .json(req);
        self.send(rb).await
    }

    /// An invite code (owners): `POST /v1/invites`.
    pub async fn invite(&self, req: &NewInvite) -> Result<Invite, CallError> {
        let rb = self
            .http
            .post(format!("{}/v1/invites", self.base))
            .json(req);
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
        let rb = match &self.token {
            Some(t) => rb.bearer_auth(t.expose()),
            None => rb,
        };
        let mut resp = rb.send().await.map_err(|e| match off_origin(&e) {
            Some(to) => CallError {
                error: Error::Untrusted(format!(
                    "the server at {} redirected to {to}; a redirect off the configured \
                         origin is never followed (set the server URL to where it should go)",
                    self.base
                )),
                retry_after: None,
            },
            None => unreachable(e),
        })?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let too_large = || CallError {
            error: Error::AnswerTooLarge { limit: MAX_ANSWER },
            retry_after: None,
        };
        if resp.content_length().is_some_and(|n| n > MAX_ANSWER as u64) {
            return Err(too_large());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(unreachable)? {
            if bytes.len() + chunk.len() > MAX_ANSWER {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
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

/// A page of changes (of `GET /v1/changes`, or carried by a `POST /v1/sync` answer), each task
/// read on its own: one that is not a task's JSON is left out and named in `unreadable`, so it
/// cannot make the page, and every later sync, fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub changes: Vec<Task>,
    pub unreadable: Vec<String>,
    pub cursor: String,
    pub has_more: bool,
    /// When the server was last rolled back, as `GET /v1/changes` tells it (docs/RECOVERY.md).
    pub rollback_at: Option<i64>,
}

impl Page {
    fn read(raw: Vec<serde_json::Value>, cursor: String, has_more: bool) -> Page {
        let mut changes = Vec::with_capacity(raw.len());
        let mut unreadable = Vec::new();
        for v in raw {
            let uuid = v.get("uuid").and_then(|u| u.as_str()).map(str::to_owned);
            match serde_json::from_value::<Task>(v) {
                Ok(t) => changes.push(t),
                Err(e) => unreadable.push(format!(
                    "task {}: not a task: {e}",
                    uuid.as_deref().unwrap_or("(no uuid)")
                )),
            }
        }
        Page {
            changes,
            unreadable,
            cursor,
            has_more,
            rollback_at: None,
        }
    }
}

/// The answer to `POST /v1/sync`: one result per mutation, and the changes since `since`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncAnswer {
    pub results: Vec<MutationResult>,
    pub page: Page,
}

#[derive(Deserialize)]
struct RawPage {
    changes: Vec<serde_json::Value>,
    cursor: String,
    has_more: bool,
    #[serde(default)]
    rollback_at: Option<i64>,
}

#[derive(Deserialize)]
struct RawSync {
    results: Vec<MutationResult>,
    changes: Vec<serde_json::Value>,
    cursor: String,
    has_more: bool,
}

/// Why a redirect was not followed: where it pointed.
#[derive(Debug)]
struct OffOrigin(String);

impl std::fmt::Display for OffOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "redirect to {} refused", self.0)
    }
}

impl std::error::Error for OffOrigin {}

/// The target of a redirect the policy refused, if that is why the request failed.
fn off_origin(e: &reqwest::Error) -> Option<String> {
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(o) = s.downcast_ref::<OffOrigin>() {
            return Some(o.0.clone());
        }
        src = s.source();
    }
    None
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
