//! What to send next: a pure function of the open outbox rows and the time.
//!
//! The batch is the longest prefix of the queue (rows in id order, i.e. capture order) that may go
//! now, so the server numbers tasks in the order they were captured:
//! - `done` and `failed` rows are skipped; so are the rows of a task whose create failed (they wait
//!   for the user to edit or retry it, and would only be refused), and the rows of a task in the
//!   local inbox (`INBOX`: its create waits for the user to send it to a server project);
//! - the batch stops at the first row that must wait: one in backoff (`next_attempt_at` later than
//!   now) or one still `in_progress`;
//! - it stops before a second row of the same task, so each task's requests reach the server one
//!   after the other, in order;
//! - it stops before a row of a subtask whose parent has a row in the batch, and before a row of a
//!   parent one of whose subtasks has a row in it: a subtask's create is sent once its parent's
//!   create is answered (the server numbers it under the parent's key), and a parent's completion
//!   once its subtasks' completions are;
//! - a subtask whose parent is held (its create failed, or it waits in the local inbox) is held
//!   with it, and so are that subtask's own subtasks;
//! - it holds at most `max` rows.
use std::collections::{HashMap, HashSet};

use callsign_core::dto::MutationOp;
use uuid::Uuid;

use crate::model::{OutboxRow, RowState};

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Row ids to claim and send, in order.
    pub send: Vec<i64>,
    /// When the row that stopped the batch may go (Unix ms), if it stopped on a waiting row.
    pub wake_at: Option<i64>,
}

/// `parents`: the parent of each subtask among the rows' tasks.
pub fn plan(rows: &[OutboxRow], parents: &HashMap<Uuid, Uuid>, now_ms: i64, max: usize) -> Plan {
    let mut out = Plan::default();
    // Tasks whose later rows wait: their create failed, or is held in the local inbox, or their
    // parent is held.
    let mut held: HashSet<Uuid> = HashSet::new();
    let mut in_batch: HashSet<Uuid> = HashSet::new();
    // The parents of the subtasks with a row in the batch.
    let mut parents_in_batch: HashSet<Uuid> = HashSet::new();
    for r in rows {
        let parent = parents.get(&r.uuid);
        if r.state != RowState::Done && parent.is_some_and(|p| held.contains(p)) {
            held.insert(r.uuid);
        }
        match r.state {
            RowState::Done => continue,
            RowState::Failed => {
                if r.op == MutationOp::Create {
                    held.insert(r.uuid);
                }
                continue;
            }
            _ if held.contains(&r.uuid) => continue,
            RowState::Pending if r.op == MutationOp::Create && is_local(&r.body) => {
                held.insert(r.uuid);
                continue;
            }
            RowState::InProgress => break,
            RowState::Pending => {}
        }
        if let Some(t) = r.next_attempt_at.filter(|t| *t > now_ms) {
            out.wake_at = Some(t);
            break;
        }
        if out.send.len() >= max
            || in_batch.contains(&r.uuid)
            || parent.is_some_and(|p| in_batch.contains(p))
            || parents_in_batch.contains(&r.uuid)
        {
            break;
        }
        in_batch.insert(r.uuid);
        parents_in_batch.extend(parent);
        out.send.push(r.id);
    }
    out
}

