//! The checker's structured-key checks on a snapshot made by hand: a clean small world (a task
//! moved with its subtask, one that stayed with its subtask), then that world broken the ways a
//! wrong server or engine would break it, one at a time; each must be named.
use std::collections::BTreeMap;

use callsign_chaos::checker::{self, Expected};
use callsign_chaos::view::{
    DeviceTask, DeviceView, KeyRow, Reserved, Resolved, ServerView, Snapshot, StoreTask,
};

pub(super) type Acked = BTreeMap<String, Expected>;

/// A task's keys as (prefix, scope, number), oldest first; the last is current.
type Keys = &'static [(&'static str, &'static str, i64)];

/// The tasks: UUID, parent, keys, acknowledged moves.
const TASKS: [(&str, Option<&str>, Keys, u32); 4] = [
    ("moved", None, &[("CHA", "", 1), ("OS", "", 1)], 1),
    (
        "moved-sub",
        Some("moved"),
        &[("CHA", "1", 1), ("OS", "1", 1)],
        0,
    ),
    ("stays", None, &[("CHA", "", 2)], 0),
    ("stays-sub", Some("stays"), &[("CHA", "2", 1)], 0),
];

/// CHA-1 moved to OS (OS-1, its subtask CHA-1.1 now OS-1.1), CHA-2 and CHA-2.1 stayed; one
/// device agrees, and every key names its task on the server and on the device.
pub(super) fn clean() -> (Snapshot, Acked) {
    let mut snap = Snapshot {
        server: ServerView::default(),
        devices: vec![DeviceView::default()],
        resolved: Some(Resolved {
            devices: vec![BTreeMap::new()],
            ..Resolved::default()
        }),
        taskwarrior: None,
    };
    let mut acked = Acked::new();
    for (uuid, parent, keys, moves) in TASKS {
        let rows: Vec<KeyRow> = keys
            .iter()
            .enumerate()
            .map(|(i, (prefix, scope, number))| KeyRow {
                uuid: uuid.into(),
                prefix: (*prefix).into(),
                scope: (*scope).into(),
                number: *number,
                current: i + 1 == keys.len(),
                in_store: true,
            })
            .collect();
        let now = rows.last().expect("a key").clone();
        let parent = parent.map(str::to_owned);
        let resolved = snap.resolved.as_mut().expect("made above");
        for k in &rows {
            let answer = Some((uuid.to_owned(), now.key()));
            resolved.server.insert(k.key(), answer);
            resolved.devices[0].insert(k.key(), Some(uuid.into()));
        }
        let previous = rows[..rows.len() - 1].iter().map(KeyRow::key).collect();
        snap.devices[0].tasks.insert(
            uuid.into(),
            DeviceTask {
                key: Some(now.key()),
                previous_keys: previous,
                parent: parent.clone(),
                created_by: Some(creator(uuid)),
                ..DeviceTask::default()
            },
        );
        snap.server.store.insert(
            uuid.into(),
            StoreTask {
                description: uuid.into(),
                status: "pending".into(),
                key: Some(now.key()),
                project: now.prefix.clone(),
                created_by: Some(creator(uuid)),
                ..StoreTask::default()
            },
        );
        snap.server.reserved.insert(
            uuid.into(),
            Reserved {
                prefix: now.prefix.clone(),
                parent: parent.clone(),
            },
        );
        snap.server.keys.extend(rows);
        let expected = Expected {
            device: 0,
            taskwarrior: false,
            project: now.prefix,
            description: uuid.into(),
            status: "pending".into(),
            parent,
            moves,
            created_by: Some(creator(uuid)),
        };
        acked.insert(uuid.into(), expected);
    }
    (snap, acked)
}

/// Who created a task of the hand-made world: @ana the moved tree, @ben the other.
pub(super) fn creator(uuid: &str) -> String {
    match uuid.starts_with("moved") {
        true => "ana".into(),
        false => "ben".into(),
    }
}

