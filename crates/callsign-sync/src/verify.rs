//! What the server says is checked before it is stored. Pure: the pass ([`crate::pass`]) calls
//! these on every answer and every page of the change feed.
//!
//! - A success answers the request it claims to: the same task UUID; for a create, the project
//!   asked for and a key; a task that obeys the field rules ([`validate::task`]: key is exactly
//!   `PROJECT-NUMBER`, number in range, description, notes and tags within the server's own
//!   limits). One key answered for several tasks is no answer for any of them.
//! - A task of the change feed that breaks the same rules is skipped, the rest applied.
//!
//! An answer that fails a check never marks its row done and never binds a key: the row stays
//! queued (retried under the same idempotency key) and the pass reports the server as untrusted.
//!
//! The pass adds what needs the store: a key answered for a task must not name another task on
//! this device (`Store::key_owner`). Around these checks, the client reads an answer up to
//! `client::MAX_ANSWER` (past it, the pass halves its batch or its feed page) and each task of
//! a feed page on its own (`client::Page`), so one unreadable task is skipped and named rather
//! than failing the page. A feed that says there is more but does not advance its cursor is an
//! error, and a pass pulls at most `pass::MAX_PULL_PAGES` pages (`PassReport::more` asks for
//! another pass).
use std::collections::{HashMap, HashSet};

use callsign_core::dto::{MutationOp, Task};
use callsign_core::validate;
use uuid::Uuid;

use crate::model::OutboxRow;

/// Checks a success's task against the request it answers; `Err` says what does not match.
pub fn answer(row: &OutboxRow, task: Option<&Task>) -> Result<(), String> {
    let t = task.ok_or_else(|| format!("a success for task {} carried no task", row.uuid))?;
    if t.uuid != row.uuid {
        return Err(format!(
            "asked about task {}, answered with task {}",
            row.uuid, t.uuid
        ));
    }
    validate::task(t).map_err(|e| format!("task {}: {e}", t.uuid))?;
    let asked = row
        .body
        .get("project")
        .and_then(|p| p.as_str())
        .map(str::to_ascii_uppercase);
    let parent = row
        .body
        .get("parent")
        .and_then(|p| p.as_str())
        .and_then(|p| Uuid::parse_str(p).ok());
    if row.op == MutationOp::Create {
        // A subtask goes where its parent is, which a move may have changed since.
        if let Some(p) = parent {
            if t.parent != Some(p) {
                return Err(format!(
                    "task {} was created under {p}, answered under {:?}",
                    t.uuid, t.parent
                ));
            }
        } else if Some(&t.project) != asked.as_ref() {
            return Err(format!(
                "task {} was created in {}, answered in {}",
                t.uuid,
                asked.unwrap_or_default(),
                t.project
            ));
        }
        if t.key.is_none() {
            return Err(format!("task {} was created with no key", t.uuid));
        }
    } else if let Some(to) = asked.filter(|to| *to != t.project) {
        return Err(format!(
            "task {} was moved to {to}, answered in {}",
            t.uuid, t.project
        ));
    }
    Ok(())
}

/// The keys that `tasks` give to more than one UUID.
pub fn shared_keys<'a>(tasks: impl IntoIterator<Item = &'a Task>) -> HashSet<String> {
    let mut owner: HashMap<&str, Uuid> = HashMap::new();
    let mut shared = HashSet::new();
    for t in tasks {
        if let Some(k) = &t.key {
            if let Some(u) = owner.insert(k, t.uuid) {
                if u != t.uuid {
                    shared.insert(k.clone());
                }
            }
        }
    }
    shared
}

/// Splits a page of the change feed into the tasks to apply and why each other one is skipped.
pub fn feed(tasks: &[Task]) -> (Vec<Task>, Vec<String>) {
    let shared = shared_keys(tasks);
    let mut good = Vec::with_capacity(tasks.len());
    let mut bad = Vec::new();
    for t in tasks {
        let why = match validate::task(t) {
            Err(e) => Some(e.to_string()),
            Ok(()) => t
                .key
                .as_ref()
                .filter(|k| shared.contains(*k))
                .map(|k| format!("key {k} was sent for more than one task")),
        };
        match why {
            None => good.push(t.clone()),
            Some(why) => bad.push(format!("task {}: {}", t.uuid, clip(&why))),
        }
    }
    (good, bad)
}

