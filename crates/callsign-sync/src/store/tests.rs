//! Store behaviour: one-transaction creates, folding, the frozen-request triggers, answers,
//! stale reset, reconciliation (server wins, one key per task), and lookups.
use callsign_core::dto::{MutationOp, NewTask, Task, TaskPatch, TaskStatus};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::undo::{Journal, UndoKind};

/// A user's edit, journaled as its own undo step.
const EDIT: Journal = Journal::Step(UndoKind::Edit);

use super::{Store, TaskQuery, MIGRATIONS};
use crate::model::{RowState, SyncState};
use crate::outbox_state::Outcome;

pub(super) fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000, 0).unwrap()
}

pub(super) fn body(d: &str) -> NewTask {
    NewTask {
        project: "SYN".into(),
        description: d.into(),
        notes: String::new(),
        status: None,
        tags: vec![],
        due: None,
        priority: None,
        parent: None,
        created_at: Some(now()),
        assignee: None,
        created_by: None,
        origin: None,
        keep_number: false,
        commits: Vec::new(),
    }
}

pub(super) fn server_task(uuid: Uuid, key: Option<(&str, u64)>, d: &str) -> Task {
    Task {
        uuid,
        key: key.map(|k| k.0.to_owned()),
        project: "SYN".into(),
        number: key.map(|k| k.1),
        description: d.into(),
        notes: String::new(),
        status: TaskStatus::Pending,
        tags: vec![],
        due: None,
        priority: None,
        parent: None,
        previous_keys: vec![],
        conflicts: vec![],
        created_at: now(),
        modified_at: now(),
        assignee: None,
        created_by: None,
        origin: None,
        commits: Vec::new(),
    }
}

fn with_task(d: &str) -> (Store, Uuid) {
    let mut s = Store::in_memory().unwrap();
    let u = Uuid::new_v4();
    s.create_local(u, &format!("k-{u}"), &body(d), now())
        .unwrap();
    (s, u)
}

fn patch(d: &str) -> TaskPatch {
    TaskPatch {
        description: Some(d.into()),
        ..TaskPatch::default()
    }
}

#[test]
fn migrations_are_valid() {
    MIGRATIONS.validate().unwrap();
}

#[test]
fn a_create_is_a_task_row_and_a_pending_outbox_row() {
    let (s, u) = with_task("buy milk");
    let t = s.task(u).unwrap().unwrap();
    assert_eq!(
        (t.key, t.sync_state, t.open_rows),
        (None, SyncState::Provisional, 1)
    );
    let rows = s.open_rows(10).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].op, rows[0].state, rows[0].sent),
        (MutationOp::Create, RowState::Pending, false)
    );
}

#[test]
fn a_batch_create_is_one_transaction_a_failing_row_saves_none() {
    let mut s = Store::in_memory().unwrap();
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let batch = |key_b: &str| {
        vec![
            (a, "ka".to_owned(), body("first")),
            (b, key_b.to_owned(), body("second")),
        ]
    };
    // The second row reuses the first one's idempotency key: UNIQUE refuses it.
    assert!(s.create_local_many(&batch("ka"), now()).is_err());
    assert!(
        s.task(a).unwrap().is_none(),
        "the first row was rolled back"
    );
    assert!(s.open_rows(10).unwrap().is_empty());

    s.create_local_many(&batch("kb"), now()).unwrap();
    let rows = s.open_rows(10).unwrap();
    assert_eq!(
        rows.iter().map(|r| (r.uuid, r.op)).collect::<Vec<_>>(),
        [(a, MutationOp::Create), (b, MutationOp::Create)]
    );
}

#[test]
fn edits_fold_into_the_unsent_create_then_queue_after_it_is_sent() {
    let (mut s, u) = with_task("draft");
    s.edit_local(u, patch("final"), "k2", now(), EDIT).unwrap();
    let rows = s.open_rows(10).unwrap();
    assert_eq!(rows.len(), 1, "folded");
    assert_eq!(rows[0].body["description"], "final");
    s.claim(&[rows[0].id], 1).unwrap();
    s.edit_local(u, patch("later"), "k3", now(), EDIT).unwrap();
    let rows = s.open_rows(10).unwrap();
    assert_eq!(
        rows.len(),
        2,
        "a sent create is frozen; the edit is its own update"
    );
    assert_eq!(rows[0].body["description"], "final");
    assert_eq!(
        (rows[1].op, rows[1].idempotency_key.as_str()),
        (MutationOp::Update, "k3")
    );
    assert_eq!(
        s.task(u).unwrap().unwrap().description,
        "later",
        "shown at once"
    );
}