fn row<'a>(snap: &'a mut Snapshot, key: &str) -> &'a mut KeyRow {
    let found = snap.server.keys.iter_mut().find(|k| k.key() == key);
    found.unwrap_or_else(|| panic!("no key {key}"))
}

/// One way to break a hand-made world, for the checker's own tests.
pub(super) type Break = fn(&mut Snapshot, &mut Acked);

/// Breaks a fresh `world()` each way in `cases`: each must be reported under its invariant.
pub(super) fn catches_each(world: fn() -> (Snapshot, Acked), cases: &[(&str, &str, Break)]) {
    for &(what, invariant, break_it) in cases {
        let (mut snap, mut acked) = world();
        break_it(&mut snap, &mut acked);
        let found = checker::violations(&snap, &acked);
        let report = checker::report(0, Some(&snap), &found, &[]);
        println!("--- {what}:\n{report}");
        assert!(
            found.iter().any(|v| v.invariant == invariant),
            "{what}: expected a violation of {invariant}, got:\n{report}"
        );
    }
}

#[test]
fn the_checker_catches_broken_subtasks_and_moves() {
    let (snap, acked) = clean();
    let found = checker::violations(&snap, &acked);
    assert!(found.is_empty(), "the hand-made world is clean: {found:#?}");

    let cases: [(&str, &str, Break); 13] = [
        (
            "a subtask that did not follow its parent's move",
            checker::SUBTASK_KEYS,
            |s, _| {
                s.server.keys.retain(|k| k.key() != "OS-1.1");
                row(s, "CHA-1.1").current = true;
            },
        ),
        (
            "a subtask numbered under another task",
            checker::SUBTASK_KEYS,
            |s, _| row(s, "CHA-2.1").scope = "1".into(),
        ),
        (
            "a task with no parent holding a subtask key",
            checker::SUBTASK_KEYS,
            |s, _| row(s, "CHA-2").scope = "1".into(),
        ),
        (
            "a move that burnt a number (old keys count)",
            checker::NO_GAPS,
            |s, _| row(s, "CHA-1").number = 3,
        ),
        (
            "a gap among one parent's subtasks",
            checker::NO_GAPS,
            |s, _| row(s, "CHA-2.1").number = 2,
        ),
        (
            "an old number handed out again",
            checker::ONE_KEY,
            |s, _| row(s, "CHA-2").number = 1,
        ),
        (
            "a task renumbered though nobody moved it",
            checker::ONE_KEY,
            |_, a| a.get_mut("moved").expect("a task").moves = 0,
        ),
        (
            "an old key the server no longer resolves",
            checker::RESOLVES,
            |s, _| {
                let server = &mut s.resolved.as_mut().expect("asked").server;
                server.insert("CHA-1".into(), None);
            },
        ),
        (
            "an old key a device resolves to another task",
            checker::RESOLVES,
            |s, _| {
                let device = &mut s.resolved.as_mut().expect("asked").devices[0];
                device.insert("CHA-1.1".into(), Some("stays-sub".into()));
            },
        ),
        (
            "a device that lost a task's previous keys",
            checker::DEVICES_AGREE,
            |s, _| {
                let t = s.devices[0].tasks.get_mut("moved").expect("a task");
                t.previous_keys.clear();
            },
        ),
        (
            "a device that lost a subtask's parent",
            checker::DEVICES_AGREE,
            |s, _| {
                s.devices[0]
                    .tasks
                    .get_mut("stays-sub")
                    .expect("a task")
                    .parent = None
            },
        ),
        (
            "a moved subtask still in the old project in TaskChampion",
            checker::SETTLED,
            |s, _| s.server.store.get_mut("moved-sub").expect("a task").project = "CHA".into(),
        ),
        (
            "an acknowledged move the server never made",
            checker::ACKED_ON_SERVER,
            |s, _| s.server.reserved.get_mut("moved").expect("a task").prefix = "CHA".into(),
        ),
    ];
    catches_each(clean, &cases);
}
