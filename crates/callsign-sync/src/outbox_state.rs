//! The outbox row state machine and the classification of the server's answers.
//!
//! ```text
//!  pending --claim--> in_progress --answer 2xx--------------> done
//!     ^                   |  --answer transient / no answer--> pending (next_attempt_at set)
//!     |                   |  --answer permanent 4xx---------> failed (last_error = server message)
//!     +---stale reset-----+   (the process that claimed it died)
//!     +---not sent--------+   (claimed ahead of a batch that was not all answered 2xx; put
//!                              back as it was before the claim: not sent, try not counted)
//!  failed --user retry (NEW idempotency key, same UUID)--> pending
//! ```
//! A row is `sent` from its first claim on; from then on its body and idempotency key are frozen
//! (enforced by a trigger) until the user retries a failed row, which gives it a new key. Nothing
//! leaves `done`.
use callsign_core::dto::{MutationResult, Task};
use callsign_core::ErrorCode;

use crate::model::RowState;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Claim,
    Succeeded,
    Transient,
    Permanent,
    StaleReset,
    NotSent,
    UserRetry,
}

/// The state after `event`, or `None` when the move is not allowed.
pub fn transition(from: RowState, event: Event) -> Option<RowState> {
    use Event::*;
    use RowState::*;
    match (from, event) {
        (Pending, Claim) => Some(InProgress),
        (InProgress, Succeeded) => Some(Done),
        (InProgress, Transient) | (InProgress, StaleReset) | (InProgress, NotSent) => Some(Pending),
        (InProgress, Permanent) => Some(Failed),
        (Failed, UserRetry) => Some(Pending),
        _ => None,
    }
}

/// What one mutation's answer means for its row.
// A task is a few hundred bytes and an Outcome lives only while one batch's answers are
// recorded, so boxing it would buy nothing but an allocation per answer.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Committed (or replayed); the task as the server now has it, if it sent one.
    Done(Option<Task>),
    /// Try again later with the same key and body: why, and the server's code if it sent one
    /// (`recovering` says more than a passing failure).
    Retry(String, Option<ErrorCode>),
    /// Refused for good; the server's code and message.
    Fail(Refusal),
}

/// Why the server refused a request for good: its stable code (when it sent a problem body)
/// and its message. The engine explains the code in plain words ([`crate::reason`]); nobody
/// reads the message to decide anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: Option<ErrorCode>,
    pub message: String,
}

impl From<&str> for Refusal {
    fn from(message: &str) -> Self {
        Refusal {
            code: None,
            message: message.to_owned(),
        }
    }
}

impl From<&crate::error::Error> for Refusal {
    fn from(e: &crate::error::Error) -> Self {
        Refusal {
            code: match e {
                crate::error::Error::Server(p) => Some(p.code),
                _ => None,
            },
            message: e.to_string(),
        }
    }
}

impl Outcome {
    pub fn event(&self) -> Event {
        match self {
            Outcome::Done(_) => Event::Succeeded,
            Outcome::Retry(..) => Event::Transient,
            Outcome::Fail(_) => Event::Permanent,
        }
    }
}

/// Transient: the server's transient codes, `task_not_committed` (the create will land first),
/// any 5xx and 429. Every other 4xx is permanent.
pub fn classify(r: &MutationResult) -> Outcome {
    if (200..300).contains(&r.status) {
        return Outcome::Done(r.task.clone());
    }
    let (message, code, transient) = match &r.error {
        Some(p) => (
            p.to_string(),
            Some(p.code),
            p.code.is_transient() || p.code == ErrorCode::TaskNotCommitted,
        ),
        None => (format!("HTTP status {}", r.status), None, false),
    };
    if transient || r.status >= 500 || r.status == 429 {
        Outcome::Retry(message, code)
    } else {
        Outcome::Fail(Refusal { code, message })
    }
}

/// The least wait before sending an answered row again, where its answer's code asks for one
/// ([`ErrorCode::retry_hint`]): a batch's items carry no `Retry-After` of their own.
pub fn retry_floor(r: &MutationResult) -> Option<std::time::Duration> {
    r.error.as_ref().and_then(|p| p.code.retry_hint())
}

#[cfg(test)]
mod tests {
    use super::*;
    use callsign_core::Problem;
    use rstest::rstest;
    use Event::*;
    use RowState::*;

    #[rstest]
    #[case(Pending, Claim, Some(InProgress))]
    #[case(InProgress, Succeeded, Some(Done))]
    #[case(InProgress, Transient, Some(Pending))]
    #[case(InProgress, Permanent, Some(Failed))]
    #[case(InProgress, StaleReset, Some(Pending))]
    #[case(InProgress, NotSent, Some(Pending))]
    #[case(Pending, NotSent, None)]
    #[case(Failed, UserRetry, Some(Pending))]
    #[case::no_double_claim(InProgress, Claim, None)]
    #[case::done_is_final(Done, Claim, None)]
    #[case::done_not_retried(Done, UserRetry, None)]
    #[case::pending_not_retried(Pending, UserRetry, None)]
    #[case::failed_not_claimed(Failed, Claim, None)]
    #[case::no_answer_without_claim(Pending, Succeeded, None)]
    fn moves(#[case] from: RowState, #[case] ev: Event, #[case] want: Option<RowState>) {
        assert_eq!(transition(from, ev), want);
    }

    fn answer(status: u16, code: Option<ErrorCode>) -> MutationResult {
        MutationResult {
            idempotency_key: "k".into(),
            status,
            replayed: false,
            task: None,
            error: code.map(|c| Problem::new(c, "because")),
        }
    }

    #[rstest]
    #[case::created(201, None, Done)]
    #[case::updated(200, None, Done)]
    #[case::in_progress(409, Some(ErrorCode::RequestInProgress), Pending)]
    #[case::not_committed(409, Some(ErrorCode::TaskNotCommitted), Pending)]
    #[case::unavailable(503, Some(ErrorCode::Unavailable), Pending)]
    #[case::internal(500, Some(ErrorCode::Internal), Pending)]
    #[case::bare_502(502, None, Pending)]
    #[case::rate_limited(429, None, Pending)]
    #[case::reused(422, Some(ErrorCode::IdempotencyKeyReused), Failed)]
    #[case::invalid(422, Some(ErrorCode::InvalidBody), Failed)]
    #[case::no_project(404, Some(ErrorCode::ProjectNotFound), Failed)]
    #[case::task_exists(409, Some(ErrorCode::TaskExists), Failed)]
    #[case::bad_key(400, Some(ErrorCode::IdempotencyKeyInvalid), Failed)]
    fn answers_move_an_in_progress_row(
        #[case] status: u16,
        #[case] code: Option<ErrorCode>,
        #[case] want: RowState,
    ) {
        let outcome = classify(&answer(status, code));
        assert_eq!(transition(InProgress, outcome.event()), Some(want));
        match outcome {
            Outcome::Fail(r) => {
                assert_eq!(r.code, code);
                assert!(code.is_none() || r.message.contains("because"), "{r:?}");
            }
            Outcome::Retry(m, _) => assert!(code.is_none() || m.contains("because"), "{m}"),
            Outcome::Done(_) => {}
        }
    }
}