/// An update carries, as its base, what this device showed before its first unsent edit of each
/// field; the server's conflicts land with the task once nothing is queued, and settling one
/// takes it away here at once.
#[test]
fn updates_carry_their_base_and_conflicts_arrive_and_settle_here() {
    let (mut s, u) = with_task("draft");
    let rows = s.claim(&[s.open_rows(1).unwrap()[0].id], 1).unwrap();
    let done = Outcome::Done(Some(server_task(u, Some(("SYN-1", 1)), "draft")));
    s.record_answers(&[(rows[0].clone(), done)], |_| 0, 2)
        .unwrap();
    s.edit_local(u, patch("one"), "k2", now(), EDIT).unwrap();
    s.edit_local(u, patch("two"), "k3", now(), EDIT).unwrap();
    let notes = TaskPatch {
        notes: Some("n".into()),
        ..TaskPatch::default()
    };
    s.edit_local(u, notes, "k4", now(), EDIT).unwrap();
    let rows = s.open_rows(10).unwrap();
    assert_eq!(rows.len(), 1, "folded into one unsent update");
    assert_eq!(
        rows[0].body,
        serde_json::json!({"description": "two", "notes": "n",
            "base": {"description": "draft", "notes": ""}})
    );
    // Answered with a conflict (another device's text was replaced): it shows here.
    let rows = s.claim(&[rows[0].id], 3).unwrap();
    let mut answer = server_task(u, Some(("SYN-1", 1)), "two");
    answer.notes = "n".into();
    answer.conflicts = vec![callsign_core::merge::Conflict {
        field: callsign_core::merge::Field::Description,
        value: serde_json::json!("theirs"),
        at: now(),
    }];
    s.record_answers(&[(rows[0].clone(), Outcome::Done(Some(answer)))], |_| 0, 4)
        .unwrap();
    assert_eq!(s.task(u).unwrap().unwrap().conflicts.len(), 1);
    // Keeping what is there: gone here at once, and the update says so to the server.
    let keep = TaskPatch {
        resolve: vec![callsign_core::merge::Field::Description],
        ..TaskPatch::default()
    };
    s.edit_local(u, keep, "k5", now(), EDIT).unwrap();
    assert!(s.task(u).unwrap().unwrap().conflicts.is_empty());
    assert_eq!(
        s.open_rows(10).unwrap()[0].body,
        serde_json::json!({"resolve": ["description"]})
    );
}

#[test]
fn the_database_refuses_to_change_a_sent_request() {
    let (mut s, _) = with_task("x");
    let id = s.open_rows(1).unwrap()[0].id;
    s.claim(&[id], 1).unwrap();
    for sql in [
        "UPDATE outbox SET body = '{}' WHERE id = ?1",
        "UPDATE outbox SET idempotency_key = 'other' WHERE id = ?1",
    ] {
        let e = s.conn.execute(sql, [id]).unwrap_err().to_string();
        assert!(e.contains("frozen"), "{e}");
    }
}

#[test]
fn answers_move_rows_and_bind_the_key() {
    let (mut s, u) = with_task("x");
    let rows = s.claim(&[s.open_rows(1).unwrap()[0].id], 1).unwrap();
    let done = Outcome::Done(Some(server_task(u, Some(("SYN-7", 7)), "x")));
    s.record_answers(&[(rows[0].clone(), done)], |_| 0, 2)
        .unwrap();
    let t = s.task(u).unwrap().unwrap();
    assert_eq!(
        (t.key.as_deref(), t.number, t.sync_state),
        (Some("SYN-7"), Some(7), SyncState::Synced)
    );
    assert!(s.open_rows(10).unwrap().is_empty());
    assert_eq!(s.find("syn 7").unwrap().uuid, u, "lenient key lookup");
}

#[test]
fn a_refusal_fails_the_row_and_a_retry_needs_a_new_key() {
    let (mut s, u) = with_task("x");
    let rows = s.claim(&[s.open_rows(1).unwrap()[0].id], 1).unwrap();
    let fail = Outcome::Fail("Invalid request body (invalid_body): no".into());
    s.record_answers(&[(rows[0].clone(), fail)], |_| 0, 2)
        .unwrap();
    let t = s.task(u).unwrap().unwrap();
    assert_eq!(t.sync_state, SyncState::Failed);
    assert!(t.last_error.unwrap().contains("invalid_body"));
    let same = rows[0].idempotency_key.clone();
    let e = s
        .retry_failed(u, || same.clone(), 3)
        .unwrap_err()
        .to_string();
    assert!(e.contains("new idempotency key"), "{e}");
    assert_eq!(s.retry_failed(u, || "fresh".into(), 3).unwrap(), 1);
    let row = &s.open_rows(1).unwrap()[0];
    assert_eq!(
        (row.state, row.sent, row.idempotency_key.as_str()),
        (RowState::Pending, false, "fresh")
    );
}

/// Regression (found by the outbox model test): an edit refused for good, a later edit sent and
/// accepted, then the user retries the refused one. The retry used to resend the OLD values
/// after the newer ones and so undid the later edit on the server; it now carries the task's
/// current values for the fields it sets.
#[test]
fn a_retried_update_does_not_undo_a_later_edit() {
    let (mut s, u) = with_task("x");
    let create = s.claim(&[s.open_rows(1).unwrap()[0].id], 1).unwrap();
    let done = Outcome::Done(Some(server_task(u, Some(("SYN-1", 1)), "x")));
    s.record_answers(&[(create[0].clone(), done)], |_| 0, 2)
        .unwrap();
    let edit = |s: &mut Store, d: &str, key: &str| {
        let patch = TaskPatch {
            description: Some(d.into()),
            ..TaskPatch::default()
        };
        s.edit_local(u, patch, key, now(), EDIT).unwrap();
    };
    edit(&mut s, "first edit", "k1");
    let first = s.claim(&[s.open_rows(1).unwrap()[0].id], 3).unwrap();
    s.record_answers(
        &[(first[0].clone(), Outcome::Fail("refused".into()))],
        |_| 0,
        4,
    )
    .unwrap();
    edit(&mut s, "second edit", "k2");
    let second = s.claim(&[s.open_rows(1).unwrap()[0].id], 5).unwrap();
    assert_eq!(second[0].body["description"], "second edit");
    s.record_answers(&[(second[0].clone(), Outcome::Done(None))], |_| 0, 6)
        .unwrap();

    s.retry_failed(u, || "k3".into(), 7).unwrap();
    let retried = &s.open_rows(1).unwrap()[0];
    assert_eq!(retried.idempotency_key, "k3");
    assert_eq!(
        retried.body["description"], "second edit",
        "the retry sends what the user sees now, not the refused value"
    );
}

