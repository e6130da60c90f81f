//! What a task's or the loop's state means, in words for a person: why a task is not synced
//! yet (the list and the provisional marker), what the server refused and what to do about it,
//! and what a failed sync means for the user's tasks. The CLI and the desktop app show these
//! as they are; decisions never read them.
use callsign_core::ErrorCode;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::events::{Plain, SyncStatus};
use crate::model::{LocalTask, SyncState};

/// `None` when the task has nothing waiting. `logged_in`: a server and token are saved.
pub fn waiting_reason(
    task: &LocalTask,
    status: &SyncStatus,
    logged_in: bool,
    now: DateTime<Utc>,
) -> Option<String> {
    if let Some(f) = task_failure(task) {
        return Some(format!("failed: {}", f.summary));
    }
    if let Some(h) = &task.held_by {
        return Some(format!(
            "waiting for {h}, a task above it that the server refused: fix, send again or \
             discard that one"
        ));
    }
    if task.is_local() {
        return Some(if logged_in {
            "on this device: waiting to be sent to a server project".into()
        } else {
            "on this device (local only)".into()
        });
    }
    if task.open_rows == 0 {
        return None;
    }
    let what = if task.key.is_none() {
        "waiting"
    } else {
        "changes waiting"
    };
    if !logged_in {
        return Some(format!("{what}: not logged in"));
    }
    if task.key.is_none() && task.error_code.as_deref() == Some(ErrorCode::Recovering.as_str()) {
        return Some(
            "waiting for its key: the server is recovering from a backup; your task keeps its \
             place and gets its key when the team's devices have checked in"
                .into(),
        );
    }
    let offline = status.online == Some(false);
    let wait_s = task
        .next_attempt_at
        .map(|at| (at - now.timestamp_millis() + 999) / 1000)
        .filter(|s| *s > 0);
    match (offline, wait_s) {
        (true, Some(s)) => Some(format!("{what}: offline, retrying in {s} s")),
        (true, None) => Some(format!("{what}: offline")),
        (false, Some(s)) => {
            let why = task
                .last_error
                .as_deref()
                .unwrap_or("the server asked to wait");
            Some(format!("{what}: retrying in {s} s ({why})"))
        }
        (false, None) => Some(format!("{what}: queued")),
    }
}

/// What would make the server accept a refused task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fix {
    /// Choose another project (the server has no such project).
    Project,
    /// Change the task's fields (the server refused its content).
    Fields,
    /// Send it again as it is.
    Retry,
}

/// A refused task, explained: what the server refused and what to do, the server's own
/// message as the detail, its code, and the kind of fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskFailure {
    pub summary: String,
    pub detail: String,
    pub code: Option<String>,
    pub fix: Fix,
}

/// `None` unless the server refused a request for the task.
pub fn task_failure(task: &LocalTask) -> Option<TaskFailure> {
    if task.sync_state != SyncState::Failed {
        return None;
    }
    let detail = task
        .last_error
        .clone()
        .unwrap_or_else(|| "refused by the server".into());
    let code = task.error_code.as_deref().and_then(parse_code);
    let project = &task.project;
    let (summary, fix) = match code {
        Some(ErrorCode::ProjectNotFound | ErrorCode::UnknownPrefix) => (
            format!(
                "The server has no project {project}. Choose one of its projects to send it \
                 there, or discard it"
            ),
            Fix::Project,
        ),
        Some(ErrorCode::InvalidBody | ErrorCode::PayloadTooLarge) => (
            "The server refused what the task says (see details). Edit the task and save to \
             send it again, or discard it"
                .into(),
            Fix::Fields,
        ),
        Some(ErrorCode::TaskExists) => (
            "The server already has a different task with this task's ID. Send it again or \
             discard this copy"
                .into(),
            Fix::Retry,
        ),
        Some(ErrorCode::TaskBlocked) => (
            "It has subtasks that are still open, perhaps added on another device (see \
             details). Complete them, then send it again, or discard the change"
                .into(),
            Fix::Retry,
        ),
        Some(ErrorCode::InvalidParent) => (
            "The server will not put it under its parent task (see details). Send it again \
             once the parent is fixed, or discard it"
                .into(),
            Fix::Retry,
        ),
        Some(ErrorCode::TaskNotFound) => (
            "The server does not know this task. Send it again or discard the change".into(),
            Fix::Retry,
        ),
        _ => (
            "The server refused it (see details). Send it again or discard it".into(),
            Fix::Retry,
        ),
    };
    Some(TaskFailure {
        summary,
        detail,
        code: task.error_code.clone(),
        fix,
    })
}

