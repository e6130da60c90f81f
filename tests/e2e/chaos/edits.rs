//! The checker's concurrent-edit checks on a snapshot made by hand: two devices rewrote one
//! task's notes; the server kept B's and recorded A's as a conflict. That world is clean, and so
//! is one where B had seen A's value; losing A's value without a record, or a device showing
//! other notes than the server's, is named.
use callsign_chaos::checker;
use callsign_chaos::view::{OutboxRow, Snapshot};

use super::structure::{clean, Acked};

fn done(uuid: &str, body: &str) -> OutboxRow {
    OutboxRow {
        uuid: uuid.into(),
        op: "update".into(),
        state: "done".into(),
        sent: true,
        tries: 1,
        error: None,
        idem_key: format!("k-{body}"),
        body: body.into(),
    }
}

/// "stays": A wrote "from A", B (not having seen it) "from B", which the server took last.
fn two_devices() -> (Snapshot, Acked) {
    let (mut snap, acked) = clean();
    let conflict = vec![("notes".to_owned(), "\"from A\"".to_owned())];
    let store = snap.server.store.get_mut("stays").expect("a task");
    store.notes = "from B".into();
    store.conflicts = conflict.clone();
    let shown = snap.devices[0].tasks.get_mut("stays").expect("a task");
    shown.notes = "from B".into();
    shown.conflicts = conflict;
    snap.devices[0].outbox = vec![
        done("stays", r#"{"notes":"from A","base":{"notes":""}}"#),
        done("stays", r#"{"notes":"from B","base":{"notes":""}}"#),
    ];
    (snap, acked)
}

#[test]
fn the_checker_catches_a_lost_edit_and_a_device_that_disagrees() {
    let (snap, acked) = two_devices();
    let found = checker::violations(&snap, &acked);
    assert!(found.is_empty(), "a recorded conflict: {found:#?}");

    // B had seen A's notes: replacing them leaves no conflict, and none is needed.
    let (mut snap, acked) = two_devices();
    snap.devices[0].outbox[1].body = r#"{"notes":"from B","base":{"notes":"from A"}}"#.into();
    snap.server
        .store
        .get_mut("stays")
        .expect("a task")
        .conflicts
        .clear();
    snap.devices[0]
        .tasks
        .get_mut("stays")
        .expect("a task")
        .conflicts
        .clear();
    let found = checker::violations(&snap, &acked);
    assert!(found.is_empty(), "knowingly replaced: {found:#?}");

    let (mut snap, acked) = two_devices();
    snap.server
        .store
        .get_mut("stays")
        .expect("a task")
        .conflicts
        .clear();
    snap.devices[0]
        .tasks
        .get_mut("stays")
        .expect("a task")
        .conflicts
        .clear();
    let found = checker::violations(&snap, &acked);
    assert!(
        found.iter().any(|v| v.invariant == checker::EDITS_KEPT),
        "A's notes lost without a record: {found:#?}"
    );

    let (mut snap, acked) = two_devices();
    snap.devices[0]
        .tasks
        .get_mut("stays")
        .expect("a task")
        .notes = "from A".into();
    let found = checker::violations(&snap, &acked);
    assert!(
        found.iter().any(|v| v.invariant == checker::DEVICES_AGREE),
        "a device showing other notes: {found:#?}"
    );
}