/// Due date and priority through the outbox: set on the unsent create, then cleared and
/// changed offline (folded into the same create, `null` kept as "none"), then, once the create
/// is sent, an edit that clears the due date is its own update carrying `null`; a retry of it
/// sends the task's current values (the due date cleared, not an old value).
#[test]
fn due_and_priority_fold_clear_and_retry_with_current_values() {
    use callsign_core::Priority;
    let mut s = Store::in_memory().unwrap();
    let u = Uuid::new_v4();
    let mut b = body("pay rent");
    b.due = Some(now());
    b.priority = Some(Priority::H);
    s.create_local(u, "k1", &b, now()).unwrap();
    let clear = TaskPatch {
        due: Some(None),
        priority: Some(Some(Priority::M)),
        ..TaskPatch::default()
    };
    s.edit_local(u, clear, "k2", now(), EDIT).unwrap();
    let rows = s.open_rows(10).unwrap();
    assert_eq!(rows.len(), 1, "folded into the unsent create");
    assert!(rows[0].body.get("due").is_none(), "{}", rows[0].body);
    assert_eq!(rows[0].body["priority"], "M");
    let t = s.task(u).unwrap().unwrap();
    assert_eq!((t.due, t.priority), (None, Some(Priority::M)));

    let create = s.claim(&[rows[0].id], 1).unwrap();
    let done = Outcome::Done(Some(server_task(u, Some(("SYN-1", 1)), "pay rent")));
    s.record_answers(&[(create[0].clone(), done)], |_| 0, 2)
        .unwrap();
    let set = TaskPatch {
        due: Some(Some(now())),
        ..TaskPatch::default()
    };
    s.edit_local(u, set, "k3", now(), EDIT).unwrap();
    let first = s.claim(&[s.open_rows(1).unwrap()[0].id], 3).unwrap();
    s.record_answers(
        &[(first[0].clone(), Outcome::Fail("refused".into()))],
        |_| 0,
        4,
    )
    .unwrap();
    let unset = TaskPatch {
        due: Some(None),
        ..TaskPatch::default()
    };
    s.edit_local(u, unset, "k4", now(), EDIT).unwrap();
    let rows = s.open_rows(10).unwrap();
    let last = rows.last().unwrap();
    assert_eq!(
        (last.op, last.body["due"].clone()),
        (MutationOp::Update, serde_json::Value::Null),
        "null clears it"
    );
    assert!(
        last.body["base"]["due"].is_string(),
        "what it cleared is its base"
    );
    s.retry_failed(u, || "k5".into(), 5).unwrap();
    let retried = s
        .open_rows(10)
        .unwrap()
        .into_iter()
        .find(|r| r.idempotency_key == "k5")
        .unwrap();
    assert_eq!(
        retried.body,
        serde_json::json!({"due": null, "base": {"due": null}}),
        "the current value, cleared, over the base the refused request had"
    );
}

#[test]
fn stale_in_progress_rows_go_back_to_pending_with_the_same_key_and_body() {
    let (mut s, _) = with_task("x");
    let claimed = s.claim(&[s.open_rows(1).unwrap()[0].id], 1).unwrap();
    assert_eq!(s.reset_in_progress().unwrap(), 1);
    let row = &s.open_rows(1).unwrap()[0];
    assert_eq!((row.state, row.sent), (RowState::Pending, true));
    assert_eq!(
        (&row.idempotency_key, &row.body),
        (&claimed[0].idempotency_key, &claimed[0].body)
    );
}

#[test]
fn the_server_wins_a_key_disagreement_and_a_key_names_one_task() {
    let mut s = Store::in_memory().unwrap();
    let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
    s.apply_changes(&[server_task(a, Some(("SYN-1", 1)), "a")], "1")
        .unwrap();
    s.apply_changes(&[server_task(a, Some(("SYN-2", 2)), "a")], "2")
        .unwrap();
    assert_eq!(s.task(a).unwrap().unwrap().key.as_deref(), Some("SYN-2"));
    s.apply_changes(&[server_task(b, Some(("SYN-2", 2)), "b")], "3")
        .unwrap();
    assert_eq!(s.task(b).unwrap().unwrap().key.as_deref(), Some("SYN-2"));
    assert_eq!(
        s.task(a).unwrap().unwrap().key,
        None,
        "never two tasks with one key"
    );
    assert_eq!(s.get(super::CURSOR).unwrap().as_deref(), Some("3"));
}

#[test]
fn a_task_with_queued_edits_keeps_its_local_fields_but_gets_its_key() {
    let (mut s, u) = with_task("mine");
    s.apply_changes(&[server_task(u, Some(("SYN-3", 3)), "server's")], "1")
        .unwrap();
    let t = s.task(u).unwrap().unwrap();
    assert_eq!(
        (t.key.as_deref(), t.description.as_str()),
        (Some("SYN-3"), "mine")
    );
}

