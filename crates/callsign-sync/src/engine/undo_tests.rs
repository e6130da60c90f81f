//! `Engine::undo`: each kind of change journaled with it and reverted as a new queued change,
//! newest step first; server changes never journaled; the journal bounded.
use callsign_core::dto::{MutationOp, Task, TaskPatch, TaskStatus};
use callsign_core::Priority;
use uuid::Uuid;

use super::{Engine, NewTaskInput};
use crate::error::Error;
use crate::model::{LocalTask, RowState};
use crate::outbox_state::Outcome;
use crate::undo::UndoKind;

fn engine() -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path()).unwrap();
    (dir, engine)
}

fn add(e: &Engine, d: &str, project: &str) -> LocalTask {
    e.create(NewTaskInput {
        description: d.into(),
        project: Some(project.into()),
        ..NewTaskInput::default()
    })
    .unwrap()
}

fn get(e: &Engine, u: Uuid) -> LocalTask {
    e.get(&u.to_string()).unwrap()
}

/// The task as the server would answer it: its local fields, with `key`.
fn as_server(t: &LocalTask, key: Option<(&str, u64)>) -> Task {
    Task {
        uuid: t.uuid,
        key: key.map(|k| k.0.to_owned()),
        number: key.map(|k| k.1),
        project: t.project.clone(),
        description: t.description.clone(),
        notes: t.notes.clone(),
        status: t.status,
        tags: t.tags.clone(),
        due: t.due,
        priority: t.priority,
        parent: t.parent,
        previous_keys: t.previous_keys.clone(),
        conflicts: vec![],
        created_at: t.created_at,
        modified_at: t.modified_at,
        assignee: None,
        created_by: None,
        origin: None,
        commits: Vec::new(),
    }
}

/// Sends the task's open rows and answers each with the task as it is here, numbered `key`.
fn settle(e: &Engine, u: Uuid, key: (&str, u64)) {
    let t = get(e, u);
    let mut store = e.store();
    let ids: Vec<i64> = store
        .open_rows(100)
        .unwrap()
        .into_iter()
        .filter(|r| r.uuid == u)
        .map(|r| r.id)
        .collect();
    let rows = store.claim(&ids, 1).unwrap();
    let answers: Vec<_> = rows
        .into_iter()
        .map(|r| (r, Outcome::Done(Some(as_server(&t, Some(key))))))
        .collect();
    store.record_answers(&answers, |_| 0, 2).unwrap();
}

/// The task's rows not yet answered: (op, body).
fn queued(e: &Engine, u: Uuid) -> Vec<(MutationOp, serde_json::Value)> {
    e.store()
        .rows_for_test(u)
        .into_iter()
        .filter(|r| r.state != RowState::Done)
        .map(|r| (r.op, r.body))
        .collect()
}

#[test]
fn undoing_a_capture_deletes_the_task_and_keeps_its_key() {
    let (_dir, e) = engine();
    let t = add(&e, "typo task", "SYN");
    assert_eq!(
        e.store().journal_for_test().len(),
        1,
        "journaled with the capture"
    );
    settle(&e, t.uuid, ("SYN-1", 1));
    let undone = e.undo().unwrap();
    assert_eq!(undone.kind, UndoKind::Create);
    assert_eq!(
        (undone.tasks[0].status, undone.tasks[0].key.as_deref()),
        (TaskStatus::Deleted, Some("SYN-1"))
    );
    assert_eq!(
        queued(&e, t.uuid),
        [(
            MutationOp::Update,
            serde_json::json!({"status": "deleted", "base": {"status": "pending"}})
        )],
        "a new update through the outbox; the create is never rewritten"
    );
    assert!(
        matches!(e.undo(), Err(Error::NothingToUndo)),
        "the undo itself is not journaled"
    );
}

#[test]
fn undo_is_a_stack_complete_then_capture() {
    let (_dir, e) = engine();
    let t = add(&e, "call the bank", "SYN");
    settle(&e, t.uuid, ("SYN-1", 1));
    e.complete("SYN-1").unwrap();
    let undone = e.undo().unwrap();
    assert_eq!(undone.kind, UndoKind::Complete);
    assert_eq!(
        undone.changes[0].restored,
        TaskPatch {
            status: Some(TaskStatus::Pending),
            ..TaskPatch::default()
        }
    );
    assert_eq!(get(&e, t.uuid).status, TaskStatus::Pending);
    // The next undo goes back one more step (the capture), not back to completed.
    assert_eq!(e.undo().unwrap().kind, UndoKind::Create);
    assert_eq!(get(&e, t.uuid).status, TaskStatus::Deleted);
    assert!(matches!(e.undo(), Err(Error::NothingToUndo)));
}

