//! Where a local edit goes: folded into a request that has not been sent, or a new update row.
//!
//! Invariant: a row that has been sent keeps its body and idempotency key (a retry must be the
//! same request). Only the task's newest open row may absorb an edit, and only when it is
//! - a create or update not sent yet: the edit merges into it, so a task captured and edited
//!   offline reaches the server as one create;
//! - a failed create: nothing of the task exists on the server, so the edit fixes the body that
//!   the user's retry will send under a new key.
//!
//! Otherwise the edit becomes a new `update` row behind the others. So it does too when folding
//! would give one request more commit links (or unlinks) than the server takes
//! (`validate::MAX_COMMIT_LINKS`): a rebase of many commits offline then goes as several
//! requests, never as one that is refused.
use callsign_core::dto::{MutationOp, NewTask, TaskPatch};
use callsign_core::validate::MAX_COMMIT_LINKS;

use crate::model::{OutboxRow, RowState};

#[derive(Debug, Clone, PartialEq)]
pub enum Fold {
    /// Replace row `id`'s body with `body`.
    Into { id: i64, body: serde_json::Value },
    /// Queue a new update row with this patch.
    Append(Box<TaskPatch>),
}

/// `rows`: the task's outbox rows in id order (any states).
pub fn fold(rows: &[OutboxRow], patch: TaskPatch) -> Fold {
    let Some(last) = rows.iter().rev().find(|r| r.state != RowState::Done) else {
        return Fold::Append(Box::new(patch));
    };
    let unsent = last.state == RowState::Pending && !last.sent;
    let failed_create = last.state == RowState::Failed && last.op == MutationOp::Create;
    if !(unsent || failed_create) {
        return Fold::Append(Box::new(patch));
    }
    let body = match last.op {
        MutationOp::Create => serde_json::from_value::<NewTask>(last.body.clone())
            .ok()
            .map(|mut create| {
                patch.clone().fold_into(&mut create);
                create
            })
            .filter(|create| create.commits.len() <= MAX_COMMIT_LINKS)
            .map(serde_json::to_value),
        MutationOp::Update => serde_json::from_value::<TaskPatch>(last.body.clone())
            .ok()
            .map(|mut earlier| {
                earlier.merge(patch.clone());
                earlier
            })
            .filter(|p| {
                p.commits.len() <= MAX_COMMIT_LINKS && p.unlink_commits.len() <= MAX_COMMIT_LINKS
            })
            .map(serde_json::to_value),
    };
    match body {
        Some(Ok(body)) => Fold::Into { id: last.id, body },
        // A body that does not parse cannot absorb anything; keep the edit as its own request.
        _ => Fold::Append(Box::new(patch)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;
    use uuid::Uuid;
    use RowState::*;

    fn row(id: i64, op: MutationOp, state: RowState, sent: bool) -> OutboxRow {
        let body = match op {
            MutationOp::Create => json!({"project": "SYN", "description": "old", "tags": ["a"]}),
            MutationOp::Update => json!({"notes": "n1"}),
        };
        OutboxRow {
            id,
            uuid: Uuid::nil(),
            op,
            idempotency_key: format!("k{id}"),
            body,
            state,
            sent,
            try_count: 0,
            last_error: None,
            created_at: 0,
            last_touch: 0,
            next_attempt_at: None,
        }
    }

    fn edit() -> TaskPatch {
        TaskPatch {
            description: Some("new".into()),
            ..Default::default()
        }
    }

    const C: MutationOp = MutationOp::Create;
    const U: MutationOp = MutationOp::Update;

    #[rstest]
    #[case::nothing_open(vec![], None)]
    #[case::unsent_create(vec![(1, C, Pending, false)], Some((1, json!({"project":"SYN","description":"new","notes":"","tags":["a"]}))))]
    #[case::sent_create_frozen(vec![(1, C, Pending, true)], None)]
    #[case::in_flight_create_frozen(vec![(1, C, InProgress, true)], None)]
    #[case::failed_create_fixed(vec![(1, C, Failed, true)], Some((1, json!({"project":"SYN","description":"new","notes":"","tags":["a"]}))))]
    #[case::done_create(vec![(1, C, Done, true)], None)]
    #[case::unsent_update_merges(vec![(1, C, Done, true), (2, U, Pending, false)], Some((2, json!({"description":"new","notes":"n1"}))))]
    #[case::sent_update_frozen(vec![(1, C, Done, true), (2, U, Pending, true)], None)]
    #[case::failed_update_not_reused(vec![(1, C, Done, true), (2, U, Failed, true)], None)]
    #[case::only_newest_open_row(vec![(1, C, Pending, false), (2, U, InProgress, true)], None)]
    fn edits(
        #[case] spec: Vec<(i64, MutationOp, RowState, bool)>,
        #[case] want: Option<(i64, serde_json::Value)>,
    ) {
        let rows: Vec<_> = spec
            .into_iter()
            .map(|(i, o, s, t)| row(i, o, s, t))
            .collect();
        let want = match want {
            Some((id, body)) => Fold::Into { id, body },
            None => Fold::Append(Box::new(edit())),
        };
        assert_eq!(fold(&rows, edit()), want);
    }

    /// A link of commit `i` (hash: `i` in 40 hex digits).
    fn link(i: usize) -> callsign_core::dto::CommitLink {
        callsign_core::dto::CommitLink {
            hash: format!("{i:040x}"),
            subject: "s".into(),
            author: "Ann <ann@example.com>".into(),
            at: chrono::DateTime::from_timestamp(i as i64, 0).unwrap(),
            action: callsign_core::dto::CommitAction::Refs,
            comment: None,
        }
    }

    #[rstest]
    #[case::create(C)]
    #[case::update(U)]
    fn links_fold_until_a_request_holds_as_many_as_the_server_takes(#[case] op: MutationOp) {
        let mut r = row(1, op, Pending, false);
        let links = |from: usize, n: usize| (from..from + n).map(link).collect::<Vec<_>>();
        r.body["commits"] = serde_json::to_value(links(0, MAX_COMMIT_LINKS - 1)).unwrap();
        let one = TaskPatch {
            commits: links(MAX_COMMIT_LINKS - 1, 1),
            ..Default::default()
        };
        let Fold::Into { body, .. } = fold(&[r.clone()], one.clone()) else {
            panic!("the last link that fits folds in");
        };
        assert_eq!(body["commits"].as_array().unwrap().len(), MAX_COMMIT_LINKS);
        r.body = body;
        let more = TaskPatch {
            commits: links(MAX_COMMIT_LINKS, 1),
            ..Default::default()
        };
        assert_eq!(
            fold(&[r.clone()], more.clone()),
            Fold::Append(Box::new(more))
        );
        assert!(
            matches!(fold(&[r], one), Fold::Into { .. }),
            "a link again of a hash it holds still fits"
        );
    }
}