#[test]
fn lookups_by_uuid_prefix() {
    let mut s = Store::in_memory().unwrap();
    let a = Uuid::parse_str("1a2b3c4d-0000-4000-8000-000000000001").unwrap();
    let b = Uuid::parse_str("1a2b3c4d-0000-4000-8000-100000000002").unwrap();
    s.create_local(a, "ka", &body("a"), now()).unwrap();
    s.create_local(b, "kb", &body("b"), now()).unwrap();
    assert!(matches!(
        s.find("~1a2b3c4d"),
        Err(crate::Error::Ambiguous(_))
    ));
    let e = s.find("1a2b3c4d-0000-4000-8000").unwrap_err().to_string();
    assert!(e.contains("more than one"), "{e}");
    assert_eq!(s.find("1a2b3c4d-0000-4000-8000-0").unwrap().uuid, a);
    assert_eq!(s.find("1a2b3c4d00004000800010").unwrap().uuid, b);
    assert_eq!(s.find(&b.to_string()).unwrap().uuid, b);
    assert!(
        matches!(s.find("1a2b3c"), Err(crate::Error::NotFound(_))),
        "too short"
    );
    assert!(matches!(s.find("SYN-9"), Err(crate::Error::NotFound(_))));
    assert_eq!(s.list(&TaskQuery::default()).unwrap().len(), 2);
    let only = |text: &str| TaskQuery {
        text: Some(text.into()),
        ..TaskQuery::default()
    };
    assert_eq!(
        s.list(&only("B")).unwrap()[0].uuid,
        b,
        "case-insensitive text"
    );
    assert!(s.list(&only("zzz")).unwrap().is_empty());
    let other = TaskQuery {
        project: Some("abc".into()),
        ..TaskQuery::default()
    };
    assert!(s.list(&other).unwrap().is_empty());
    s.edit_local(
        a,
        TaskPatch {
            status: Some(TaskStatus::Completed),
            ..TaskPatch::default()
        },
        "k",
        now(),
        EDIT,
    )
    .unwrap();
    assert_eq!(
        s.list(&TaskQuery::default()).unwrap().len(),
        1,
        "completed hidden"
    );
    assert_eq!(
        s.list(&TaskQuery {
            all: true,
            ..TaskQuery::default()
        })
        .unwrap()
        .len(),
        2
    );
}

#[test]
fn many_failed_rows_do_not_hide_the_pending_ones_from_the_plan() {
    let mut s = Store::in_memory().unwrap();
    for i in 0..20 {
        let u = Uuid::from_u128(i + 1);
        s.create_local(u, &format!("k{i}"), &body("refused"), now())
            .unwrap();
    }
    let ids: Vec<i64> = s.open_rows(100).unwrap().iter().map(|r| r.id).collect();
    let claimed = s.claim(&ids, 1).unwrap();
    let answers: Vec<_> = claimed
        .into_iter()
        .map(|r| (r, Outcome::Fail("no".into())))
        .collect();
    s.record_answers(&answers, |_| 0, 2).unwrap();
    let u = Uuid::from_u128(99);
    s.create_local(u, "fresh", &body("fine"), now()).unwrap();
    let rows = s.open_rows(5).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].uuid, u);
    assert_eq!(
        crate::plan::plan(&rows, &std::collections::HashMap::new(), 0, 10).send,
        vec![rows[0].id]
    );
    assert_eq!(s.counts().unwrap().failed, 20);
}

/// One outbox row for a mixed store: `(state, last_error, next_attempt_at)`.
type Row = (&'static str, Option<&'static str>, Option<i64>);

/// Inserts outbox rows for `u` as they are, in this order (ids ascend), bypassing the state
/// machine: the listing must read any mix the machine can leave behind.
fn put_rows(s: &Store, u: Uuid, rows: &[Row]) {
    for (i, (state, error, next)) in rows.iter().enumerate() {
        s.conn
            .execute(
                "INSERT INTO outbox (uuid, op, idempotency_key, body, state, sent, last_error,
                    created_at, last_touch, next_attempt_at)
                 VALUES (?1, 'update', ?2, '{}', ?3, ?4, ?5, 0, 0, ?6)",
                rusqlite::params![
                    u.to_string(),
                    format!("row-{u}-{i}"),
                    state,
                    *state != "pending",
                    error,
                    next
                ],
            )
            .unwrap();
    }
}

