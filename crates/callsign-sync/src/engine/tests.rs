//! `create_many` against `create`: the same rows per task, one transaction for all of them.
use callsign_core::dto::TaskStatus;

use super::{Engine, NewTaskInput};
use crate::error::Error;
use crate::model::SyncState;
use crate::settings::Settings;
use crate::store::TaskQuery;

fn engine() -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path()).unwrap();
    (dir, engine)
}

fn input(d: &str, project: Option<&str>) -> NewTaskInput {
    NewTaskInput {
        description: d.into(),
        project: project.map(str::to_owned),
        notes: String::new(),
        tags: vec![],
        due: None,
        priority: None,
        parent: None,
        assignee: None,
    }
}

pub(super) fn all(e: &Engine) -> Vec<crate::LocalTask> {
    e.query(&TaskQuery {
        all: true,
        ..TaskQuery::default()
    })
    .unwrap()
}

#[test]
fn create_many_saves_each_task_as_create_does_in_input_order() {
    let (_dir, e) = engine();
    let one = e.create(input("made one by one", Some("ben"))).unwrap();
    let inputs = vec![
        NewTaskInput {
            notes: "with notes".into(),
            ..input("first imported", Some("ben"))
        },
        input("second imported", Some("OPS")),
        input("third imported", Some("ben")),
    ];
    let uuids = e.create_many(inputs).unwrap();
    assert_eq!(uuids.len(), 3);

    let tasks = all(&e);
    let listed: Vec<_> = tasks.iter().map(|t| t.uuid).collect();
    assert_eq!(
        listed,
        [vec![one.uuid], uuids.clone()].concat(),
        "capture order"
    );
    for t in &tasks {
        assert_eq!(
            (t.key.as_deref(), t.sync_state, t.status, t.open_rows),
            (None, SyncState::Provisional, TaskStatus::Pending, 1),
            "{} is provisional with one queued create, like a task from create",
            t.description
        );
    }
    let imported = e.get(&uuids[0].to_string()).unwrap();
    assert_eq!(
        (imported.project.as_str(), imported.notes.as_str()),
        ("BEN", "with notes")
    );
    assert_eq!(e.get(&uuids[1].to_string()).unwrap().project, "OPS");
    assert_eq!(e.status().unwrap().pending, 4, "one outbox row per task");
}

#[test]
fn one_bad_input_refuses_the_whole_import_and_names_its_position() {
    let (_dir, e) = engine();
    for (bad, want) in [
        (
            input("  ", Some("BEN")),
            "task 3: the description must not be empty",
        ),
        (input("bad project", Some("1X")), "task 3: project"),
    ] {
        let inputs = vec![
            input("fine", Some("BEN")),
            input("also fine", Some("BEN")),
            bad,
        ];
        match e.create_many(inputs) {
            Err(Error::Invalid(m)) => assert!(m.starts_with(want), "{m:?} should start {want:?}"),
            other => panic!("expected Invalid({want:?}), got {other:?}"),
        }
        assert!(
            all(&e).is_empty(),
            "nothing is saved when one input is refused"
        );
        assert_eq!(e.status().unwrap().pending, 0);
    }
}

#[test]
fn create_many_uses_the_saved_default_project() {
    let (_dir, e) = engine();
    e.set_settings(&Settings {
        project: Some("DEF".into()),
        ..Settings::default()
    })
    .unwrap();
    let uuids = e
        .create_many(vec![input("a", None), input("b", Some("own"))])
        .unwrap();
    let projects: Vec<_> = uuids
        .iter()
        .map(|u| e.get(&u.to_string()).unwrap().project)
        .collect();
    assert_eq!(projects, ["DEF", "OWN"]);
}

#[test]
fn an_empty_import_saves_nothing() {
    let (_dir, e) = engine();
    assert!(e.create_many(vec![]).unwrap().is_empty());
    assert!(all(&e).is_empty());
}

#[test]
fn with_no_server_and_no_default_a_capture_goes_to_the_local_inbox_and_is_held() {
    let (_dir, e) = engine();
    let t = e.create(input("captured offline", None)).unwrap();
    assert_eq!((t.project.as_str(), t.is_local()), ("INBOX", true));
    let s = e.status().unwrap();
    assert_eq!(
        (s.local, s.pending, s.in_flight),
        (1, 0, 0),
        "held, not queued to send"
    );
    assert!(
        e.store().open_rows(10).unwrap().is_empty(),
        "the sync loop is never offered an inbox task"
    );
    // Sent to a server project: queued in capture order, no longer local.
    let later = e.create(input("captured later", None)).unwrap();
    assert_eq!(e.send_inbox("dev").unwrap(), 2);
    let rows = e.store().open_rows(10).unwrap();
    let order: Vec<_> = rows
        .iter()
        .map(|r| (r.uuid, r.body["project"].clone()))
        .collect();
    assert_eq!(order, [(t.uuid, "DEV".into()), (later.uuid, "DEV".into())]);
    let s = e.status().unwrap();
    assert_eq!((s.local, s.pending), (0, 2));
    assert!(matches!(e.send_inbox("inbox"), Err(Error::Invalid(_))));
}