#[test]
fn undoing_a_delete_or_reopen_restores_the_status_before_it() {
    let (_dir, e) = engine();
    let t = add(&e, "x", "SYN");
    e.complete(&t.uuid.to_string()).unwrap();
    e.delete(&t.uuid.to_string()).unwrap();
    e.reopen(&t.uuid.to_string()).unwrap();
    let kinds: Vec<_> = (0..3)
        .map(|_| {
            let u = e.undo().unwrap();
            (u.kind, u.tasks[0].status)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (UndoKind::Reopen, TaskStatus::Deleted),
            (UndoKind::Delete, TaskStatus::Completed),
            (UndoKind::Complete, TaskStatus::Pending),
        ]
    );
}

#[test]
fn undoing_an_edit_restores_exactly_the_fields_it_set_and_not_what_a_pull_changed() {
    let (_dir, e) = engine();
    let t = add(&e, "old text", "SYN");
    settle(&e, t.uuid, ("SYN-1", 1));
    e.edit(
        "SYN-1",
        TaskPatch {
            description: Some("new text".into()),
            priority: Some(Some(Priority::H)),
            ..TaskPatch::default()
        },
    )
    .unwrap();
    settle(&e, t.uuid, ("SYN-1", 1));
    // Another device changed the notes: the pull is not journaled, and undo leaves it alone.
    let mut theirs = as_server(&get(&e, t.uuid), Some(("SYN-1", 1)));
    theirs.notes = "from the phone".into();
    e.store().apply_changes(&[theirs], "c1").unwrap();
    assert_eq!(
        e.store().journal_for_test().len(),
        2,
        "capture and edit only"
    );

    let undone = e.undo().unwrap();
    assert_eq!(undone.kind, UndoKind::Edit);
    let now = get(&e, t.uuid);
    assert_eq!(
        (now.description.as_str(), now.priority, now.notes.as_str()),
        ("old text", None, "from the phone")
    );
    assert_eq!(
        queued(&e, t.uuid)[0].1,
        serde_json::json!({"description": "old text", "priority": null,
            "base": {"description": "new text", "priority": "H"}})
    );
}

#[test]
fn changes_from_the_server_are_never_journaled() {
    let (_dir, e) = engine();
    let mut t = as_server(&add(&e, "mine", "SYN"), None);
    e.undo().unwrap();
    t.uuid = Uuid::new_v4();
    t.key = Some("SYN-7".into());
    t.number = Some(7);
    e.store().apply_changes(&[t], "c1").unwrap();
    assert!(e.store().journal_for_test().is_empty());
    assert!(matches!(e.undo(), Err(Error::NothingToUndo)));
}

#[test]
fn undoing_a_move_of_a_numbered_task_queues_the_move_back() {
    let (_dir, e) = engine();
    let t = add(&e, "filed wrong", "SYN");
    settle(&e, t.uuid, ("SYN-1", 1));
    e.set_project("SYN-1", "ops").unwrap();
    let undone = e.undo().unwrap();
    assert_eq!(undone.kind, UndoKind::Move);
    assert_eq!(undone.tasks[0].project, "SYN");
    // The move and its undo fold into one unsent update (the move was never sent).
    assert_eq!(
        queued(&e, t.uuid),
        [(MutationOp::Update, serde_json::json!({"project": "SYN"}))]
    );
}

/// "idea" captured in the local inbox, then `edit --project DEV --description D` (one step).
fn idea_moved_to_dev(e: &Engine, description: &str) -> LocalTask {
    let t = e
        .create(NewTaskInput {
            description: "idea".into(),
            ..NewTaskInput::default()
        })
        .unwrap();
    assert!(t.is_local());
    let patch = TaskPatch {
        description: Some(description.into()),
        ..TaskPatch::default()
    };
    let moved = e
        .edit_and_move(&t.uuid.to_string(), Some("DEV"), patch)
        .unwrap();
    assert_eq!(moved.project, "DEV");
    moved
}

#[test]
fn undoing_a_move_out_of_the_inbox_brings_it_back_and_edit_with_a_move_is_one_step() {
    let (_dir, e) = engine();
    let t = idea_moved_to_dev(&e, "better idea");
    let undone = e.undo().unwrap();
    assert_eq!(
        undone.changes.iter().map(|c| c.kind).collect::<Vec<_>>(),
        [UndoKind::Edit, UndoKind::Move],
        "one step, newest change first"
    );
    let back = get(&e, t.uuid);
    assert_eq!(
        (
            back.project.as_str(),
            back.description.as_str(),
            back.is_local()
        ),
        ("INBOX", "idea", true)
    );
    assert_eq!(queued(&e, t.uuid)[0].1["project"], "INBOX");
    assert_eq!(e.undo().unwrap().kind, UndoKind::Create);
}

