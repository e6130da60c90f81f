//! The invariant checker: reads the server's allocation database, its TaskChampion replica and
//! every device's local database (read-only, after the campaign) and checks DESIGN.md's G1-G5
//! against what the devices acknowledged. A violation names the invariant, says what is wrong
//! and carries the UUIDs it is about, so the report can show the smallest evidence.
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags};

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
    pub server_dir: PathBuf,
    pub account_id: i64,
    pub devices: Vec<PathBuf>,
    /// UUID → what was acknowledged.
    pub expected: BTreeMap<String, Expected>,
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

fn open(path: &Path) -> Result<Connection> {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", path.display()))
}

pub fn server_db(world: &World) -> PathBuf {
    world.server_dir.join("callsign.sqlite3")
}

pub fn replica_db(world: &World) -> PathBuf {
    world
        .server_dir
        .join("accounts")
        .join(world.account_id.to_string())
        .join("taskchampion.sqlite3")
}

pub fn device_db(dir: &Path) -> PathBuf {
    dir.join("callsign.sqlite3")
}

/// A task as TaskChampion holds it.
struct StoreTask {
    description: String,
    status: String,
    key: Option<String>,
}

struct KeyRow {
    uuid: String,
    prefix: String,
    number: i64,
    current: bool,
}

/// The server stores UUIDs as 16-byte blobs (rusqlite's `uuid` feature); devices as text.
fn uuid_text(v: Value) -> rusqlite::Result<String> {
    match v {
        Value::Blob(b) => uuid::Uuid::from_slice(&b)
            .map(|u| u.to_string())
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e))),
        Value::Text(t) => Ok(t),
        other => Err(rusqlite::Error::InvalidColumnType(
            0,
            format!("{other:?}"),
            rusqlite::types::Type::Text,
        )),
    }
}

fn read_replica(world: &World) -> Result<HashMap<String, StoreTask>> {
    let c = open(&replica_db(world))?;
    let mut st = c.prepare("SELECT uuid, data FROM tasks")?;
    let rows = st.query_map([], |r| Ok((r.get::<_, Value>(0)?, r.get::<_, String>(1)?)))?;
    let mut out = HashMap::new();
    for row in rows {
        let (uuid, data) = row?;
        let uuid = uuid_text(uuid)?;
        let map: HashMap<String, String> =
            serde_json::from_str(&data).with_context(|| format!("TaskChampion data of {uuid}"))?;
        out.insert(
            uuid,
            StoreTask {
                description: map.get("description").cloned().unwrap_or_default(),
                status: map.get("status").cloned().unwrap_or_default(),
                key: map.get("key").cloned(),
            },
        );
    }
    Ok(out)
}