#[test]
fn the_one_pass_listing_equals_the_per_task_facts_on_a_mixed_store() {
    let mut s = Store::in_memory().unwrap();
    // Server tasks have no outbox rows at all; some are numbered, one is completed.
    let server: Vec<Task> = (0..4u128)
        .map(|i| {
            let mut t = server_task(Uuid::from_u128(0xA0 + i), Some(("SYN", 0)), "from server");
            t.key = Some(format!("SYN-{}", i + 1));
            t.number = Some(i as u64 + 1);
            t.project = if i % 2 == 0 { "SYN" } else { "OPS" }.into();
            if i == 3 {
                t.status = TaskStatus::Completed;
            }
            // Out of capture order: the listing orders by created_at, then rowid.
            t.created_at = now() - chrono::Duration::seconds(i as i64 * 10);
            t
        })
        .collect();
    s.apply_changes(&server, "c1").unwrap();

    let cases: Vec<(&str, Vec<Row>)> = vec![
        (
            "done rows only",
            vec![("done", None, None), ("done", Some("old"), Some(9))],
        ),
        ("one pending", vec![("pending", None, None)]),
        (
            "pending, backing off",
            vec![("pending", Some("busy"), Some(5_000))],
        ),
        ("in progress", vec![("in_progress", Some("was busy"), None)]),
        (
            "failed",
            vec![("done", None, None), ("failed", Some("refused"), None)],
        ),
        (
            "several open rows",
            vec![
                ("done", Some("done error is not shown"), Some(1)),
                ("pending", Some("first"), Some(7_000)),
                ("in_progress", None, Some(2_000)),
                ("pending", Some("second"), Some(3_000)),
                ("pending", None, None),
                ("pending", None, Some(4_000)),
            ],
        ),
        (
            "failed and pending",
            vec![
                ("failed", Some("refused"), None),
                ("pending", Some("later"), Some(8_000)),
                ("failed", None, None),
            ],
        ),
        (
            "only the newest error",
            vec![("failed", Some("a"), None), ("pending", None, Some(1))],
        ),
        (
            "the newest refusal over a newer retry's error",
            vec![
                ("failed", Some("old refusal"), None),
                ("failed", Some("new refusal"), None),
                ("pending", Some("timed out"), Some(9_000)),
            ],
        ),
    ];
    let mut local = Vec::new();
    for (i, (what, rows)) in cases.iter().enumerate() {
        let u = Uuid::from_u128(0xB0 + i as u128);
        let mut b = body(what);
        b.project = if i % 3 == 0 { "OPS" } else { "SYN" }.into();
        b.notes = format!("case {i}");
        b.created_at = Some(now() + chrono::Duration::seconds(5 - i as i64));
        s.conn
            .execute(
                "INSERT INTO tasks (uuid, project, description, notes, status, tags, created_at,
                    modified_at) VALUES (?1, ?2, ?3, ?4, ?5, '[\"t\"]', ?6, ?6)",
                rusqlite::params![
                    u.to_string(),
                    b.project,
                    b.description,
                    b.notes,
                    if i == 2 { "deleted" } else { "pending" },
                    super::tasks::ts(b.created_at.unwrap()),
                ],
            )
            .unwrap();
        put_rows(&s, u, rows);
        local.push(u);
    }
    // A numbered task with a failed edit, and local creates through the store's own path: a
    // subtask of the refused task `local[6]`, its subtask, and a subtask of a numbered task.
    put_rows(&s, server[0].uuid, &[("failed", Some("bad tag"), None)]);
    s.conn
        .execute(
            "UPDATE outbox SET op = 'create' WHERE idempotency_key = ?1",
            [format!("row-{}-0", local[6])],
        )
        .unwrap();
    let parents = [local[6], Uuid::from_u128(0xC0), server[1].uuid];
    for (i, parent) in parents.iter().enumerate() {
        let u = Uuid::from_u128(0xC0 + i as u128);
        let mut b = body("created here");
        b.parent = Some(parent.to_string());
        s.create_local(u, &format!("kc{i}"), &b, now()).unwrap();
    }

    let query = |all, project: Option<&str>, text: Option<&str>| TaskQuery {
        all,
        project: project.map(str::to_owned),
        text: text.map(str::to_owned),
        parent: None,
    };
    let queries = [
        query(false, None, None),
        query(true, None, None),
        query(true, Some("ops"), None),
        query(false, Some("SYN"), Some("CASE 1")),
        query(true, None, Some("syn-2")),
        query(true, None, Some("several")),
        query(true, Some("nope"), None),
        TaskQuery {
            parent: Some(local[6]),
            ..query(true, None, None)
        },
    ];
    for q in &queries {
        let fast = s.list(q).unwrap();
        assert_eq!(fast, s.list_per_task(q).unwrap(), "{q:?}");
        for t in &fast {
            assert_eq!(Some(t), s.task(t.uuid).unwrap().as_ref(), "{q:?}");
        }
    }
    let all = s.list(&query(true, None, None)).unwrap();
    assert_eq!(all.len(), 4 + cases.len() + 3);
    // The refused task holds its subtask and that one's; the numbered task's subtask goes.
    let refused_label = format!("~{}", &local[6].simple().to_string()[..8]);
    let held: Vec<Option<&str>> = (0..3u128)
        .map(|i| {
            all.iter()
                .find(|t| t.uuid == Uuid::from_u128(0xC0 + i))
                .unwrap()
        })
        .map(|t| t.held_by.as_deref())
        .collect();
    assert_eq!(held, [Some(&*refused_label), Some(&*refused_label), None]);
    let counts = |u: Uuid| {
        let t = s.task(u).unwrap().unwrap();
        (t.children, t.open_children, t.is_blocked())
    };
    assert_eq!(counts(local[6]), (1, 1, true));
    assert_eq!(counts(server[1].uuid), (1, 1, true));
    assert_eq!(counts(server[2].uuid), (0, 0, false));
    let several = s.task(local[5]).unwrap().unwrap();
    assert_eq!(
        (
            several.sync_state,
            several.open_rows,
            several.last_error.as_deref(),
            several.next_attempt_at
        ),
        (SyncState::Provisional, 5, Some("second"), Some(3_000))
    );
    let failed = s.task(local[6]).unwrap().unwrap();
    assert_eq!(
        (
            failed.sync_state,
            failed.open_rows,
            failed.last_error.as_deref(),
            failed.next_attempt_at
        ),
        // A failed task explains its failure, not the newer pending row's retry.
        (SyncState::Failed, 3, Some("refused"), Some(8_000))
    );
    let refused = s.task(local[8]).unwrap().unwrap();
    assert_eq!(
        (refused.sync_state, refused.last_error.as_deref()),
        (SyncState::Failed, Some("new refusal"))
    );
    let done = s.task(local[0]).unwrap().unwrap();
    assert_eq!(
        (
            done.sync_state,
            done.open_rows,
            done.last_error,
            done.next_attempt_at
        ),
        (SyncState::Provisional, 0, None, None)
    );
    let numbered = s.task(server[0].uuid).unwrap().unwrap();
    assert_eq!(
        (numbered.sync_state, numbered.last_error.as_deref()),
        (SyncState::Failed, Some("bad tag"))
    );
    let order: Vec<_> = all.iter().map(|t| (t.created_at, t.uuid)).collect();
    assert!(order.windows(2).all(|w| w[0].0 <= w[1].0), "capture order");
    assert_eq!(all[0].uuid, server[3].uuid, "the oldest first");
}