#[test]
fn a_deleted_inbox_task_is_removed_not_sent() {
    let (_dir, e) = engine();
    let keep = e.create(input("keep", None)).unwrap();
    let gone = e.create(input("gone", None)).unwrap();
    e.delete(&gone.uuid.to_string()).unwrap();
    assert_eq!(
        e.status().unwrap().local,
        1,
        "a deleted inbox task is not counted"
    );
    let mut events = e.subscribe();
    assert_eq!(e.send_inbox("DEV").unwrap(), 1);
    assert!(matches!(
        e.get(&gone.uuid.to_string()),
        Err(Error::NotFound(_))
    ));
    assert_eq!(e.get(&keep.uuid.to_string()).unwrap().project, "DEV");
    let removed = std::iter::from_fn(|| events.try_recv().ok())
        .any(|ev| ev == crate::Event::TaskRemoved { uuid: gone.uuid });
    assert!(removed, "subscribers hear that the task left");
}

/// Refuses the task's create as the server would have (claim, then a refusal with a code).
fn refuse(e: &Engine, uuid: uuid::Uuid, code: callsign_core::ErrorCode) {
    let mut store = e.store();
    let id = store
        .open_rows(100)
        .unwrap()
        .into_iter()
        .find(|r| r.uuid == uuid)
        .unwrap()
        .id;
    let rows = store.claim(&[id], 1).unwrap();
    let refusal = crate::outbox_state::Refusal {
        code: Some(code),
        message: format!("{} ({code}): ZZZ", code.title()),
    };
    store
        .record_answers(
            &[(rows[0].clone(), crate::outbox_state::Outcome::Fail(refusal))],
            |_| 0,
            2,
        )
        .unwrap();
}

#[test]
fn a_task_refused_for_its_project_is_fixed_by_choosing_another_and_goes_again() {
    let (_dir, e) = engine();
    let t = e.create(input("wrong project", Some("ZZZ"))).unwrap();
    refuse(&e, t.uuid, callsign_core::ErrorCode::ProjectNotFound);
    let failed = e.get(&t.uuid.to_string()).unwrap();
    let why = crate::reason::task_failure(&failed).unwrap();
    assert_eq!(why.fix, crate::reason::Fix::Project);
    assert!(why.summary.contains("no project ZZZ"), "{}", why.summary);
    assert_eq!(e.status().unwrap().failed, 1);

    let fixed = e.set_project(&t.uuid.to_string(), "dev").unwrap();
    assert_eq!(
        (fixed.project.as_str(), fixed.sync_state),
        ("DEV", SyncState::Provisional)
    );
    let s = e.status().unwrap();
    assert_eq!(
        (s.failed, s.pending),
        (0, 1),
        "the failed count follows the task"
    );
    let rows = e.store().open_rows(10).unwrap();
    let row = &rows[0];
    assert_eq!(
        (row.body["project"].as_str(), row.sent),
        (Some("DEV"), false)
    );
    // Once its create is on the wire, the project stays until the server answers.
    let mut store = e.store();
    store.claim(&[row.id], 3).unwrap();
    drop(store);
    assert!(matches!(
        e.set_project(&t.uuid.to_string(), "OPS"),
        Err(Error::Invalid(_))
    ));
}

#[test]
fn editing_a_refused_task_sends_it_again_and_discarding_removes_it() {
    let (_dir, e) = engine();
    let t = e.create(input("bad body", Some("DEV"))).unwrap();
    refuse(&e, t.uuid, callsign_core::ErrorCode::InvalidBody);
    let key_before = e.store().rows_for_test(t.uuid)[0].idempotency_key.clone();
    let patch = callsign_core::dto::TaskPatch {
        description: Some("good body".into()),
        ..Default::default()
    };
    let edited = e.edit(&t.uuid.to_string(), patch).unwrap();
    assert_eq!(edited.sync_state, SyncState::Provisional, "sent again");
    let rows = e.store().rows_for_test(t.uuid);
    assert_eq!(rows.len(), 1, "the edit is folded into the create");
    assert_eq!(rows[0].body["description"], "good body");
    assert_ne!(
        rows[0].idempotency_key, key_before,
        "under a new idempotency key"
    );

    let other = e.create(input("refused again", Some("ZZZ"))).unwrap();
    refuse(&e, other.uuid, callsign_core::ErrorCode::ProjectNotFound);
    assert_eq!(e.status().unwrap().failed, 1);
    assert_eq!(e.discard(&other.uuid.to_string()).unwrap(), None);
    assert!(matches!(
        e.get(&other.uuid.to_string()),
        Err(Error::NotFound(_))
    ));
    assert_eq!(
        e.status().unwrap().failed,
        0,
        "a discarded task is not counted"
    );
    assert!(
        matches!(e.discard(&t.uuid.to_string()), Ok(None)),
        "a task never sent is discarded too"
    );
}