fn parse_code(s: &str) -> Option<ErrorCode> {
    serde_json::from_value(serde_json::Value::String(s.to_owned())).ok()
}

/// A failed sync pass in plain words: what happened and what it means for the user's tasks.
/// `code` is [`crate::Error::code`] of the error recorded; `detail` its message.
pub fn sync_problem(code: Option<&str>, detail: &str) -> Plain {
    const SAFE: &str = "your tasks are saved here";
    let summary = match code {
        Some("unreachable") => {
            format!("Can't reach the server — {SAFE} and will sync when it's back")
        }
        Some("unauthorized") => format!(
            "The server does not accept this device's token — {SAFE}; set a new token in \
             Settings (or `callsign login`)"
        ),
        Some("not_logged_in") => {
            format!("No server is set up — {SAFE} (local only); `callsign login` connects one")
        }
        Some("protocol") => {
            format!("The server's answer was not Callsign's — {SAFE}; check the server URL")
        }
        Some("untrusted") => format!(
            "The server's answer did not add up, so none of it was used — {SAFE} and stay \
             queued; check the server (detail below)"
        ),
        Some("answer_too_large") => format!(
            "The server sent more than Callsign reads at once — {SAFE}; check the server URL"
        ),
        Some("storage") => "This device's task database could not be written — check the \
             disk; nothing already saved is lost"
            .to_string(),
        Some("still_queued") => {
            format!("Not everything reached the server yet — {SAFE} and stay queued (why below)")
        }
        Some("recovering") => format!(
            "The server is recovering from a backup — {SAFE}; new tasks get their keys once the \
             team's devices have checked in"
        ),
        Some(c) if parse_code(c).is_some_and(ErrorCode::is_transient) => {
            format!("The server is having trouble — {SAFE} and will be sent when it recovers")
        }
        _ => format!("Sync stopped: the server refused the request — {SAFE}"),
    };
    Plain {
        summary,
        detail: detail.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use callsign_core::dto::TaskStatus;
    use rstest::rstest;
    use uuid::Uuid;

    fn task(key: Option<&str>, state: SyncState, open: u32, next: Option<i64>) -> LocalTask {
        LocalTask {
            uuid: Uuid::nil(),
            key: key.map(str::to_owned),
            project: "SYN".into(),
            number: key.map(|_| 1),
            description: "d".into(),
            notes: String::new(),
            status: TaskStatus::Pending,
            tags: vec![],
            due: None,
            priority: None,
            parent: None,
            previous_keys: vec![],
            conflicts: vec![],
            children: 0,
            open_children: 0,
            held_by: None,
            created_at: DateTime::default(),
            modified_at: DateTime::default(),
            sync_state: state,
            last_error: next.map(|_| "Temporarily unavailable".into()),
            error_code: None,
            open_rows: open,
            next_attempt_at: next,
            assignee: None,
            created_by: None,
            origin: None,
            commits: Vec::new(),
        }
    }

    const NOW_MS: i64 = 100_000;
    use SyncState::*;

    #[rstest]
    #[case::synced(task(Some("SYN-1"), Synced, 0, None), Some(true), true, None)]
    #[case::not_logged_in(
        task(None, Provisional, 1, None),
        None,
        false,
        Some("waiting: not logged in")
    )]
    #[case::offline(
        task(None, Provisional, 1, None),
        Some(false),
        true,
        Some("waiting: offline")
    )]
    #[case::queued(
        task(None, Provisional, 1, None),
        Some(true),
        true,
        Some("waiting: queued")
    )]
    #[case::retrying(task(None, Provisional, 1, Some(NOW_MS + 19_001)), Some(true), true,
        Some("waiting: retrying in 20 s (Temporarily unavailable)"))]
    #[case::retry_due(
        task(None, Provisional, 1, Some(NOW_MS)),
        Some(true),
        true,
        Some("waiting: queued")
    )]
    #[case::offline_retrying(task(None, Provisional, 1, Some(NOW_MS + 2_500)), Some(false), true,
        Some("waiting: offline, retrying in 3 s"))]
    #[case::edit_queued(
        task(Some("SYN-1"), Synced, 1, None),
        Some(false),
        true,
        Some("changes waiting: offline")
    )]
    #[case::recovering(
        LocalTask {
            error_code: Some("recovering".into()),
            last_error: Some("The server is recovering from a backup (recovering): …".into()),
            ..task(None, Provisional, 1, Some(NOW_MS + 59_000))
        },
        Some(true),
        true,
        Some("waiting for its key: the server is recovering from a backup; your task keeps its \
              place and gets its key when the team's devices have checked in")
    )]
    fn reasons(
        #[case] t: LocalTask,
        #[case] online: Option<bool>,
        #[case] logged_in: bool,
        #[case] want: Option<&str>,
    ) {
        let status = SyncStatus {
            online,
            ..SyncStatus::default()
        };
        let now = DateTime::from_timestamp_millis(NOW_MS).unwrap();
        assert_eq!(waiting_reason(&t, &status, logged_in, now).as_deref(), want);
    }

    #[rstest]
    #[case::no_project(Some("project_not_found"), Fix::Project, "has no project SYN")]
    #[case::unknown_prefix(Some("unknown_prefix"), Fix::Project, "Choose one of its projects")]
    #[case::bad_body(Some("invalid_body"), Fix::Fields, "Edit the task")]
    #[case::too_big(Some("payload_too_large"), Fix::Fields, "Edit the task")]
    #[case::exists(Some("task_exists"), Fix::Retry, "different task")]
    #[case::no_code(None, Fix::Retry, "refused it")]
    #[case::unknown_code(Some("from_the_future"), Fix::Retry, "refused it")]
    fn failures_say_what_to_do(#[case] code: Option<&str>, #[case] fix: Fix, #[case] says: &str) {
        let mut t = task(None, Failed, 1, None);
        t.last_error = Some("No such project (project_not_found): SYN".into());
        t.error_code = code.map(str::to_owned);
        let f = task_failure(&t).unwrap();
        assert_eq!(f.fix, fix);
        assert!(f.summary.contains(says), "{}", f.summary);
        assert_eq!(f.detail, "No such project (project_not_found): SYN");
        let r = waiting_reason(&t, &SyncStatus::default(), true, DateTime::default()).unwrap();
        assert_eq!(r, format!("failed: {}", f.summary));
        t.sync_state = Provisional;
        assert_eq!(task_failure(&t), None);
    }

    #[rstest]
    #[case(false, "on this device (local only)")]
    #[case(true, "on this device: waiting to be sent to a server project")]
    fn the_local_inbox_says_it_stays_here(#[case] logged_in: bool, #[case] want: &str) {
        let mut t = task(None, Provisional, 1, None);
        t.project = callsign_core::LOCAL_PROJECT.into();
        let r = waiting_reason(&t, &SyncStatus::default(), logged_in, DateTime::default());
        assert_eq!(r.as_deref(), Some(want));
    }

    #[rstest]
    #[case(
        Some("unreachable"),
        "Can't reach the server — your tasks are saved here"
    )]
    #[case(Some("unauthorized"), "does not accept this device's token")]
    #[case(Some("unavailable"), "having trouble")]
    #[case(Some("internal"), "having trouble")]
    #[case(Some("protocol"), "check the server URL")]
    #[case(Some("untrusted"), "did not add up")]
    #[case(Some("answer_too_large"), "more than Callsign reads")]
    #[case(Some("invalid_body"), "refused the request")]
    #[case(None, "refused the request")]
    fn sync_problems_in_plain_words(#[case] code: Option<&str>, #[case] says: &str) {
        let p = sync_problem(code, "tcp connect error: Connection refused (os error 111)");
        assert!(p.summary.contains(says), "{}", p.summary);
        assert!(!p.summary.contains("os error"), "{}", p.summary);
        assert_eq!(
            p.detail,
            "tcp connect error: Connection refused (os error 111)"
        );
    }
}
