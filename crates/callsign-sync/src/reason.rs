//! Why a task is not (fully) synced yet, in words for the list and the provisional marker.
use chrono::{DateTime, Utc};

use crate::events::SyncStatus;
use crate::model::{LocalTask, SyncState};

/// `None` when the task has nothing waiting. `logged_in`: a server and token are saved.
pub fn waiting_reason(
    task: &LocalTask,
    status: &SyncStatus,
    logged_in: bool,
    now: DateTime<Utc>,
) -> Option<String> {
    if task.sync_state == SyncState::Failed {
        let why = task
            .last_error
            .as_deref()
            .unwrap_or("refused by the server");
        return Some(format!("failed: {why}"));
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
            created_at: DateTime::default(),
            modified_at: DateTime::default(),
            sync_state: state,
            last_error: next.map(|_| "Temporarily unavailable".into()),
            open_rows: open,
            next_attempt_at: next,
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

    #[test]
    fn failed_shows_the_server_message() {
        let mut t = task(None, Failed, 1, None);
        t.last_error = Some("Invalid request body (invalid_body): tag \"BAD\" is invalid".into());
        let r = waiting_reason(&t, &SyncStatus::default(), true, DateTime::default()).unwrap();
        assert_eq!(
            r,
            "failed: Invalid request body (invalid_body): tag \"BAD\" is invalid"
        );
    }
}