#[test]
fn deleting_a_refused_task_discards_it_so_the_failed_count_returns_to_zero() {
    let (_dir, e) = engine();
    let t = e.create(input("refused", Some("ZZZ"))).unwrap();
    refuse(&e, t.uuid, callsign_core::ErrorCode::ProjectNotFound);
    let deleted = e.delete(&t.uuid.to_string()).unwrap();
    assert_eq!(deleted.status, TaskStatus::Deleted);
    assert!(matches!(
        e.get(&t.uuid.to_string()),
        Err(Error::NotFound(_))
    ));
    assert_eq!(e.status().unwrap().failed, 0);
    // A task the server has not refused is deleted as before (kept, marked deleted).
    let ok = e.create(input("fine", Some("DEV"))).unwrap();
    e.delete(&ok.uuid.to_string()).unwrap();
    assert_eq!(
        e.get(&ok.uuid.to_string()).unwrap().status,
        TaskStatus::Deleted
    );
}

fn sub(d: &str, parent: &str) -> NewTaskInput {
    NewTaskInput {
        parent: Some(parent.into()),
        ..input(d, None)
    }
}

#[test]
fn a_subtask_takes_its_parents_project_and_blocks_its_completion_until_done() {
    let (_dir, e) = engine();
    let launch = e.create(input("Launch", Some("syn"))).unwrap();
    // By provisional short id, and by UUID.
    let first = e.create(sub("Write the post", &launch.short_id())).unwrap();
    let second = e
        .create(sub("Record the demo", &launch.uuid.to_string()))
        .unwrap();
    for t in [&first, &second] {
        assert_eq!((t.project.as_str(), t.parent), ("SYN", Some(launch.uuid)));
    }
    let launch = e.get(&launch.uuid.to_string()).unwrap();
    assert_eq!((launch.children, launch.open_children), (2, 2));

    for (bad, want) in [
        (
            NewTaskInput {
                project: Some("OPS".into()),
                ..sub("elsewhere", &launch.short_id())
            },
            "a subtask is in its parent's project",
        ),
        (sub("orphan", "SYN-99"), "parent: no task matches"),
    ] {
        match e.create(bad) {
            Err(Error::Invalid(m)) => assert!(m.contains(want), "{m:?} should say {want:?}"),
            other => panic!("expected Invalid({want:?}), got {other:?}"),
        }
    }

    match e.complete(&launch.short_id()) {
        Err(Error::Blocked { task, open }) => {
            assert_eq!(task, launch.short_id());
            assert_eq!(open, [first.short_id(), second.short_id()]);
        }
        other => panic!("expected Blocked, got {other:?}"),
    }
    assert_eq!(
        e.get(&launch.short_id()).unwrap().status,
        TaskStatus::Pending,
        "a refused completion changes nothing"
    );
    e.complete(&first.short_id()).unwrap();
    e.delete(&second.short_id()).unwrap();
    let done = e.complete(&launch.short_id()).unwrap();
    assert_eq!(
        (done.status, done.open_children),
        (TaskStatus::Completed, 0)
    );
    match e.create(sub("too late", &launch.short_id())) {
        Err(Error::Invalid(m)) => assert!(m.contains("is completed"), "{m}"),
        other => panic!("a completed parent takes no subtask: {other:?}"),
    }
}