/// Not a test: prints how long listing 50,000 tasks takes, freshly imported (one pending create
/// each) and after a sync (every row done, every task numbered). Run it in release:
/// `cargo test --release -p callsign-sync -- --ignored --nocapture listing_50k`.
#[test]
#[ignore = "timing, not a test"]
fn listing_50k_timing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(dir.path()).unwrap();
    let items: Vec<_> = (0..50_000u128)
        .map(|i| {
            let u = Uuid::from_u128(i + 1);
            (u, format!("k{i}"), body(&format!("task {i}")))
        })
        .collect();
    s.create_local_many(&items, now()).unwrap();
    let all = TaskQuery {
        all: true,
        ..TaskQuery::default()
    };
    let time = |s: &Store, label: &str| {
        type List = fn(&Store, &TaskQuery) -> crate::error::Result<Vec<crate::LocalTask>>;
        let paths: [(&str, List); 2] = [
            ("one pass", Store::list),
            ("per task (the lookup's SQL)", Store::list_per_task),
        ];
        for (path, list) in paths {
            let mut ms: Vec<f64> = (0..5)
                .map(|_| {
                    let t = std::time::Instant::now();
                    assert_eq!(list(s, &all).unwrap().len(), 50_000);
                    t.elapsed().as_secs_f64() * 1000.0
                })
                .collect();
            ms.sort_by(f64::total_cmp);
            println!(
                "{label}, {path}: median {:.0} ms (min {:.0}, max {:.0})",
                ms[2], ms[0], ms[4]
            );
        }
        assert_eq!(s.list(&all).unwrap(), s.list_per_task(&all).unwrap());
    };
    time(&s, "list --all, 50,000 pending creates");
    s.conn
        .execute_batch(
            "UPDATE outbox SET state = 'in_progress', sent = 1;
             UPDATE outbox SET state = 'done';
             UPDATE tasks SET key = 'SYN-' || rowid, number = rowid;",
        )
        .unwrap();
    time(&s, "list --all, 50,000 synced (all rows done)");
}

/// The indicator's counts are tasks, each counted once by what its open rows say; they agree
/// with each task's own sync state (the rows' markers).
/// A create the server kept while recovering (queued here with a long retry) is done once the
/// feed brings the task numbered: nothing is left to send, and the counts say so. A refused one
/// stays failed (the user's later edits are folded into it, and only a retry sends them).
#[test]
fn a_sent_create_is_done_when_the_feed_brings_its_task_numbered() {
    let mut s = Store::in_memory().unwrap();
    let (kept, refused) = (Uuid::from_u128(1), Uuid::from_u128(2));
    for (u, k) in [(kept, "c1"), (refused, "c2")] {
        s.create_local(u, k, &body(&format!("task {k}")), now())
            .unwrap();
    }
    let ids: Vec<i64> = [kept, refused]
        .iter()
        .map(|u| s.rows_for_test(*u)[0].id)
        .collect();
    let claimed = s.claim(&ids, 1).unwrap();
    let recovering = Outcome::Retry(
        "recovering".into(),
        Some(callsign_core::ErrorCode::Recovering),
    );
    s.record_answers(
        &[
            (claimed[0].clone(), recovering),
            (claimed[1].clone(), Outcome::Fail("no parent".into())),
        ],
        |_| 60_000,
        2,
    )
    .unwrap();
    let c = s.counts().unwrap();
    assert_eq!((c.pending, c.failed), (1, 1), "{c:?}");
    let changed = s
        .apply_changes(
            &[
                server_task(kept, Some(("SYN-1", 1)), "task c1"),
                server_task(refused, Some(("SYN-2", 2)), "task c2"),
            ],
            "1",
        )
        .unwrap();
    assert_eq!(changed, vec![kept, refused]);
    let c = s.counts().unwrap();
    assert_eq!((c.pending, c.in_flight, c.failed), (0, 0, 1), "{c:?}");
    let t = s.task(kept).unwrap().unwrap();
    assert_eq!(t.key.as_deref(), Some("SYN-1"));
    assert_eq!(t.sync_state, SyncState::Synced, "{t:?}");
    let t = s.task(refused).unwrap().unwrap();
    assert_eq!(t.sync_state, SyncState::Failed, "{t:?}");
}

