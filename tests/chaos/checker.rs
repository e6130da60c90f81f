//! The invariant checker: after the campaign it reads the server's state and every device's
//! local database into a [`Snapshot`] (`view.rs`: from the SQLite data dir or from
//! PostgreSQL) and checks DESIGN.md's G1-G5 over it against what the devices acknowledged,
//! with subtasks and moves as STRUCTURE.md states them (`structure.rs`) and concurrent edits
//! merged by field with conflicts recorded (`edits.rs`), the campaign's Taskwarrior
//! replica against the server's keys (`taskwarrior.rs`), and each task's `created_by` against
//! the member whose device created it (`members.rs`). The checks are pure
//! functions of the snapshot, the same for both backends. A violation names the invariant,
//! says what is wrong and carries the UUIDs it is about, so the report can show the smallest
//! evidence.
mod edits;
mod members;
mod rules;
mod structure;
mod taskwarrior;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::Result;

pub use crate::report::report;
use crate::view::{KeyRow, Snapshot};
pub use rules::{
    Expected, Found, Keys, Violation, World, ACKED_ON_SERVER, CREATED_BY, DEVICES_AGREE,
    EDITS_KEPT, NO_GAPS, ONE_KEY, RESOLVES, SETTLED, SUBTASK_KEYS, TASKWARRIOR,
};

/// Reads the world and checks every invariant; an empty list means the run is clean.
pub fn check(world: &World) -> Result<Vec<Violation>> {
    Ok(violations(&world.snapshot()?, &world.expected))
}

/// Checks every invariant over a snapshot against what was acknowledged.
pub fn violations(snap: &Snapshot, expected: &BTreeMap<String, Expected>) -> Vec<Violation> {
    checks(snap, expected, None)
}

/// After a backup was put back mid-run, the keys' invariants: G1 and the keys resolving
/// everywhere as before; G2 with exactly the numbers `recovery status` reported `lost`
/// (handed out before the restore, brought back by no device, never handed out again), no
/// lost number in use; every acknowledged task on the server once, by its creator; devices
/// agreeing. What a restore takes back is not held against it: the edits and moves
/// acknowledged between the backup and the restore (devices bring back keys and the tasks
/// the server lost, not later changes to tasks it kept), so a task's content is not compared,
/// and a subtask numbered under its parent's key from such a lost move counts as under its
/// parent (that key is the parent's old key now).
pub fn after_restore(
    snap: &Snapshot,
    expected: &BTreeMap<String, Expected>,
    lost: &[String],
) -> Vec<Violation> {
    checks(snap, expected, Some(lost))
}

/// Every check; `restored` with the lost numbers after a restore (see [`after_restore`]).
fn checks(
    snap: &Snapshot,
    expected: &BTreeMap<String, Expected>,
    restored: Option<&[String]>,
) -> Vec<Violation> {
    let mut f = Found::default();
    let keys = Keys::of(&snap.server.keys);
    acknowledged(&mut f, snap, expected, restored.is_none());
    one_key(&mut f, snap, &keys, expected);
    no_gaps(&mut f, &snap.server.keys, restored.unwrap_or_default());
    structure::subtask_keys(&mut f, snap, &keys, restored.is_some());
    structure::resolves(&mut f, snap, &keys);
    settled(&mut f, snap, &keys);
    devices_agree(&mut f, snap, &keys);
    if restored.is_none() {
        edits::kept(&mut f, snap);
    }
    edits::agree(&mut f, snap);
    taskwarrior::agrees(&mut f, snap, &keys, expected);
    members::created_by(&mut f, snap, &keys, expected);
    f.0
}

