//! The checker's `created_by` check on a snapshot made by hand: `taskwarrior.rs`'s world, where
//! @ana's device made the moved tree, @ben's the other and Taskwarrior one task, and every copy
//! agrees. That world is clean; each way a creator could go wrong (another member, none, one
//! invented for a Taskwarrior task, on the server, a device or Taskwarrior's replica) is named,
//! also when every copy agrees on the wrong member: the truth is what the campaign recorded.
use callsign_chaos::checker::{self, CREATED_BY};
use callsign_chaos::view::{DeviceTask, Snapshot, StoreTask};

use super::structure::{catches_each, Break};
use super::taskwarrior::with_taskwarrior;

fn stored<'a>(snap: &'a mut Snapshot, uuid: &str) -> &'a mut StoreTask {
    snap.server
        .store
        .get_mut(uuid)
        .expect("a task on the server")
}

fn on_device<'a>(snap: &'a mut Snapshot, uuid: &str) -> &'a mut DeviceTask {
    snap.devices[0]
        .tasks
        .get_mut(uuid)
        .expect("a task on the device")
}

#[test]
fn the_checker_catches_a_wrong_created_by() {
    let (snap, acked) = with_taskwarrior();
    let found = checker::violations(&snap, &acked);
    assert!(found.is_empty(), "the hand-made world is clean: {found:#?}");

    let cases: [(&str, &str, Break); 8] = [
        (
            "the server stamps another member than the one whose token created the task",
            CREATED_BY,
            |s, _| stored(s, "stays").created_by = Some("ana".into()),
        ),
        (
            "a numbered task on the server without created_by",
            CREATED_BY,
            |s, _| stored(s, "moved-sub").created_by = None,
        ),
        (
            "a creator invented for a Taskwarrior task (no member's token made it)",
            CREATED_BY,
            |s, _| stored(s, "tw").created_by = Some("ana".into()),
        ),
        (
            "a device showing another creator than the server's",
            CREATED_BY,
            |s, _| on_device(s, "moved").created_by = Some("ben".into()),
        ),
        (
            "a numbered task on a device without created_by",
            CREATED_BY,
            |s, _| on_device(s, "stays-sub").created_by = None,
        ),
        (
            "Taskwarrior's replica showing another creator",
            CREATED_BY,
            |s, _| {
                let tw = s.taskwarrior.as_mut().expect("a replica");
                tw.tasks.get_mut("moved").expect("a task").created_by = Some("cleo".into());
            },
        ),
        (
            // What a device logged in with another member's token leaves: every copy agrees,
            // with each other and with the server, on the wrong member.
            "every copy agreeing on a member other than the recorded creator",
            CREATED_BY,
            |s, _| {
                stored(s, "stays").created_by = Some("ana".into());
                on_device(s, "stays").created_by = Some("ana".into());
                let tw = s.taskwarrior.as_mut().expect("a replica");
                tw.tasks.get_mut("stays").expect("a task").created_by = Some("ana".into());
            },
        ),
        (
            "the campaign recorded another creator than the one every copy shows",
            CREATED_BY,
            |_, a| a.get_mut("moved").expect("a task").created_by = Some("ben".into()),
        ),
    ];
    catches_each(with_taskwarrior, &cases);

    // The report names each place that disagrees, and the task.
    let (mut snap, acked) = with_taskwarrior();
    stored(&mut snap, "stays").created_by = Some("ana".into());
    on_device(&mut snap, "stays").created_by = Some("ana".into());
    let found: Vec<_> = checker::violations(&snap, &acked)
        .into_iter()
        .filter(|v| v.invariant == CREATED_BY)
        .collect();
    let places: Vec<bool> = [
        "the server's task store",
        "device 0",
        "Taskwarrior's replica",
    ]
    .iter()
    .map(|p| found.iter().any(|v| v.message.starts_with(p)))
    .collect();
    assert_eq!(places, [true, true, false], "{found:#?}");
    assert!(
        found.iter().all(|v| v.uuids == ["stays"]),
        "each names the task: {found:#?}"
    );
}