#[test]
fn an_import_is_one_step() {
    let (_dir, e) = engine();
    let before = add(&e, "before", "SYN");
    let inputs = ["a", "b", "c"]
        .map(|d| NewTaskInput {
            description: d.into(),
            project: Some("SYN".into()),
            ..NewTaskInput::default()
        })
        .to_vec();
    let uuids = e.create_many(inputs).unwrap();
    let undone = e.undo().unwrap();
    assert_eq!((undone.kind, undone.tasks.len()), (UndoKind::Import, 3));
    for u in uuids {
        assert_eq!(get(&e, u).status, TaskStatus::Deleted);
    }
    assert_eq!(get(&e, before.uuid).status, TaskStatus::Pending);
}

#[test]
fn an_undo_that_cannot_be_made_changes_nothing_and_keeps_the_step() {
    let (_dir, e) = engine();
    let parent = add(&e, "parent", "SYN");
    let child = e
        .create(NewTaskInput {
            description: "child".into(),
            parent: Some(parent.uuid.to_string()),
            ..NewTaskInput::default()
        })
        .unwrap();
    e.complete(&child.uuid.to_string()).unwrap();
    e.complete(&parent.uuid.to_string()).unwrap();
    e.reopen(&child.uuid.to_string()).unwrap();
    e.reopen(&parent.uuid.to_string()).unwrap();
    // Back to completed while the child is open: refused, as `done` would be.
    let journal = e.store().journal_for_test();
    assert!(matches!(e.undo(), Err(Error::Blocked { .. })));
    assert_eq!(e.store().journal_for_test(), journal);
    assert_eq!(get(&e, parent.uuid).status, TaskStatus::Pending);
    // The journal is written in the change's transaction: a refused change journals nothing.
    assert!(e.complete(&parent.uuid.to_string()).is_err());
    assert_eq!(e.store().journal_for_test(), journal);
}

#[test]
fn undoing_a_refused_capture_removes_it_as_delete_does() {
    let (_dir, e) = engine();
    let t = add(&e, "wrong project", "ZZZ");
    let mut store = e.store();
    let id = store.open_rows(1).unwrap()[0].id;
    let rows = store.claim(&[id], 1).unwrap();
    let refusal = crate::outbox_state::Refusal {
        code: Some(callsign_core::ErrorCode::ProjectNotFound),
        message: "no project ZZZ".into(),
    };
    store
        .record_answers(&[(rows[0].clone(), Outcome::Fail(refusal))], |_| 0, 2)
        .unwrap();
    drop(store);
    let undone = e.undo().unwrap();
    assert!(undone.changes[0].removed && undone.tasks.is_empty());
    assert!(matches!(
        e.get(&t.uuid.to_string()),
        Err(Error::NotFound(_))
    ));
    assert_eq!(e.status().unwrap().failed, 0);
}

#[test]
fn the_journal_keeps_the_newest_hundred_steps() {
    let (_dir, e) = engine();
    let t = add(&e, "v0", "SYN");
    for i in 1..=crate::undo::MAX_STEPS + 4 {
        let patch = TaskPatch {
            description: Some(format!("v{i}")),
            ..TaskPatch::default()
        };
        e.edit(&t.uuid.to_string(), patch).unwrap();
    }
    let journal = e.store().journal_for_test();
    assert_eq!(journal.len() as i64, crate::undo::MAX_STEPS);
    assert_eq!(
        journal[0].3.description.as_deref(),
        Some("v4"),
        "the capture and the oldest edits went"
    );
    for _ in 0..crate::undo::MAX_STEPS {
        e.undo().unwrap();
    }
    assert_eq!(get(&e, t.uuid).description, "v4");
    assert!(matches!(e.undo(), Err(Error::NothingToUndo)));
}

#[test]
fn a_numbered_task_is_not_moved_back_into_the_inbox_but_the_rest_is_undone() {
    let (_dir, e) = engine();
    let t = idea_moved_to_dev(&e, "plan");
    settle(&e, t.uuid, ("DEV-1", 1));
    let undone = e.undo().unwrap();
    let moved = &undone.changes[1];
    assert_eq!(
        (moved.kind, &moved.restored),
        (UndoKind::Move, &TaskPatch::default())
    );
    assert!(
        moved
            .kept
            .as_deref()
            .is_some_and(|k| k.contains("stays in DEV")),
        "{:?}",
        moved.kept
    );
    let now = get(&e, t.uuid);
    assert_eq!(
        (now.project.as_str(), now.description.as_str()),
        ("DEV", "idea")
    );
    assert_eq!(
        queued(&e, t.uuid),
        [(
            MutationOp::Update,
            serde_json::json!({"description": "idea", "base": {"description": "plan"}})
        )]
    );
    assert_eq!(e.undo().unwrap().kind, UndoKind::Create, "the step is gone");
}
