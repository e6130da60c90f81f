//! `Engine::import`: the checks before anything is written, a second run queuing nothing, the
//! origin key naming and finding an imported task, and an import of 10,000 tasks.
use callsign_core::dto::{NewTask, Origin, TaskStatus};
use tokio::sync::broadcast::error::TryRecvError;
use uuid::Uuid;

use super::tests::all;
use super::Engine;
use crate::error::Error;
use crate::model::SyncState;
use crate::store::{ImportQueued, ImportTask};
use crate::undo::UndoKind;

fn engine() -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path()).unwrap();
    (dir, engine)
}

/// Jira issue `key` as the importer makes it: UUID and idempotency key derived from the key.
fn issue(n: u128, project: &str, key: &str, d: &str) -> ImportTask {
    ImportTask {
        uuid: Uuid::from_u128(n),
        idempotency_key: format!("import:jira:{key}"),
        body: NewTask {
            origin: Some(Origin {
                tracker: "jira".into(),
                key: Some(key.into()),
            }),
            ..NewTask::new(project, d)
        },
    }
}

#[test]
fn an_import_queues_its_tasks_once_and_a_second_run_nothing() {
    let (_dir, e) = engine();
    let mut child = issue(2, "syn", "ENG-2", "story");
    child.body.parent = Some(Uuid::from_u128(1).simple().to_string());
    let items = vec![issue(1, "syn", "ENG-1", "epic"), child];
    let first = e.import(items.clone()).unwrap();
    assert_eq!(
        first,
        ImportQueued {
            queued: 2,
            present: 0
        }
    );
    let tasks = all(&e);
    assert_eq!(tasks.len(), 2);
    for t in &tasks {
        assert_eq!(
            (t.project.as_str(), t.sync_state),
            ("SYN", SyncState::Provisional)
        );
        assert_eq!(t.open_rows, 1, "one queued create each");
    }
    assert_eq!(
        tasks[1].parent,
        Some(Uuid::from_u128(1)),
        "the parent's UUID as stored"
    );
    assert_eq!(e.get("ENG-1").unwrap().children, 1);

    let second = e.import(items).unwrap();
    assert_eq!(
        second,
        ImportQueued {
            queued: 0,
            present: 2
        }
    );
    assert_eq!(e.status().unwrap().pending, 2, "nothing queued twice");

    // The first run is one undo step; the second added none.
    let undone = e.undo().unwrap();
    assert_eq!((undone.kind, undone.changes.len()), (UndoKind::Import, 2));
    assert!(matches!(e.undo(), Err(Error::NothingToUndo)));
}

#[test]
fn one_bad_item_refuses_the_whole_import_and_writes_nothing() {
    let (_dir, e) = engine();
    let here = issue(1, "SYN", "ENG-1", "already here");
    e.import(vec![here.clone()]).unwrap();
    let bad = |f: fn(&mut ImportTask)| {
        let mut i = issue(9, "SYN", "ENG-9", "bad");
        f(&mut i);
        i
    };
    for (item, want) in [
        (
            bad(|i| i.body.description = " ".into()),
            "task 3: description",
        ),
        (bad(|i| i.body.project = "1X".into()), "task 3: project"),
        (
            bad(|i| i.body.origin.as_mut().unwrap().tracker = "trello".into()),
            "task 3: origin",
        ),
        (bad(|i| i.body.keep_number = true), "task 3: keep_number"),
        (
            bad(|i| i.body.parent = Some("ENG-1".into())),
            "task 3: parent",
        ),
        (
            bad(|i| i.body.parent = Some(Uuid::from_u128(7).to_string())),
            "task 3: parent",
        ),
        (
            bad(|i| i.idempotency_key = String::new()),
            "task 3: an idempotency key",
        ),
    ] {
        let items = vec![here.clone(), issue(2, "SYN", "ENG-2", "fine"), item];
        match e.import(items) {
            Err(Error::Invalid(m)) => assert!(m.starts_with(want), "{m:?} should start {want:?}"),
            other => panic!("expected Invalid({want:?}), got {other:?}"),
        }
        assert_eq!(all(&e).len(), 1, "nothing written for {want:?}");
        assert_eq!(e.status().unwrap().pending, 1);
    }
}

#[test]
fn an_imported_tasks_origin_key_finds_it_by_name_and_by_filter() {
    let (_dir, e) = engine();
    let mut gh = issue(2, "WEB", "#12", "second");
    gh.body.origin.as_mut().unwrap().tracker = "github".into();
    e.import(vec![issue(1, "SYN", "ENG-42", "first"), gh])
        .unwrap();
    assert_eq!(e.get("eng-42").unwrap().uuid, Uuid::from_u128(1));
    assert_eq!(e.get("#12").unwrap().uuid, Uuid::from_u128(2));
    assert!(matches!(e.get("#13"), Err(Error::NotFound(_))));
    let words = |w: &[&str]| -> Vec<u128> {
        let f = e.parse_filter(w).unwrap();
        let found = e.filter(&f, &[TaskStatus::Pending]).unwrap();
        found.iter().map(|t| t.uuid.as_u128()).collect()
    };
    assert_eq!(words(&["ENG-42"]), [1], "a word that is no key here");
    assert_eq!(words(&["#12"]), [2]);
    assert_eq!(
        words(&["jira"]),
        Vec::<u128>::new(),
        "the tracker is no text"
    );
}

/// 10,000 tasks, every tenth a subtask of the one before it: all saved and queued, and the
/// subscribers told (the events go out after the one transaction). Prints how long it took.
#[test]
fn an_import_of_10_000_tasks_saves_every_one() {
    let (_dir, e) = engine();
    let items: Vec<ImportTask> = (1..=10_000u128)
        .map(|n| {
            let mut i = issue(n, "SYN", &format!("ENG-{n}"), &format!("issue {n}"));
            if n % 10 == 0 {
                i.body.parent = Some(Uuid::from_u128(n - 1).to_string());
            }
            i
        })
        .collect();
    let mut events = e.subscribe();
    let started = std::time::Instant::now();
    let queued = e.import(items.clone()).unwrap();
    let took = started.elapsed();
    println!("import of 10,000 tasks: {took:?}");
    assert_eq!(
        queued,
        ImportQueued {
            queued: 10_000,
            present: 0
        }
    );
    assert_eq!(all(&e).len(), 10_000);
    assert_eq!(e.status().unwrap().pending, 10_000);
    assert_eq!(e.get("ENG-9999").unwrap().children, 1);
    assert!(
        !matches!(events.try_recv(), Err(TryRecvError::Empty)),
        "subscribers were told"
    );

    let started = std::time::Instant::now();
    let again = e.import(items).unwrap();
    println!("second run of the same 10,000: {:?}", started.elapsed());
    assert_eq!(
        again,
        ImportQueued {
            queued: 0,
            present: 10_000
        }
    );
}