#[test]
fn next_lists_unblocked_tasks_leaf_first() {
    use callsign_core::dto::Task;
    let (_dir, e) = engine();
    let uuid = |n: u128| uuid::Uuid::from_u128(n);
    // (uuid, key, parent, status)
    let tree = [
        (1, "SYN-1", None, TaskStatus::Pending),
        (11, "SYN-1.1", Some(1), TaskStatus::Pending),
        (111, "SYN-1.1.1", Some(11), TaskStatus::Pending),
        (12, "SYN-1.2", Some(1), TaskStatus::Pending),
        (2, "SYN-2", None, TaskStatus::Pending),
        (3, "SYN-3", None, TaskStatus::Pending),
        (31, "SYN-3.1", Some(3), TaskStatus::Completed),
    ];
    let tasks: Vec<Task> = tree
        .iter()
        .map(|(n, key, parent, status)| Task {
            uuid: uuid(*n),
            key: Some((*key).into()),
            number: key.rsplit(['-', '.']).next().and_then(|n| n.parse().ok()),
            project: "SYN".into(),
            description: (*key).into(),
            status: *status,
            parent: parent.map(uuid),
            ..Task::default()
        })
        .collect();
    e.store().apply_changes(&tasks, "c1").unwrap();
    e.create(input("captured here", Some("SYN"))).unwrap();

    let next: Vec<String> = e
        .next(&TaskQuery::default())
        .unwrap()
        .into_iter()
        .map(|t| t.description)
        .collect();
    // Blocked parents (SYN-1, SYN-1.1) never; the deepest leaves first; a parent whose
    // subtasks are all done (SYN-3) after every leaf.
    assert_eq!(
        next,
        ["SYN-1.1.1", "SYN-1.2", "SYN-2", "captured here", "SYN-3"]
    );
}

#[test]
fn a_subtask_goes_with_its_parent_from_the_local_inbox() {
    let (_dir, e) = engine();
    let parent = e.create(input("Plan the trip", None)).unwrap();
    assert_eq!(parent.project, callsign_core::LOCAL_PROJECT);
    let child = e.create(sub("Book the train", &parent.short_id())).unwrap();
    assert_eq!(child.project, callsign_core::LOCAL_PROJECT);
    match e.set_project(&child.short_id(), "OPS") {
        Err(Error::Invalid(m)) => assert!(m.contains("parent's project"), "{m}"),
        other => panic!("a subtask alone keeps its parent's project: {other:?}"),
    }
    assert_eq!(e.send_inbox("ops").unwrap(), 2);
    for t in [&parent, &child] {
        assert_eq!(e.get(&t.short_id()).unwrap().project, "OPS");
    }
    assert_eq!(e.get(&child.short_id()).unwrap().parent, Some(parent.uuid));
}

#[test]
fn a_subtask_change_tells_subscribers_about_its_parent_too() {
    let (_dir, e) = engine();
    let parent = e.create(input("Launch", Some("SYN"))).unwrap();
    let mut events = e.subscribe();
    let child = e.create(sub("Write the post", &parent.short_id())).unwrap();
    e.complete(&child.short_id()).unwrap();
    let changed = changed(&mut events);
    let parent_told = changed.iter().filter(|u| **u == parent.uuid).count();
    assert_eq!(
        parent_told, 2,
        "once for the create, once for the completion: {changed:?}"
    );
}

/// The uuids of the `TaskChanged` events waiting in `events`.
fn changed(events: &mut tokio::sync::broadcast::Receiver<crate::events::Event>) -> Vec<uuid::Uuid> {
    let mut out = Vec::new();
    while let Ok(ev) = events.try_recv() {
        if let crate::events::Event::TaskChanged { uuid } = ev {
            out.push(uuid);
        }
    }
    out
}

#[test]
fn discarding_a_refused_parent_tells_subscribers_its_subtask_stands_alone() {
    let (_dir, e) = engine();
    let parent = e.create(input("Launch", Some("SYN"))).unwrap();
    let child = e.create(sub("Write the post", &parent.short_id())).unwrap();
    {
        let mut store = e.store();
        let id = store.rows_for_test(parent.uuid)[0].id;
        let rows = store.claim(&[id], 1).unwrap();
        let refused = crate::outbox_state::Outcome::Fail("no such project".into());
        store
            .record_answers(&[(rows[0].clone(), refused)], |_| 0, 2)
            .unwrap();
    }
    assert!(e.get(&child.short_id()).unwrap().held_by.is_some());
    let mut events = e.subscribe();
    assert!(e.discard(&parent.short_id()).unwrap().is_none());
    assert!(
        changed(&mut events).contains(&child.uuid),
        "the subtask's view changed"
    );
    let alone = e.get(&child.short_id()).unwrap();
    assert_eq!((alone.parent, alone.held_by), (None, None));
}

#[test]
fn a_deleted_inbox_parent_is_dropped_and_its_subtask_sent_on_its_own() {
    let (_dir, e) = engine();
    let parent = e.create(input("Trip", None)).unwrap();
    let child = e.create(sub("Book the train", &parent.short_id())).unwrap();
    e.delete(&parent.short_id()).unwrap();
    assert_eq!(e.send_inbox("OPS").unwrap(), 1);
    assert!(e.get(&parent.short_id()).is_err(), "never sent, so dropped");
    let sent = e.get(&child.short_id()).unwrap();
    assert_eq!((sent.project.as_str(), sent.parent), ("OPS", None));
}
