//! The invariant checker: after the campaign it reads the server's state and every device's
//! local database into a [`Snapshot`] (`view.rs`: from the SQLite data dir or from
//! PostgreSQL) and checks DESIGN.md's G1-G5 over it against what the devices acknowledged.
//! The checks are pure functions of the snapshot, the same for both backends. A violation
//! names the invariant, says what is wrong and carries the UUIDs it is about, so the report
//! can show the smallest evidence.
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use anyhow::Result;

pub use crate::report::report;
use crate::view::{self, KeyRow, ServerStore, Snapshot};

/// A task some device acknowledged, with its latest acknowledged content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub device: usize,
    pub project: String,
    pub description: String,
    pub status: String,
}

/// Where everything is.
pub struct World {
    pub server: ServerStore,
    pub account_id: i64,
    pub devices: Vec<PathBuf>,
    /// UUID → what was acknowledged.
    pub expected: BTreeMap<String, Expected>,
}

impl World {
    /// Reads the server's state and every device's database.
    pub fn snapshot(&self) -> Result<Snapshot> {
        view::load(&self.server, self.account_id, &self.devices)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub invariant: &'static str,
    pub message: String,
    pub uuids: Vec<String>,
}

pub const ACKED_ON_SERVER: &str =
    "G3 acknowledged task on the server exactly once, with its content";
pub const ONE_KEY: &str = "G1 one current key per UUID, no key names two tasks, no number reused";
pub const NO_GAPS: &str = "G2 numbers per project are exactly 1..N";
pub const DEVICES_AGREE: &str = "G4 every device shows the server's key; no outbox row left open";
pub const SETTLED: &str = "G5 no slot left pending; TaskChampion's key matches the allocation";

/// Reads the world and checks every invariant; an empty list means the run is clean.
pub fn check(world: &World) -> Result<Vec<Violation>> {
    Ok(violations(&world.snapshot()?, &world.expected))
}

/// Checks every invariant over a snapshot against what was acknowledged.
pub fn violations(snap: &Snapshot, expected: &BTreeMap<String, Expected>) -> Vec<Violation> {
    let mut v = Vec::new();
    let mut bad = |invariant, message: String, uuids: Vec<String>| {
        v.push(Violation {
            invariant,
            message,
            uuids,
        })
    };
    let (reserved, keys, replica) = (&snap.server.reserved, &snap.server.keys, &snap.server.store);

    // G3: every acknowledged task is on the server once, with its latest content, and the
    // server has no task nobody acknowledged.
    for (uuid, e) in expected {
        match (reserved.get(uuid), replica.get(uuid)) {
            (None, _) | (_, None) => bad(
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
            (Some(prefix), Some(t)) => {
                if *prefix != e.project || t.description != e.description || t.status != e.status {
                    bad(
                        ACKED_ON_SERVER,
                        format!(
                            "{uuid}: server has ({prefix}, {:?}, {}), device {} acknowledged ({}, {:?}, {})",
                            t.description, t.status, e.device, e.project, e.description, e.status
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
        bad(
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
            bad(
                ACKED_ON_SERVER,
                format!("{} tasks carry the description {d:?}", uuids.len()),
                uuids.into_iter().cloned().collect(),
            );
        }
    }

    // G1: one current key per UUID, one key row per UUID (nothing was moved), one task per key.
    let mut per_uuid: HashMap<&str, Vec<&KeyRow>> = HashMap::new();
    let mut per_key: HashMap<(&str, i64), Vec<&KeyRow>> = HashMap::new();
    for k in keys {
        per_uuid.entry(&k.uuid).or_default().push(k);
        per_key.entry((&k.prefix, k.number)).or_default().push(k);
    }
    for uuid in reserved.keys() {
        let rows = per_uuid.get(uuid.as_str()).map_or(&[][..], |v| &v[..]);
        let current = rows.iter().filter(|k| k.current).count();
        if current != 1 || rows.len() != 1 {
            let held: Vec<String> = rows
                .iter()
                .map(|k| {
                    format!(
                        "{}-{}{}",
                        k.prefix,
                        k.number,
                        if k.current { "" } else { " (old)" }
                    )
                })
                .collect();
            bad(
                ONE_KEY,
                format!("{uuid} has {current} current key(s) among {held:?}"),
                vec![uuid.clone()],
            );
        }
    }
    for ((prefix, n), rows) in &per_key {
        if rows.len() > 1 {
            bad(
                ONE_KEY,
                format!("{prefix}-{n} names {} tasks", rows.len()),
                rows.iter().map(|k| k.uuid.clone()).collect(),
            );
        }
    }

    // G2: per project, the numbers in use are exactly 1..N.
    let mut numbers: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for k in keys.iter().filter(|k| k.current) {
        numbers.entry(&k.prefix).or_default().push(k.number);
    }
    for (prefix, mut ns) in numbers {
        ns.sort_unstable();
        ns.dedup();
        let n = ns.len() as i64;
        let missing: Vec<i64> = (1..=ns.last().copied().unwrap_or(0))
            .filter(|i| ns.binary_search(i).is_err())
            .take(10)
            .collect();
        if ns.first() != Some(&1) || ns.last() != Some(&n) {
            bad(
                NO_GAPS,
                format!(
                    "{prefix}: {n} numbers in use up to {}; missing {missing:?}",
                    ns.last().copied().unwrap_or(0)
                ),
                Vec::new(),
            );
        }
    }

    // G5: no slot pending after the reaper has run past the window; the store's `key`
    // property is the allocation's current key.
    let pending: Vec<_> = snap
        .server
        .slots
        .iter()
        .filter(|s| s.state == "pending")
        .collect();
    if let Some(first) = pending.first() {
        bad(
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
    let current_key: HashMap<&str, String> = keys
        .iter()
        .filter(|k| k.current)
        .map(|k| (k.uuid.as_str(), format!("{}-{}", k.prefix, k.number)))
        .collect();
    for (uuid, t) in replica {
        let want = current_key.get(uuid.as_str());
        if t.key.as_ref() != want {
            bad(
                SETTLED,
                format!("{uuid}: TaskChampion key {:?}, allocation {want:?}", t.key),
                vec![uuid.clone()],
            );
        }
    }

    // G4: every device holds every task with the server's key, and nothing left to send.
    for (i, device) in snap.devices.iter().enumerate() {
        let local = &device.tasks;
        for (uuid, key) in &current_key {
            match local.get(*uuid) {
                Some(k) if k.as_ref() == Some(key) => {}
                other => bad(
                    DEVICES_AGREE,
                    format!("device {i} shows {other:?} for {uuid}, the server {key}"),
                    vec![(*uuid).to_owned()],
                ),
            }
        }
        for uuid in local
            .keys()
            .filter(|u| !current_key.contains_key(u.as_str()))
        {
            bad(
                DEVICES_AGREE,
                format!("device {i} has {uuid}, which has no key on the server"),
                vec![uuid.clone()],
            );
        }
        let open_rows: Vec<_> = device.outbox.iter().filter(|r| r.state != "done").collect();
        if let Some(first) = open_rows.first() {
            bad(
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
    v
}
