use serde::{Deserialize, Serialize};

/// Stable machine-readable error codes. Clients match on these, never on messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// No or bad bearer token.
    Unauthorized,
    /// A task reference that is neither a UUID nor a key.
    InvalidRef,
    /// A key whose prefix names no project of this account.
    UnknownPrefix,
    /// No task with that UUID or number in this account.
    TaskNotFound,
    /// No project with that prefix in this account.
    ProjectNotFound,
    /// A create or update without an `Idempotency-Key` header.
    IdempotencyKeyMissing,
    /// An `Idempotency-Key` that is empty, too long or not printable ASCII.
    IdempotencyKeyInvalid,
    /// The same idempotency key is being processed right now; retry later.
    RequestInProgress,
    /// The idempotency key was used before with a different request.
    IdempotencyKeyReused,
    /// The UUID belongs to a task created by a different request.
    TaskExists,
    /// An update to a task that has no committed create yet, or a subtask whose parent has no
    /// key yet; retry after that create is answered.
    TaskNotCommitted,
    /// A completion of a task that has open subtasks (the message names them).
    TaskBlocked,
    /// A subtask's parent that is not a task of this account, is in another project, is
    /// completed or deleted, or is as deep as keys go.
    InvalidParent,
    PrefixTaken,
    /// A new prefix that sounds like one a project of the account has or had (said as a word
    /// or spelled out, [`crate::alike`]); the message names that project. Sent again with
    /// `allow_similar: true`, it is taken.
    PrefixSoundsAlike,
    InvalidPrefix,
    /// A body that does not parse or breaks a field rule (unknown fields included).
    InvalidBody,
    InvalidCursor,
    BatchTooLarge,
    PayloadTooLarge,
    /// The server could not finish; nothing was numbered; retry with the same idempotency key.
    Unavailable,
    /// The task's project is recovering from a restored backup: the server keeps the task but
    /// numbers nothing until the team's devices have brought back the keys they hold; retry
    /// later with the same idempotency key.
    Recovering,
    /// `POST /v1/recovery/witness` when the server has not been rolled back (in the last 90
    /// days): there is nothing to bring back, and a witness binds the numbers it names.
    NoRollback,
    NotFound,
    Internal,
    /// `/readyz`: a database the server needs cannot be read or written right now.
    NotReady,
    /// The path exists but not with this method; the `Allow` header lists the ones it has.
    MethodNotAllowed,
    /// Too many failed authentications from this address; wait `Retry-After` seconds.
    TooManyRequests,
    /// A query parameter other than the cursor is malformed (e.g. `limit=-1`).
    InvalidQuery,
    /// A header that must appear once (`Authorization`, `Idempotency-Key`) appears twice.
    DuplicateHeader,
    /// The request line is longer than the server reads.
    UriTooLong,
    /// The request's headers are larger than the server reads.
    HeadersTooLarge,
    /// The request body did not arrive within the server's body-read timeout.
    RequestTimeout,
    /// Taskwarrior sync: no `X-Client-Id` header, or not a UUID.
    InvalidClientId,
    /// Taskwarrior sync: a client id the server never issued (or replaced since).
    UnknownClient,
    /// Taskwarrior sync: the version asked for is no longer in the chain.
    VersionGone,
    /// A body of a content type the route does not take.
    UnsupportedMediaType,
    /// The server cannot do this with its configuration (the message says what is missing).
    NotImplemented,
    /// The token's member may not do this (only owners manage members, invites and projects).
    Forbidden,
    /// No current member of the account has this name.
    MemberNotFound,
    /// The account has (or had) a member of this name.
    MemberTaken,
    /// The request would leave the team without an owner.
    LastOwner,
    /// No invite has this code.
    InviteNotFound,
    /// The invite was redeemed already (each is single use).
    InviteUsed,
    /// The invite's time ran out.
    InviteExpired,
    /// An assignee who is not a current member of the team.
    UnknownMember,
    /// An import's key that names another task here, or that a project's prefix would name
    /// (the message says which); nothing was numbered.
    KeyTaken,
    /// An import's key that was imported already: the message names the task it is.
    AlreadyImported,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::InvalidRef => "invalid_ref",
            ErrorCode::UnknownPrefix => "unknown_prefix",
            ErrorCode::TaskNotFound => "task_not_found",
            ErrorCode::ProjectNotFound => "project_not_found",
            ErrorCode::IdempotencyKeyMissing => "idempotency_key_missing",
            ErrorCode::IdempotencyKeyInvalid => "idempotency_key_invalid",
            ErrorCode::RequestInProgress => "request_in_progress",
            ErrorCode::IdempotencyKeyReused => "idempotency_key_reused",
            ErrorCode::TaskExists => "task_exists",
            ErrorCode::TaskNotCommitted => "task_not_committed",
            ErrorCode::TaskBlocked => "task_blocked",
            ErrorCode::InvalidParent => "invalid_parent",
            ErrorCode::PrefixTaken => "prefix_taken",
            ErrorCode::PrefixSoundsAlike => "prefix_sounds_alike",
            ErrorCode::InvalidPrefix => "invalid_prefix",
            ErrorCode::InvalidBody => "invalid_body",
            ErrorCode::InvalidCursor => "invalid_cursor",
            ErrorCode::BatchTooLarge => "batch_too_large",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::Recovering => "recovering",
            ErrorCode::NoRollback => "no_rollback",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Internal => "internal",
            ErrorCode::NotReady => "not_ready",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::TooManyRequests => "too_many_requests",
            ErrorCode::InvalidQuery => "invalid_query",
            ErrorCode::DuplicateHeader => "duplicate_header",
            ErrorCode::UriTooLong => "uri_too_long",
            ErrorCode::HeadersTooLarge => "headers_too_large",
            ErrorCode::RequestTimeout => "request_timeout",
            ErrorCode::InvalidClientId => "invalid_client_id",
            ErrorCode::UnknownClient => "unknown_client",
            ErrorCode::VersionGone => "version_gone",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::NotImplemented => "not_implemented",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::MemberNotFound => "member_not_found",
            ErrorCode::MemberTaken => "member_taken",
            ErrorCode::LastOwner => "last_owner",
            ErrorCode::InviteNotFound => "invite_not_found",
            ErrorCode::InviteUsed => "invite_used",
            ErrorCode::InviteExpired => "invite_expired",
            ErrorCode::UnknownMember => "unknown_member",
            ErrorCode::KeyTaken => "key_taken",
            ErrorCode::AlreadyImported => "already_imported",
        }
    }

    /// The HTTP status that goes with each code: the one table from code to status.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::Unauthorized => 401,
            ErrorCode::InvalidRef
            | ErrorCode::IdempotencyKeyMissing
            | ErrorCode::IdempotencyKeyInvalid
            | ErrorCode::InvalidCursor
            | ErrorCode::InvalidQuery
            | ErrorCode::DuplicateHeader
            | ErrorCode::InvalidClientId => 400,
            ErrorCode::UnknownClient | ErrorCode::Forbidden => 403,
            ErrorCode::VersionGone | ErrorCode::InviteUsed | ErrorCode::InviteExpired => 410,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::NotImplemented => 501,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::RequestTimeout => 408,
            ErrorCode::UriTooLong => 414,
            ErrorCode::TooManyRequests => 429,
            ErrorCode::HeadersTooLarge => 431,
            ErrorCode::UnknownPrefix
            | ErrorCode::TaskNotFound
            | ErrorCode::ProjectNotFound
            | ErrorCode::MemberNotFound
            | ErrorCode::InviteNotFound
            | ErrorCode::NotFound => 404,
            ErrorCode::RequestInProgress
            | ErrorCode::TaskExists
            | ErrorCode::PrefixTaken
            | ErrorCode::PrefixSoundsAlike
            | ErrorCode::TaskNotCommitted
            | ErrorCode::TaskBlocked
            | ErrorCode::MemberTaken
            | ErrorCode::LastOwner
            | ErrorCode::NoRollback
            | ErrorCode::KeyTaken
            | ErrorCode::AlreadyImported => 409,
            ErrorCode::PayloadTooLarge | ErrorCode::BatchTooLarge => 413,
            ErrorCode::IdempotencyKeyReused
            | ErrorCode::InvalidPrefix
            | ErrorCode::InvalidBody
            | ErrorCode::InvalidParent
            | ErrorCode::UnknownMember => 422,
            ErrorCode::Unavailable | ErrorCode::Recovering | ErrorCode::NotReady => 503,
            ErrorCode::Internal => 500,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            ErrorCode::Unauthorized => "Missing or invalid bearer token",
            ErrorCode::InvalidRef => "Not a task UUID or key",
            ErrorCode::UnknownPrefix => "No project with that prefix",
            ErrorCode::TaskNotFound => "No such task",
            ErrorCode::ProjectNotFound => "No such project",
            ErrorCode::IdempotencyKeyMissing => "Idempotency-Key header required",
            ErrorCode::IdempotencyKeyInvalid => "Invalid Idempotency-Key header",
            ErrorCode::RequestInProgress => "A request with this idempotency key is in progress",
            ErrorCode::IdempotencyKeyReused => "Idempotency key reused with a different request",
            ErrorCode::TaskExists => "A different task already has this UUID",
            ErrorCode::TaskNotCommitted => "The task's create has not been committed yet",
            ErrorCode::TaskBlocked => "The task has open subtasks",
            ErrorCode::InvalidParent => "Not a valid parent for this task",
            ErrorCode::PrefixTaken => "Prefix already in use",
            ErrorCode::PrefixSoundsAlike => "Prefix sounds like another project's",
            ErrorCode::InvalidPrefix => "Invalid prefix",
            ErrorCode::InvalidBody => "Invalid request body",
            ErrorCode::InvalidCursor => "Invalid cursor",
            ErrorCode::BatchTooLarge => "Too many mutations in one batch",
            ErrorCode::PayloadTooLarge => "Request body too large",
            ErrorCode::Unavailable => "Temporarily unavailable",
            ErrorCode::Recovering => "The server is recovering from a backup",
            ErrorCode::NoRollback => "No rollback to recover from",
            ErrorCode::NotFound => "Not found",
            ErrorCode::Internal => "Internal error",
            ErrorCode::NotReady => "Not ready",
            ErrorCode::MethodNotAllowed => "Method not allowed",
            ErrorCode::TooManyRequests => "Too many requests",
            ErrorCode::InvalidQuery => "Invalid query parameter",
            ErrorCode::DuplicateHeader => "Header sent more than once",
            ErrorCode::UriTooLong => "Request line too long",
            ErrorCode::HeadersTooLarge => "Request headers too large",
            ErrorCode::RequestTimeout => "Request body too slow",
            ErrorCode::InvalidClientId => "Missing or malformed X-Client-Id",
            ErrorCode::UnknownClient => "Unknown Taskwarrior client id",
            ErrorCode::VersionGone => "Version no longer kept",
            ErrorCode::UnsupportedMediaType => "Unsupported content type",
            ErrorCode::NotImplemented => "Not available on this server",
            ErrorCode::Forbidden => "Only the team's owners may do this",
            ErrorCode::MemberNotFound => "No such member",
            ErrorCode::MemberTaken => "Member name already in use",
            ErrorCode::LastOwner => "The team would have no owner",
            ErrorCode::InviteNotFound => "No such invite code",
            ErrorCode::InviteUsed => "Invite code already used",
            ErrorCode::InviteExpired => "Invite code expired",
            ErrorCode::UnknownMember => "Not a member of the team",
            ErrorCode::KeyTaken => "Key taken",
            ErrorCode::AlreadyImported => "Already imported",
        }
    }

    /// The least wait before sending the same request again, where the code asks for more than
    /// a passing failure's backoff: a project recovering from a backup numbers nothing for
    /// hours. The server sends it as `Retry-After`; a device applies it to a batch's items too.
    pub fn retry_hint(self) -> Option<std::time::Duration> {
        match self {
            ErrorCode::Recovering => Some(std::time::Duration::from_secs(60)),
            _ => None,
        }
    }

    /// Worth retrying unchanged later (with the same idempotency key).
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ErrorCode::RequestInProgress
                | ErrorCode::Unavailable
                | ErrorCode::Recovering
                | ErrorCode::Internal
                | ErrorCode::NotReady
                | ErrorCode::TooManyRequests
                | ErrorCode::RequestTimeout
        )
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An RFC 9457 problem body (`application/problem+json`) with Callsign's stable `code`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Problem {
    #[serde(rename = "type")]
    pub type_: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    pub code: ErrorCode,
}

