//! Imported tasks in the store: the origin is kept from a local import and from the server, its
//! key names the task (after every key a task has or had), and an import queues each task once,
//! parents before their subtasks, or nothing at all.
use callsign_core::dto::{NewTask, Origin};
use uuid::Uuid;

use super::tests::{body, now, server_task};
use super::{ImportTask, Store, TaskQuery};
use crate::error::Error;
use crate::model::SyncState;
use crate::outbox_state::Outcome;

fn origin(tracker: &str, key: &str) -> Option<Origin> {
    Some(Origin {
        tracker: tracker.into(),
        key: Some(key.into()),
    })
}

/// Task `n` of an import, from `tracker`'s `key`.
fn item(n: u128, d: &str, from: Option<(&str, &str)>) -> ImportTask {
    ImportTask {
        uuid: Uuid::from_u128(n),
        idempotency_key: format!("import-{n}"),
        body: NewTask {
            origin: from.and_then(|(t, k)| origin(t, k)),
            ..body(d)
        },
    }
}

fn sub(n: u128, d: &str, parent: u128) -> ImportTask {
    let mut i = item(n, d, None);
    i.body.parent = Some(Uuid::from_u128(parent).to_string());
    i
}

/// Imports `items` into an empty store.
fn imported(items: &[ImportTask]) -> Store {
    let mut s = Store::in_memory().unwrap();
    s.import_local(items, now()).unwrap();
    s
}

fn found(s: &Store, input: &str) -> Option<u128> {
    match s.find(input) {
        Ok(t) => Some(t.uuid.as_u128()),
        Err(Error::NotFound(_)) => None,
        Err(e) => panic!("{input:?}: {e}"),
    }
}

#[test]
fn an_imported_tasks_origin_key_names_it_in_any_case_while_provisional() {
    let s = imported(&[
        item(1, "from jira", Some(("jira", "ENG-42"))),
        item(2, "from github", Some(("github", "#12"))),
        item(3, "from taskwarrior", None),
    ]);
    let t = s.task(Uuid::from_u128(1)).unwrap().unwrap();
    assert_eq!(t.origin, origin("jira", "ENG-42"));
    assert_eq!((t.key, t.sync_state), (None, SyncState::Provisional));
    assert_eq!(t.project, "SYN", "ENG is no project here");
    for input in ["ENG-42", "eng-42", "eng 42", " Eng-42 "] {
        assert_eq!(found(&s, input), Some(1), "{input:?}");
    }
    for input in ["#12", " #12"] {
        assert_eq!(found(&s, input), Some(2), "{input:?}");
    }
    for input in ["ENG-43", "#13", "ENG-42.1", "12"] {
        assert_eq!(found(&s, input), None, "{input:?}");
    }
    let e = s.find("#13").unwrap_err().to_string();
    assert_eq!(
        e, r##"no task matches "#13""##,
        "today's error for no match"
    );
    // Search reads the origin key too.
    let text = |t: &str| TaskQuery {
        text: Some(t.into()),
        ..TaskQuery::default()
    };
    let hits: Vec<_> = s.list(&text("eng-4")).unwrap();
    assert_eq!(
        hits.iter().map(|t| t.uuid.as_u128()).collect::<Vec<_>>(),
        [1]
    );
    assert_eq!(s.list(&text("#12")).unwrap().len(), 1);
    assert_eq!(
        s.list(&text("eng-4")).unwrap(),
        s.list_per_task(&text("eng-4")).unwrap()
    );
}

#[test]
fn a_key_a_task_has_or_had_wins_over_an_origin_key() {
    let mut s = Store::in_memory().unwrap();
    let numbered = server_task(Uuid::from_u128(10), Some(("SYN-1", 1)), "numbered here");
    let mut moved = server_task(Uuid::from_u128(11), Some(("OPS-1", 1)), "moved");
    moved.project = "OPS".into();
    moved.previous_keys = vec!["SYN-2".into()];
    s.apply_changes(&[numbered, moved], "1").unwrap();
    s.import_local(
        &[
            item(1, "imported as SYN-1", Some(("jira", "SYN-1"))),
            item(2, "imported as SYN-2", Some(("jira", "syn-2"))),
            item(3, "imported as SYN-3", Some(("linear", "SYN-3"))),
        ],
        now(),
    )
    .unwrap();
    assert_eq!(found(&s, "syn-1"), Some(10), "a current key wins");
    assert_eq!(found(&s, "SYN-2"), Some(11), "a previous key wins");
    assert_eq!(found(&s, "SYN-3"), Some(3), "else the origin key");
}