#[test]
fn counts_are_tasks_and_agree_with_each_tasks_state() {
    let mut s = Store::in_memory().unwrap();
    let new = |s: &mut Store, n: u128, project: &str| {
        let u = Uuid::from_u128(n);
        let b = NewTask {
            project: project.into(),
            ..body(&format!("task {n}"))
        };
        s.create_local(u, &format!("c{n}"), &b, now()).unwrap();
        u
    };
    let first_row = |s: &Store, u: Uuid| s.rows_for_test(u)[0].clone();
    // 1: queued, with an edit folded in and a second row appended after a claim.
    let queued = new(&mut s, 1, "SYN");
    s.edit_local(queued, patch("edited"), "e1", now(), EDIT)
        .unwrap();
    // 2: its create on the wire and an edit queued behind it: in flight, not also pending.
    let flying = new(&mut s, 2, "SYN");
    let row = first_row(&s, flying);
    s.claim(&[row.id], 1).unwrap();
    s.edit_local(flying, patch("later"), "e2", now(), EDIT)
        .unwrap();
    // 3: refused create with an edit held behind it: failed, not pending.
    let refused = new(&mut s, 3, "ZZZ");
    let row = first_row(&s, refused);
    let claimed = s.claim(&[row.id], 1).unwrap();
    s.record_answers(
        &[(claimed[0].clone(), Outcome::Fail("no".into()))],
        |_| 0,
        2,
    )
    .unwrap();
    s.edit_local(refused, patch("held"), "e3", now(), EDIT)
        .unwrap();
    // 4, 5: in the local inbox; 5 deleted there (not counted).
    new(&mut s, 4, "INBOX");
    let gone = new(&mut s, 5, "INBOX");
    s.edit_local(
        gone,
        TaskPatch {
            status: Some(TaskStatus::Deleted),
            ..TaskPatch::default()
        },
        "e5",
        now(),
        EDIT,
    )
    .unwrap();
    let c = s.counts().unwrap();
    assert_eq!(
        (c.pending, c.in_flight, c.failed, c.local),
        (1, 1, 1, 1),
        "{c:?}"
    );
    let failed_tasks = s
        .list(&TaskQuery {
            all: true,
            ..TaskQuery::default()
        })
        .unwrap()
        .into_iter()
        .filter(|t| t.sync_state == SyncState::Failed)
        .count();
    assert_eq!(failed_tasks as u64, c.failed);
}

#[test]
fn discarding_a_refused_parent_keeps_its_subtasks_as_tasks_of_their_own() {
    let mut s = Store::in_memory().unwrap();
    let (parent, child) = (Uuid::from_u128(0xD1), Uuid::from_u128(0xD2));
    s.create_local(parent, "kp", &body("parent"), now())
        .unwrap();
    let mut b = body("child");
    b.parent = Some(parent.to_string());
    s.create_local(child, "kc", &b, now()).unwrap();
    s.conn
        .execute(
            "UPDATE outbox SET state = 'failed', sent = 1, last_error = 'no' WHERE uuid = ?1",
            [parent.to_string()],
        )
        .unwrap();
    let held = s.task(child).unwrap().unwrap();
    assert!(held.held_by.is_some());
    let plan = |s: &Store| {
        let rows = s.open_rows(100).unwrap();
        let parents = s.parents(rows.iter().map(|r| r.uuid)).unwrap();
        crate::plan::plan(&rows, &parents, 0, 10).send.len()
    };
    assert_eq!(plan(&s), 0, "the refused parent holds its subtask");

    assert_eq!(s.discard(parent, now()).unwrap(), super::Discarded::Removed);
    let child = s.task(child).unwrap().unwrap();
    assert_eq!((child.parent, child.held_by), (None, None));
    let rows = s.open_rows(100).unwrap();
    assert_eq!(rows.len(), 1);
    assert!(
        rows[0].body.get("parent").is_none_or(|p| p.is_null()),
        "{}",
        rows[0].body
    );
    assert_eq!(plan(&s), 1, "the subtask goes as a task of its own");
}

fn commit(hash: char, at: i64, subject: &str) -> callsign_core::dto::CommitLink {
    callsign_core::dto::CommitLink {
        hash: hash.to_string().repeat(40),
        subject: subject.into(),
        author: "Ann <ann@example.com>".into(),
        at: DateTime::from_timestamp(at, 0).unwrap(),
        action: callsign_core::dto::CommitAction::Refs,
        comment: None,
    }
}

fn hashes(t: &crate::model::LocalTask) -> Vec<String> {
    t.commits.iter().map(|c| c.hash[..1].to_string()).collect()
}

/// A task the server numbered, with nothing queued.
fn synced_task(s: &mut Store) -> Uuid {
    let u = Uuid::new_v4();
    let mut t = server_task(u, Some(("SYN-5", 5)), "x");
    t.commits = vec![commit('a', 10, "a")];
    s.apply_changes(&[t], "1").unwrap();
    u
}