impl Problem {
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        Problem {
            type_: format!("https://callsign.invalid/problems/{}", code.as_str()),
            title: code.title().to_owned(),
            status: code.status(),
            detail: detail.into(),
            code,
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.title, self.code, self.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_str_matches_serde() {
        for code in [
            ErrorCode::InvalidRef,
            ErrorCode::IdempotencyKeyReused,
            ErrorCode::RequestInProgress,
            ErrorCode::TaskNotCommitted,
            ErrorCode::TaskBlocked,
            ErrorCode::InvalidParent,
            ErrorCode::PrefixSoundsAlike,
            ErrorCode::NotReady,
            ErrorCode::MethodNotAllowed,
            ErrorCode::TooManyRequests,
            ErrorCode::InvalidQuery,
            ErrorCode::DuplicateHeader,
            ErrorCode::UriTooLong,
            ErrorCode::HeadersTooLarge,
            ErrorCode::RequestTimeout,
            ErrorCode::InvalidClientId,
            ErrorCode::UnknownClient,
            ErrorCode::VersionGone,
            ErrorCode::UnsupportedMediaType,
            ErrorCode::NotImplemented,
            ErrorCode::Forbidden,
            ErrorCode::MemberNotFound,
            ErrorCode::MemberTaken,
            ErrorCode::LastOwner,
            ErrorCode::InviteNotFound,
            ErrorCode::InviteUsed,
            ErrorCode::InviteExpired,
            ErrorCode::UnknownMember,
        ] {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }
}