/// A create body for the local inbox.
fn is_local(body: &serde_json::Value) -> bool {
    body.get("project").and_then(|p| p.as_str()) == Some(callsign_core::LOCAL_PROJECT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// A row from a compact spec: (task number, op, state, next_attempt_at).
    fn row(id: i64, (task, op, state, next): (u128, char, RowState, Option<i64>)) -> OutboxRow {
        OutboxRow {
            id,
            uuid: Uuid::from_u128(task),
            op: if op == 'u' {
                MutationOp::Update
            } else {
                MutationOp::Create
            },
            idempotency_key: format!("k{id}"),
            // 'l': a create in the local inbox.
            body: serde_json::json!({"project": if op == 'l' { "INBOX" } else { "SYN" }}),
            state,
            sent: false,
            try_count: 0,
            last_error: None,
            created_at: 0,
            last_touch: 0,
            next_attempt_at: next,
        }
    }

    use RowState::*;
    const NOW: i64 = 1_000;

    #[rstest]
    #[case::empty(vec![], 10, vec![], None)]
    #[case::all_in_order(vec![(1,'c',Pending,None),(2,'c',Pending,None),(3,'c',Pending,None)], 10, vec![1,2,3], None)]
    #[case::max_respected(vec![(1,'c',Pending,None),(2,'c',Pending,None),(3,'c',Pending,None)], 2, vec![1,2], None)]
    #[case::due_retry_goes(vec![(1,'c',Pending,Some(NOW)),(2,'c',Pending,None)], 10, vec![1,2], None)]
    #[case::waiting_row_stops_batch(vec![(1,'c',Pending,None),(2,'c',Pending,Some(NOW+5)),(3,'c',Pending,None)], 10, vec![1], Some(NOW+5))]
    #[case::in_progress_stops_batch(vec![(1,'c',InProgress,None),(2,'c',Pending,None)], 10, vec![], None)]
    #[case::done_and_failed_skipped(vec![(1,'c',Done,None),(2,'c',Failed,None),(3,'c',Pending,None)], 10, vec![3], None)]
    #[case::failed_create_holds_its_updates(vec![(1,'c',Failed,None),(1,'u',Pending,None),(2,'c',Pending,None)], 10, vec![3], None)]
    #[case::failed_update_does_not_hold(vec![(1,'u',Failed,None),(1,'u',Pending,None)], 10, vec![2], None)]
    #[case::local_inbox_held(vec![(1,'l',Pending,None),(1,'u',Pending,None),(2,'c',Pending,None)], 10, vec![3], None)]
    #[case::one_row_per_task(vec![(1,'c',Pending,None),(2,'c',Pending,None),(1,'u',Pending,None),(3,'c',Pending,None)], 10, vec![1,2], None)]
    fn batches(
        #[case] spec: Vec<(u128, char, RowState, Option<i64>)>,
        #[case] max: usize,
        #[case] send: Vec<i64>,
        #[case] wake_at: Option<i64>,
    ) {
        let rows: Vec<_> = spec
            .into_iter()
            .enumerate()
            .map(|(i, s)| row(i as i64 + 1, s))
            .collect();
        assert_eq!(
            plan(&rows, &HashMap::new(), NOW, max),
            Plan { send, wake_at }
        );
    }

    /// Rows as in [`batches`], with each subtask's parent.
    fn plan_with(
        spec: Vec<(u128, char, RowState, Option<i64>)>,
        parents: &[(u128, u128)],
    ) -> Vec<i64> {
        let rows: Vec<_> = spec
            .into_iter()
            .enumerate()
            .map(|(i, s)| row(i as i64 + 1, s))
            .collect();
        let parents = parents
            .iter()
            .map(|(c, p)| (Uuid::from_u128(*c), Uuid::from_u128(*p)))
            .collect();
        plan(&rows, &parents, NOW, 10).send
    }

    #[test]
    fn a_subtask_waits_for_its_parents_answer_and_a_parent_for_its_subtasks() {
        // Parent 1 and subtask 2 captured together: the subtask goes in the next batch.
        let both = vec![(1, 'c', Pending, None), (2, 'c', Pending, None)];
        assert_eq!(plan_with(both.clone(), &[(2, 1)]), vec![1]);
        assert_eq!(plan_with(both, &[]), vec![1, 2]);
        // A subtask of a task the server already numbered goes at once.
        assert_eq!(plan_with(vec![(2, 'c', Pending, None)], &[(2, 1)]), vec![1]);
        // Completing subtask 2, then its parent 1: the parent's row waits for the next batch.
        let done = vec![(2, 'u', Pending, None), (1, 'u', Pending, None)];
        assert_eq!(plan_with(done, &[(2, 1)]), vec![1]);
    }

    #[test]
    fn a_refused_or_local_parent_holds_its_subtasks_and_theirs() {
        let rows = vec![
            (1, 'c', Failed, None),
            (2, 'c', Pending, None),
            (3, 'c', Pending, None),
            (3, 'u', Pending, None),
            (4, 'c', Pending, None),
        ];
        assert_eq!(plan_with(rows, &[(2, 1), (3, 2)]), vec![5]);
        let local = vec![
            (1, 'l', Pending, None),
            (2, 'l', Pending, None),
            (4, 'c', Pending, None),
        ];
        assert_eq!(plan_with(local, &[(2, 1)]), vec![3]);
    }

    /// Child to parent, from pairs (a task is never its own parent; the first pair wins).
    fn parent_map(pairs: &[(u128, u128)]) -> HashMap<Uuid, Uuid> {
        let mut m = HashMap::new();
        for (c, p) in pairs.iter().filter(|(c, p)| c != p) {
            m.entry(Uuid::from_u128(*c)).or_insert(Uuid::from_u128(*p));
        }
        m
    }

    fn any_row() -> impl proptest::strategy::Strategy<Value = (u128, char, RowState, Option<i64>)> {
        use proptest::prelude::*;
        (
            0u128..5,
            prop_oneof![Just('c'), Just('u'), Just('l')],
            prop_oneof![
                Just(Pending),
                Just(Pending),
                Just(InProgress),
                Just(Failed),
                Just(Done)
            ],
            prop_oneof![Just(None), Just(Some(NOW - 1)), Just(Some(NOW + 1))],
        )
    }

    proptest::proptest! {
        /// Whatever the queue: the batch is an in-order run of due pending rows, one per task,
        /// at most `max`, never a row of a task whose create failed or waits in the local
        /// inbox, and it skips no row it could have sent (capture order is kept).
        #[test]
        fn a_batch_is_an_ordered_prefix_of_sendable_rows(
            spec in proptest::collection::vec(any_row(), 0..30),
            max in 1usize..8,
            parents in proptest::collection::vec((0u128..5, 0u128..5), 0..3),
        ) {
            let rows: Vec<_> = spec.into_iter().enumerate().map(|(i, s)| row(i as i64 + 1, s)).collect();
            let p = plan(&rows, &HashMap::new(), NOW, max);
            let with_parents = plan(&rows, &parent_map(&parents), NOW, max);
            let sent_tasks: HashSet<Uuid> = with_parents
                .send
                .iter()
                .map(|id| rows[*id as usize - 1].uuid)
                .collect();
            for t in &sent_tasks {
                if let Some(parent) = parent_map(&parents).get(t) {
                    proptest::prop_assert!(!sent_tasks.contains(parent), "a subtask went with its parent");
                }
            }

            proptest::prop_assert!(p.send.len() <= max);
            proptest::prop_assert!(p.send.windows(2).all(|w| w[0] < w[1]));
            let sent: Vec<&OutboxRow> = p.send.iter().map(|id| &rows[*id as usize - 1]).collect();
            let tasks: HashSet<Uuid> = sent.iter().map(|r| r.uuid).collect();
            proptest::prop_assert_eq!(tasks.len(), sent.len());
            let mut failed = HashSet::new();
            let last = p.send.last().copied().unwrap_or(0);
            for r in &rows {
                if (r.state == Failed && r.op == MutationOp::Create)
                    || (r.state == Pending && r.op == MutationOp::Create && is_local(&r.body))
                {
                    failed.insert(r.uuid);
                }
                let in_batch = p.send.contains(&r.id);
                if in_batch {
                    proptest::prop_assert!(r.state == Pending && r.next_attempt_at.is_none_or(|t| t <= NOW));
                    proptest::prop_assert!(!failed.contains(&r.uuid));
                } else if r.id < last {
                    let sendable = r.state == Pending && !failed.contains(&r.uuid);
                    proptest::prop_assert!(!sendable, "row {} skipped before row {}", r.id, last);
                }
            }
        }
    }
}