/// Checks every invariant; an empty list means the run is clean.
pub fn check(world: &World) -> Result<Vec<Violation>> {
    let mut v = Vec::new();
    let mut bad = |invariant, message: String, uuids: Vec<String>| {
        v.push(Violation {
            invariant,
            message,
            uuids,
        })
    };
    let db = open(&server_db(world))?;
    let replica = read_replica(world)?;
    let reserved: HashMap<String, String> = db
        .prepare(
            "SELECT t.uuid, p.prefix FROM tasks t JOIN projects p ON p.id = t.project_id
             WHERE t.account_id = ?1",
        )?
        .query_map([world.account_id], |r| {
            Ok((uuid_text(r.get(0)?)?, r.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let keys: Vec<KeyRow> = db
        .prepare(
            "SELECT k.task_uuid, p.prefix, k.number, k.current FROM keys k
             JOIN projects p ON p.id = k.project_id WHERE k.account_id = ?1 AND k.scope = ''",
        )?
        .query_map([world.account_id], |r| {
            Ok(KeyRow {
                uuid: uuid_text(r.get(0)?)?,
                prefix: r.get(1)?,
                number: r.get(2)?,
                current: r.get::<_, i64>(3)? == 1,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;

    // G3: every acknowledged task is on the server once, with its latest content, and the
    // server has no task nobody acknowledged.
    for (uuid, e) in &world.expected {
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
        .filter(|u| !world.expected.contains_key(*u))
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
    for (uuid, t) in &replica {
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
    for k in &keys {
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
    let pending: Vec<(String, String)> = db
        .prepare(
            "SELECT idem_key, task_uuid FROM slots WHERE account_id = ?1 AND state = 'pending'",
        )?
        .query_map([world.account_id], |r| {
            Ok((r.get(0)?, uuid_text(r.get(1)?)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    if !pending.is_empty() {
        bad(
            SETTLED,
            format!(
                "{} slot(s) still pending, e.g. {:?}",
                pending.len(),
                pending.first()
            ),
            pending.into_iter().map(|p| p.1).collect(),
        );
    }
    let current_key: HashMap<&str, String> = keys
        .iter()
        .filter(|k| k.current)
        .map(|k| (k.uuid.as_str(), format!("{}-{}", k.prefix, k.number)))
        .collect();
    for (uuid, t) in &replica {
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
    for (i, dir) in world.devices.iter().enumerate() {
        let c = open(&device_db(dir))?;
        let local: HashMap<String, Option<String>> = c
            .prepare("SELECT uuid, key FROM tasks")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
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
        let open_rows: Vec<(String, String)> = c
            .prepare("SELECT uuid, state FROM outbox WHERE state <> 'done'")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        if !open_rows.is_empty() {
            bad(
                DEVICES_AGREE,
                format!(
                    "device {i} has {} outbox row(s) not done, e.g. {:?}",
                    open_rows.len(),
                    open_rows.first()
                ),
                open_rows.into_iter().map(|r| r.0).collect(),
            );
        }
    }
    Ok(v)
}

/// The report of a failed run: the seed, each violation, and for the first few UUIDs the
/// events that touched them, their slots on the server and their outbox rows on each device.
pub fn report(seed: u64, world: &World, violations: &[Violation], events: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "CALLSIGN_CHAOS_SEED={seed}: {} violation(s)",
        violations.len()
    );
    for v in violations {
        let _ = writeln!(out, "  [{}] {}", v.invariant, v.message);
    }
    let uuids: BTreeSet<&String> = violations
        .iter()
        .flat_map(|v| v.uuids.iter())
        .take(5)
        .collect();
    for uuid in uuids {
        let _ = writeln!(out, "evidence for {uuid}:");
        for e in events.iter().filter(|e| e.contains(uuid.as_str())) {
            let _ = writeln!(out, "  event: {e}");
        }
        if let Ok(c) = open(&server_db(world)) {
            for row in rows(
                &c,
                "SELECT op || ' ' || state || ' number=' || ifnull(number, '-') || ' status=' ||
                 ifnull(response_status, '-') || ' attempts=' || attempts || ' key=' || idem_key
                 FROM slots WHERE task_uuid IN (?1, ?2)",
                uuid,
            ) {
                let _ = writeln!(out, "  server slot: {row}");
            }
            for row in rows(
                &c,
                "SELECT p.prefix || '-' || k.number || ' current=' || k.current || ' in_store=' ||
                 k.in_store FROM keys k JOIN projects p ON p.id = k.project_id WHERE task_uuid IN (?1, ?2)",
                uuid,
            ) {
                let _ = writeln!(out, "  server key: {row}");
            }
        }
        for (i, dir) in world.devices.iter().enumerate() {
            if let Ok(c) = open(&device_db(dir)) {
                for row in rows(
                    &c,
                    "SELECT op || ' ' || state || ' sent=' || sent || ' tries=' || try_count ||
                     ' error=' || ifnull(last_error, '-') || ' key=' || idempotency_key
                     FROM outbox WHERE uuid IN (?1, ?2) ORDER BY id",
                    uuid,
                ) {
                    let _ = writeln!(out, "  device {i} outbox: {row}");
                }
            }
        }
    }
    out
}

/// One text column per row for `uuid`, bound as text and as the server's blob form.
fn rows(c: &Connection, sql: &str, uuid: &str) -> Vec<String> {
    let blob = uuid::Uuid::parse_str(uuid)
        .map(|u| u.as_bytes().to_vec())
        .unwrap_or_default();
    c.prepare(sql)
        .and_then(|mut st| {
            st.query_map(rusqlite::params![uuid, blob], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .unwrap_or_else(|e| vec![format!("(unreadable: {e})")])
}