/// A reason quoting server text, cut to a readable length.
pub fn clip(s: &str) -> String {
    const MAX: usize = 200;
    if s.chars().count() <= MAX {
        return s.to_owned();
    }
    let cut: String = s.chars().take(MAX).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use callsign_core::dto::TaskStatus;
    use rstest::rstest;

    fn task(uuid: Uuid, key: Option<(&str, u64)>) -> Task {
        Task {
            uuid,
            key: key.map(|(p, n)| format!("{p}-{n}")),
            project: key.map_or("SYN", |(p, _)| p).to_owned(),
            number: key.map(|(_, n)| n),
            description: "Buy milk".into(),
            notes: String::new(),
            status: TaskStatus::Pending,
            tags: vec![],
            due: None,
            priority: None,
            parent: None,
            previous_keys: vec![],
            conflicts: vec![],
            created_at: Default::default(),
            modified_at: Default::default(),
            assignee: None,
            created_by: None,
            origin: None,
            commits: Vec::new(),
        }
    }

    fn row(uuid: Uuid, op: MutationOp) -> OutboxRow {
        OutboxRow {
            id: 1,
            uuid,
            op,
            idempotency_key: "k".into(),
            body: serde_json::json!({"project": "syn", "description": "Buy milk"}),
            state: crate::model::RowState::InProgress,
            sent: true,
            try_count: 1,
            last_error: None,
            created_at: 0,
            last_touch: 0,
            next_attempt_at: None,
        }
    }

    const A: Uuid = Uuid::from_u128(1);
    const B: Uuid = Uuid::from_u128(2);

    #[rstest]
    #[case::matches(MutationOp::Create, Some(task(A, Some(("SYN", 1)))), true)]
    #[case::update_matches(MutationOp::Update, Some(task(A, Some(("SYN", 1)))), true)]
    #[case::other_uuid(MutationOp::Create, Some(task(B, Some(("SYN", 1)))), false)]
    #[case::other_project(MutationOp::Create, Some(task(A, Some(("ABC", 1)))), false)]
    #[case::created_without_key(MutationOp::Create, Some(task(A, None)), false)]
    #[case::no_task(MutationOp::Create, None, false)]
    #[case::number_too_large(MutationOp::Create, Some(Task { number: Some(u64::MAX),
        key: Some(format!("SYN-{}", u64::MAX)), ..task(A, None) }), false)]
    #[case::key_not_its_number(MutationOp::Update, Some(Task { number: Some(2),
        ..task(A, Some(("SYN", 1))) }), false)]
    fn an_answer_must_match_its_request(
        #[case] op: MutationOp,
        #[case] answer_task: Option<Task>,
        #[case] ok: bool,
    ) {
        let r = answer(&row(A, op), answer_task.as_ref());
        assert_eq!(r.is_ok(), ok, "{r:?}");
    }

    #[test]
    fn a_move_is_answered_in_its_project_and_a_subtask_under_its_parent() {
        let mut moved = row(A, MutationOp::Update);
        moved.body = serde_json::json!({"project": "ops"});
        assert!(answer(&moved, Some(&task(A, Some(("OPS", 4))))).is_ok());
        assert!(answer(&moved, Some(&task(A, Some(("SYN", 1))))).is_err());
        // A subtask created in SYN goes where its parent is now (OPS), under that parent only.
        let mut sub = row(A, MutationOp::Create);
        sub.body = serde_json::json!({"project": "SYN", "description": "d", "parent": B});
        let mut t = Task {
            key: Some("OPS-4.1".into()),
            number: Some(1),
            project: "OPS".into(),
            parent: Some(B),
            ..task(A, None)
        };
        assert!(answer(&sub, Some(&t)).is_ok());
        t.parent = Some(Uuid::from_u128(9));
        assert!(answer(&sub, Some(&t)).is_err());
    }

    #[test]
    fn one_key_for_two_tasks_is_shared_and_the_feed_skips_both() {
        let a = task(A, Some(("SYN", 1)));
        let b = task(B, Some(("SYN", 1)));
        let c = task(Uuid::from_u128(3), Some(("SYN", 2)));
        assert_eq!(
            shared_keys([&a, &b, &c]),
            HashSet::from(["SYN-1".to_string()])
        );
        assert!(
            shared_keys([&a, &a.clone()]).is_empty(),
            "the same task twice"
        );
        let mut huge = task(Uuid::from_u128(4), Some(("SYN", 3)));
        huge.description = "x".repeat(5_000_000);
        let (good, bad) = feed(&[a, b, c.clone(), huge]);
        assert_eq!(good, vec![c]);
        assert_eq!(bad.len(), 3, "{bad:?}");
        assert!(bad.iter().all(|b| b.len() < 400), "reasons are clipped");
    }
}