#[test]
fn a_linked_commit_shows_at_once_and_queues_an_update_with_the_link() {
    let mut s = Store::in_memory().unwrap();
    let u = synced_task(&mut s);
    assert_eq!(hashes(&s.task(u).unwrap().unwrap()), ["a"]);
    let link = TaskPatch {
        commits: vec![commit('b', 5, "b")],
        ..TaskPatch::default()
    };
    s.edit_local(u, link, "k1", now(), Journal::Skip).unwrap();
    let t = s.task(u).unwrap().unwrap();
    assert_eq!(hashes(&t), ["b", "a"], "sorted by time, at once");
    let rows = s.open_rows(10).unwrap();
    assert_eq!((rows.len(), rows[0].op), (1, MutationOp::Update));
    let sent: TaskPatch = serde_json::from_value(rows[0].body.clone()).unwrap();
    assert_eq!(sent.commits, [commit('b', 5, "b")]);
    assert_eq!(sent.base, None, "a link sets no merged field: no base");
    // An unlink folds into the unsent update and takes the link off here too.
    let unlink = TaskPatch {
        unlink_commits: vec!["a".repeat(40), "b".repeat(40)],
        ..TaskPatch::default()
    };
    s.edit_local(u, unlink, "k2", now(), Journal::Skip).unwrap();
    assert!(s.task(u).unwrap().unwrap().commits.is_empty());
    let rows = s.open_rows(10).unwrap();
    assert_eq!(rows.len(), 1, "folded");
    let sent: TaskPatch = serde_json::from_value(rows[0].body.clone()).unwrap();
    assert!(sent.commits.is_empty());
    assert_eq!(sent.unlink_commits, ["a".repeat(40), "b".repeat(40)]);
}

#[test]
fn a_link_is_never_undone() {
    let mut s = Store::in_memory().unwrap();
    let u = synced_task(&mut s);
    let p = TaskPatch {
        description: Some("y".into()),
        commits: vec![commit('b', 5, "b")],
        ..TaskPatch::default()
    };
    s.edit_local(u, p, "k1", now(), EDIT).unwrap();
    let journal = s.journal_for_test();
    assert_eq!(
        journal.last().unwrap().3,
        TaskPatch {
            description: Some("x".into()),
            ..TaskPatch::default()
        },
        "the revert leaves the link alone"
    );
    s.undo(|| "k2".into(), now()).unwrap();
    let t = s.task(u).unwrap().unwrap();
    assert_eq!(
        (t.description.as_str(), hashes(&t)),
        ("x", vec!["b".into(), "a".into()])
    );
}

#[test]
fn a_create_keeps_its_links_and_an_edit_folds_more_into_it() {
    let mut s = Store::in_memory().unwrap();
    let u = Uuid::new_v4();
    let mut b = body("x");
    b.commits = vec![commit('c', 30, "c"), commit('a', 10, "a")];
    s.create_local(u, "k0", &b, now()).unwrap();
    assert_eq!(hashes(&s.task(u).unwrap().unwrap()), ["a", "c"]);
    let p = TaskPatch {
        commits: vec![commit('b', 20, "b")],
        unlink_commits: vec!["c".repeat(40)],
        ..TaskPatch::default()
    };
    s.edit_local(u, p, "k1", now(), Journal::Skip).unwrap();
    assert_eq!(hashes(&s.task(u).unwrap().unwrap()), ["a", "b"]);
    let rows = s.open_rows(10).unwrap();
    assert_eq!((rows.len(), rows[0].op), (1, MutationOp::Create));
    let create: NewTask = serde_json::from_value(rows[0].body.clone()).unwrap();
    assert_eq!(create.commits, [commit('a', 10, "a"), commit('b', 20, "b")]);
}

#[test]
fn reconcile_takes_the_servers_links_once_nothing_waits() {
    let mut s = Store::in_memory().unwrap();
    let u = synced_task(&mut s);
    let link = TaskPatch {
        commits: vec![commit('b', 5, "b")],
        ..TaskPatch::default()
    };
    s.edit_local(u, link, "k1", now(), Journal::Skip).unwrap();
    // The feed brings the task before the link is sent: the local list stays.
    let mut other = server_task(u, Some(("SYN-5", 5)), "x");
    other.commits = vec![commit('a', 10, "a"), commit('d', 40, "d")];
    s.apply_changes(&[other.clone()], "2").unwrap();
    assert_eq!(hashes(&s.task(u).unwrap().unwrap()), ["b", "a"]);
    // The answer to the link: the server's list, with another device's link, replaces it.
    let rows = s.claim(&[s.open_rows(1).unwrap()[0].id], 1).unwrap();
    other.commits = vec![
        commit('b', 5, "b"),
        commit('a', 10, "a"),
        commit('d', 40, "d"),
    ];
    s.record_answers(&[(rows[0].clone(), Outcome::Done(Some(other)))], |_| 0, 2)
        .unwrap();
    assert_eq!(hashes(&s.task(u).unwrap().unwrap()), ["b", "a", "d"]);
    // A task first seen from the feed comes with its links.
    let v = Uuid::new_v4();
    let mut new = server_task(v, Some(("SYN-6", 6)), "new");
    new.commits = vec![commit('e', 1, "e")];
    s.apply_changes(&[new], "3").unwrap();
    assert_eq!(hashes(&s.task(v).unwrap().unwrap()), ["e"]);
}