#[test]
fn the_servers_origin_lands_on_insert_on_a_busy_row_and_on_a_full_update() {
    let mut s = Store::in_memory().unwrap();
    // Imported on another device: inserted from the feed.
    let mut other = server_task(Uuid::from_u128(20), Some(("SYN-5", 5)), "from the feed");
    other.origin = origin("linear", "WEB-9");
    s.apply_changes(&[other.clone()], "1").unwrap();
    assert_eq!(found(&s, "web-9"), Some(20));
    assert_eq!(s.task(other.uuid).unwrap().unwrap().origin, other.origin);
    // A full update (nothing queued here) takes the server's origin, and its key with it.
    other.origin = origin("linear", "WEB-10");
    s.apply_changes(&[other.clone()], "2").unwrap();
    assert_eq!((found(&s, "WEB-9"), found(&s, "WEB-10")), (None, Some(20)));

    // Imported here; the server's answer numbers it while an edit still waits: the local
    // fields stay, the key and the origin are the server's.
    s.import_local(&[item(21, "mine", Some(("jira", "ENG-1")))], now())
        .unwrap();
    let u = Uuid::from_u128(21);
    let rows = s.claim(&[s.open_rows(10).unwrap()[0].id], 1).unwrap();
    s.edit_local(
        u,
        callsign_core::dto::TaskPatch {
            description: Some("edited".into()),
            ..Default::default()
        },
        "k-edit",
        now(),
        crate::undo::Journal::Skip,
    )
    .unwrap();
    let mut answer = server_task(u, Some(("SYN-6", 6)), "mine");
    answer.origin = origin("jira", "ENG-1");
    s.record_answers(&[(rows[0].clone(), Outcome::Done(Some(answer)))], |_| 0, 2)
        .unwrap();
    let t = s.task(u).unwrap().unwrap();
    assert_eq!(
        (t.key.as_deref(), t.description.as_str(), t.open_rows),
        (Some("SYN-6"), "edited", 1)
    );
    assert_eq!(t.origin, origin("jira", "ENG-1"));
    // A busy row the server reports with another origin takes it (the server's to say).
    let mut later = server_task(u, Some(("SYN-6", 6)), "mine");
    later.origin = origin("jira", "ENG-2");
    s.apply_changes(&[later], "3").unwrap();
    let t = s.task(u).unwrap().unwrap();
    assert_eq!(
        (t.description.as_str(), t.origin),
        ("edited", origin("jira", "ENG-2"))
    );
    assert_eq!((found(&s, "ENG-1"), found(&s, "ENG-2")), (None, Some(21)));
}

#[test]
fn two_tasks_with_one_origin_key_are_ambiguous() {
    let s = imported(&[
        item(1, "a", Some(("jira", "ENG-7"))),
        item(2, "b", Some(("linear", "eng-7"))),
    ]);
    assert!(matches!(s.find("ENG-7"), Err(Error::Ambiguous(_))));
}

#[test]
fn an_import_queues_each_task_once_and_a_second_run_none() {
    let mut s = Store::in_memory().unwrap();
    let items = [
        item(1, "one", Some(("jira", "ENG-1"))),
        item(2, "two", Some(("jira", "ENG-2"))),
        // The same task twice in one file: queued once.
        item(1, "one again", Some(("jira", "ENG-1"))),
    ];
    let queued = s.import_local(&items, now()).unwrap();
    assert_eq!(queued, [Uuid::from_u128(1), Uuid::from_u128(2)]);
    assert_eq!(s.open_rows(10).unwrap().len(), 2);
    assert_eq!(
        s.task(Uuid::from_u128(1)).unwrap().unwrap().description,
        "one"
    );
    assert!(s.import_local(&items, now()).unwrap().is_empty());
    assert_eq!(s.open_rows(10).unwrap().len(), 2, "nothing queued twice");
    // A new task in the source comes in; the ones here stay as they are.
    let more = [items[0].clone(), item(3, "three", None)];
    assert_eq!(s.import_local(&more, now()).unwrap(), [Uuid::from_u128(3)]);
}