/// G3: every acknowledged task is on the server once, with its latest content, in its project
/// under its parent (`content`: not after a restore), and the server has no task nobody
/// acknowledged.
fn acknowledged(
    f: &mut Found,
    snap: &Snapshot,
    expected: &BTreeMap<String, Expected>,
    content: bool,
) {
    let (reserved, replica) = (&snap.server.reserved, &snap.server.store);
    for (uuid, e) in expected {
        match (reserved.get(uuid), replica.get(uuid)) {
            (None, _) | (_, None) => f.bad(
                ACKED_ON_SERVER,
                format!(
                    "{uuid} (device {}, {:?}) is missing on the server (allocation: {}, store: {})",
                    e.device,
                    e.description,
                    reserved.contains_key(uuid),
                    replica.contains_key(uuid)
                ),
                vec![uuid.clone()],
            ),
            (Some(r), Some(t)) if content => {
                let server = (&r.prefix, &r.parent, &t.description, &t.status);
                if server != (&e.project, &e.parent, &e.description, &e.status) {
                    f.bad(
                        ACKED_ON_SERVER,
                        format!(
                            "{uuid}: server has (project, parent, description, status) {server:?}, \
                             device {} acknowledged {:?}",
                            e.device,
                            (&e.project, &e.parent, &e.description, &e.status)
                        ),
                        vec![uuid.clone()],
                    );
                }
            }
            (Some(r), Some(_)) => {
                if r.parent != e.parent {
                    f.bad(
                        ACKED_ON_SERVER,
                        format!(
                            "{uuid}: server has the parent {:?}, device {} acknowledged {:?}",
                            r.parent, e.device, e.parent
                        ),
                        vec![uuid.clone()],
                    );
                }
            }
        }
    }
    let extra: Vec<String> = replica
        .keys()
        .chain(reserved.keys())
        .filter(|u| !expected.contains_key(*u))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !extra.is_empty() {
        f.bad(
            ACKED_ON_SERVER,
            format!(
                "{} task(s) on the server that no device acknowledged",
                extra.len()
            ),
            extra,
        );
    }
    let mut by_description: HashMap<&str, Vec<&String>> = HashMap::new();
    for (uuid, t) in replica {
        by_description.entry(&t.description).or_default().push(uuid);
    }
    for (d, uuids) in by_description {
        if uuids.len() > 1 {
            f.bad(
                ACKED_ON_SERVER,
                format!("{} tasks carry the description {d:?}", uuids.len()),
                uuids.into_iter().cloned().collect(),
            );
        }
    }
}

/// G1: one current key per UUID; a task has more keys only as often as it or an ancestor was
/// moved; no key ever names two tasks.
fn one_key(f: &mut Found, snap: &Snapshot, keys: &Keys, expected: &BTreeMap<String, Expected>) {
    for uuid in snap.server.reserved.keys() {
        let rows = keys.rows(uuid);
        let current = rows.iter().filter(|k| k.current).count();
        let moves = moves_with_ancestors(expected, uuid);
        if current != 1 || rows.len() > 1 + moves as usize {
            let held: Vec<String> = rows
                .iter()
                .map(|k| format!("{}{}", k.key(), if k.current { "" } else { " (old)" }))
                .collect();
            f.bad(
                ONE_KEY,
                format!(
                    "{uuid} has {current} current key(s) among {held:?}, after {moves} move(s) \
                     of it or its parents"
                ),
                vec![uuid.clone()],
            );
        }
    }
    let mut per_key: HashMap<String, Vec<&KeyRow>> = HashMap::new();
    for k in &snap.server.keys {
        per_key.entry(k.key()).or_default().push(k);
    }
    for (key, rows) in &per_key {
        if rows.len() > 1 {
            f.bad(
                ONE_KEY,
                format!("{key} names {} tasks", rows.len()),
                rows.iter().map(|k| k.uuid.clone()).collect(),
            );
        }
    }
}

/// The moves acknowledged of `uuid` and of every task above it.
fn moves_with_ancestors(expected: &BTreeMap<String, Expected>, uuid: &str) -> u32 {
    let mut moves = 0;
    let mut at = expected.get(uuid);
    // Keys are at most 8 numbers deep; the bound also stops a cycle a broken world could have.
    for _ in 0..callsign_core::MAX_DEPTH {
        let Some(e) = at else { break };
        moves += e.moves;
        at = e.parent.as_ref().and_then(|p| expected.get(p));
    }
    moves
}

