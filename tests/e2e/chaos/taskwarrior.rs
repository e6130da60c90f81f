//! The checker's Taskwarrior check on a snapshot made by hand: `structure.rs`'s clean world
//! plus a task Taskwarrior created (CHA-3), and a Taskwarrior replica holding all five with the
//! server's keys. That world is clean; each way a Taskwarrior could disagree with the server
//! (a missing key, a wrong key, a task missing from it, its task numbered twice, a copy of a
//! task, a task that never reached the server) is named.
use callsign_chaos::checker::{self, Expected};
use callsign_chaos::view::{DeviceTask, KeyRow, Reserved, Snapshot, StoreTask, TaskwarriorView};

use super::structure::{catches_each, clean, Acked, Break};

/// The clean world with "tw" (created in Taskwarrior, CHA-3) and Taskwarrior's replica.
pub(super) fn with_taskwarrior() -> (Snapshot, Acked) {
    let (mut snap, mut acked) = clean();
    let key = KeyRow {
        uuid: "tw".into(),
        prefix: "CHA".into(),
        scope: String::new(),
        number: 3,
        current: true,
        in_store: true,
    };
    let resolved = snap.resolved.as_mut().expect("asked");
    resolved
        .server
        .insert(key.key(), Some(("tw".into(), key.key())));
    resolved.devices[0].insert(key.key(), Some("tw".into()));
    snap.devices[0].tasks.insert(
        "tw".into(),
        DeviceTask {
            key: Some(key.key()),
            ..DeviceTask::default()
        },
    );
    snap.server.store.insert(
        "tw".into(),
        StoreTask {
            description: "tw".into(),
            status: "pending".into(),
            key: Some(key.key()),
            project: "CHA".into(),
            ..StoreTask::default()
        },
    );
    snap.server.reserved.insert(
        "tw".into(),
        Reserved {
            prefix: "CHA".into(),
            parent: None,
        },
    );
    snap.server.keys.push(key);
    acked.insert(
        "tw".into(),
        Expected {
            device: 1,
            taskwarrior: true,
            project: "CHA".into(),
            description: "tw".into(),
            status: "pending".into(),
            parent: None,
            moves: 0,
            created_by: None,
        },
    );
    // Taskwarrior holds what the server's task store holds (it synced last).
    snap.taskwarrior = Some(TaskwarriorView {
        tasks: snap.server.store.clone(),
    });
    (snap, acked)
}

fn shown<'a>(snap: &'a mut Snapshot, uuid: &str) -> &'a mut StoreTask {
    let tw = snap.taskwarrior.as_mut().expect("a replica");
    tw.tasks.get_mut(uuid).expect("a task in Taskwarrior")
}

#[test]
fn the_checker_catches_a_taskwarrior_that_disagrees_with_the_server() {
    let (snap, acked) = with_taskwarrior();
    let found = checker::violations(&snap, &acked);
    assert!(found.is_empty(), "the hand-made world is clean: {found:#?}");

    let cases: [(&str, &str, Break); 9] = [
        (
            "Taskwarrior's task without its key (the keys never came back)",
            checker::TASKWARRIOR,
            |s, _| shown(s, "tw").key = None,
        ),
        (
            "Taskwarrior's task with another key than the server's",
            checker::TASKWARRIOR,
            |s, _| shown(s, "tw").key = Some("CHA-4".into()),
        ),
        (
            "a task the server numbered missing from Taskwarrior",
            checker::TASKWARRIOR,
            |s, _| {
                let tw = s.taskwarrior.as_mut().expect("a replica");
                tw.tasks.remove("stays");
            },
        ),
        (
            "a moved task Taskwarrior still shows under its old key",
            checker::TASKWARRIOR,
            |s, _| shown(s, "moved").key = Some("CHA-1".into()),
        ),
        (
            "Taskwarrior showing other content than the server",
            checker::TASKWARRIOR,
            |s, _| shown(s, "stays").status = "completed".into(),
        ),
        (
            "Taskwarrior's task numbered a second time by the server",
            checker::TASKWARRIOR,
            |s, _| {
                let first = s.server.keys.iter_mut().find(|k| k.uuid == "tw");
                first.expect("its key").current = false;
                s.server.keys.push(KeyRow {
                    uuid: "tw".into(),
                    prefix: "CHA".into(),
                    scope: String::new(),
                    number: 4,
                    current: true,
                    in_store: true,
                });
            },
        ),
        (
            "a copy of Taskwarrior's task under another UUID",
            checker::TASKWARRIOR,
            |s, _| {
                let copy = shown(s, "tw").clone();
                let tw = s.taskwarrior.as_mut().expect("a replica");
                tw.tasks.insert("tw-copy".into(), copy);
            },
        ),
        (
            "Taskwarrior's task never reached the server",
            checker::TASKWARRIOR,
            |s, _| {
                s.server.keys.retain(|k| k.uuid != "tw");
                s.server.reserved.remove("tw");
                s.server.store.remove("tw");
            },
        ),
        (
            "tasks created in Taskwarrior, but no replica to read",
            checker::TASKWARRIOR,
            |s, _| s.taskwarrior = None,
        ),
    ];
    catches_each(with_taskwarrior, &cases);
}
