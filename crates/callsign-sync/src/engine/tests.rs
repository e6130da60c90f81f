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
    }
}

fn all(e: &Engine) -> Vec<crate::LocalTask> {
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
        (input("no project", None), "task 3: no project"),
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