#[test]
fn a_parent_that_is_neither_earlier_nor_here_refuses_the_whole_import() {
    let mut s = Store::in_memory().unwrap();
    for (items, want) in [
        (vec![item(1, "a", None), sub(2, "b", 9)], "task 2: parent"),
        // Its parent comes later: it would be sent before the parent exists.
        (vec![sub(2, "b", 3), item(3, "c", None)], "task 1: parent"),
        (vec![sub(2, "b", 2)], "task 1: parent"),
    ] {
        match s.import_local(&items, now()) {
            Err(Error::Invalid(m)) => assert!(m.starts_with(want), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(s
            .list(&TaskQuery {
                all: true,
                ..TaskQuery::default()
            })
            .unwrap()
            .is_empty());
        assert!(s.open_rows(10).unwrap().is_empty());
        assert!(matches!(
            s.undo(|| "k".into(), now()),
            Err(Error::NothingToUndo)
        ));
    }
    // A parent already here is fine.
    s.create_local(Uuid::from_u128(9), "k9", &body("here"), now())
        .unwrap();
    assert_eq!(s.import_local(&[sub(2, "b", 9)], now()).unwrap().len(), 1);
}

/// How many rows the plan sends now, and of which tasks.
fn plan(s: &Store) -> Vec<u128> {
    let rows = s.open_rows(100).unwrap();
    let parents = s.parents(rows.iter().map(|r| r.uuid)).unwrap();
    let p = crate::plan::plan(&rows, &parents, 0, 10);
    let task = |id: &i64| rows.iter().find(|r| r.id == *id).unwrap().uuid.as_u128();
    p.send.iter().map(task).collect()
}

#[test]
fn imported_subtasks_wait_for_their_parents_answer_and_a_refusal_holds_them() {
    let mut s = imported(&[
        item(1, "epic", None),
        sub(2, "story", 1),
        sub(3, "task of the story", 2),
        item(4, "other epic", None),
        sub(5, "its story", 4),
    ]);
    assert_eq!(plan(&s), [1], "each subtask waits for its parent's create");
    let answer = |s: &mut Store, n: u128, outcome: Outcome| {
        let id = s.rows_for_test(Uuid::from_u128(n))[0].id;
        let rows = s.claim(&[id], 1).unwrap();
        s.record_answers(&[(rows[0].clone(), outcome)], |_| 0, 2)
            .unwrap();
    };
    let numbered = |n: u128, key: &str, number: u64, parent: Option<u128>| {
        let mut t = server_task(Uuid::from_u128(n), Some((key, number)), "numbered");
        t.parent = parent.map(Uuid::from_u128);
        Outcome::Done(Some(t))
    };
    answer(&mut s, 1, numbered(1, "SYN-1", 1, None));
    assert_eq!(
        plan(&s),
        [2],
        "the numbered parent's subtask goes, and its own waits"
    );
    answer(&mut s, 2, numbered(2, "SYN-1.1", 1, Some(1)));
    assert_eq!(plan(&s), [3, 4]);
    answer(&mut s, 4, Outcome::Fail("no".into()));
    assert_eq!(plan(&s), [3], "a refused parent holds its subtask");
    let held = s.task(Uuid::from_u128(5)).unwrap().unwrap();
    assert!(held.held_by.is_some());
}

/// What the git grammar's `known` asks of the store beyond the projects: the prefixes of
/// imported keys and of earlier keys, in any case.
#[test]
fn imported_and_earlier_keys_hold_their_prefixes() {
    let mut s = imported(&[item(1, "from jira", Some(("jira", "eng-42")))]);
    let mut moved = server_task(Uuid::from_u128(11), Some(("OPS-1", 1)), "moved");
    moved.project = "OPS".into();
    moved.previous_keys = vec!["OLD-2".into()];
    s.apply_changes(&[moved], "1").unwrap();
    for (prefix, held) in [("ENG", true), ("OLD", true), ("ISO", false), ("EN", false)] {
        assert_eq!(s.holds_prefix(prefix).unwrap(), held, "{prefix}");
    }
}