/// G2: per project and scope (a project's tasks, or one parent's subtasks), the numbers ever
/// assigned, old keys included, with the `lost` ones (`SYN-7`, `SYN-3.2`), are exactly 1..N;
/// a lost number in use is a number handed out twice.
fn no_gaps(f: &mut Found, rows: &[KeyRow], lost: &[String]) {
    let mut numbers: BTreeMap<(&str, &str), Vec<i64>> = BTreeMap::new();
    for k in rows {
        numbers
            .entry((&k.prefix, &k.scope))
            .or_default()
            .push(k.number);
    }
    let in_use: BTreeSet<String> = rows.iter().map(KeyRow::key).collect();
    for key in lost {
        let parsed = key.split_once('-').and_then(|(prefix, path)| {
            let (scope, n) = path.rsplit_once('.').unwrap_or(("", path));
            Some((prefix, scope, n.parse::<i64>().ok()?))
        });
        let Some((prefix, scope, n)) = parsed else {
            f.bad(
                NO_GAPS,
                format!("lost key {key:?} is not a key"),
                Vec::new(),
            );
            continue;
        };
        if in_use.contains(key) {
            f.bad(
                NO_GAPS,
                format!("{key} is reported lost and names a task"),
                Vec::new(),
            );
            continue;
        }
        numbers.entry((prefix, scope)).or_default().push(n);
    }
    for ((prefix, scope), mut ns) in numbers {
        ns.sort_unstable();
        ns.dedup();
        let n = ns.len() as i64;
        let missing: Vec<i64> = (1..=ns.last().copied().unwrap_or(0))
            .filter(|i| ns.binary_search(i).is_err())
            .take(10)
            .collect();
        if ns.first() != Some(&1) || ns.last() != Some(&n) {
            let scope = if scope.is_empty() {
                format!("{prefix}'s tasks")
            } else {
                format!("the subtasks of {prefix}-{scope}")
            };
            f.bad(
                NO_GAPS,
                format!(
                    "{scope}: {n} numbers in use up to {}; missing {missing:?}",
                    ns.last().copied().unwrap_or(0)
                ),
                Vec::new(),
            );
        }
    }
}

/// G5: no slot pending after the reaper has run past the window; the store's `key` and
/// `project` are the allocation's current key and its prefix.
fn settled(f: &mut Found, snap: &Snapshot, keys: &Keys) {
    let pending: Vec<_> = snap
        .server
        .slots
        .iter()
        .filter(|s| s.state == "pending")
        .collect();
    if let Some(first) = pending.first() {
        f.bad(
            SETTLED,
            format!(
                "{} slot(s) still pending, e.g. {} for {}",
                pending.len(),
                first.idem_key,
                first.uuid
            ),
            pending.iter().map(|p| p.uuid.clone()).collect(),
        );
    }
    for (uuid, t) in &snap.server.store {
        let want = keys.current(uuid);
        let key = want.map(|k| k.key());
        if t.key != key || want.is_some_and(|k| k.prefix != t.project) {
            f.bad(
                SETTLED,
                format!(
                    "{uuid}: TaskChampion has key {:?} in {}, the allocation {key:?}",
                    t.key, t.project
                ),
                vec![uuid.clone()],
            );
        }
    }
}

/// G4: every device holds every task with the server's key, previous keys and parent, and has
/// nothing left to send.
fn devices_agree(f: &mut Found, snap: &Snapshot, keys: &Keys) {
    let numbered: BTreeMap<&str, (String, Vec<String>, Option<&String>)> = snap
        .server
        .reserved
        .iter()
        .filter_map(|(uuid, r)| {
            let key = keys.current(uuid)?.key();
            Some((uuid.as_str(), (key, keys.previous(uuid), r.parent.as_ref())))
        })
        .collect();
    for (i, device) in snap.devices.iter().enumerate() {
        let local = &device.tasks;
        for (uuid, (key, previous, parent)) in &numbered {
            let agrees = local.get(*uuid).is_some_and(|t| {
                (t.key.as_ref(), &t.previous_keys, t.parent.as_ref())
                    == (Some(key), previous, *parent)
            });
            if !agrees {
                f.bad(
                    DEVICES_AGREE,
                    format!(
                        "device {i} shows {:?} for {uuid}, the server key {key}, previous keys \
                         {previous:?}, parent {parent:?}",
                        local.get(*uuid)
                    ),
                    vec![(*uuid).to_owned()],
                );
            }
        }
        for uuid in local.keys().filter(|u| !numbered.contains_key(u.as_str())) {
            f.bad(
                DEVICES_AGREE,
                format!("device {i} has {uuid}, which has no key on the server"),
                vec![uuid.clone()],
            );
        }
        let open_rows: Vec<_> = device.outbox.iter().filter(|r| r.state != "done").collect();
        if let Some(first) = open_rows.first() {
            f.bad(
                DEVICES_AGREE,
                format!(
                    "device {i} has {} outbox row(s) not done, e.g. ({:?}, {:?})",
                    open_rows.len(),
                    first.uuid,
                    first.state
                ),
                open_rows.iter().map(|r| r.uuid.clone()).collect(),
            );
        }
    }
}
