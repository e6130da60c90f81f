//! What the checks share: what devices acknowledged, the violations found, the invariants'
//! names, and the server's key rows by task.
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use anyhow::Result;

use crate::view::{self, KeyRow, ServerStore, Snapshot};

/// A task some device acknowledged, with its latest acknowledged content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// The device that created it; the Taskwarrior replica counts as the device after the
    /// CLI devices.
    pub device: usize,
    /// Created in the Taskwarrior replica (and numbered when a sync brought it to the server).
    pub taskwarrior: bool,
    /// Where it is: its last move's target, or its parent's (a subtask follows its parent).
    pub project: String,
    pub description: String,
    pub status: String,
    /// The parent's UUID, for a subtask.
    pub parent: Option<String>,
    /// Moves of it the device acknowledged: each may give it a new key, and its subtasks too.
    pub moves: u32,
    /// The member whose token the creating device logged in with, as the campaign recorded it
    /// (the ground truth for `created_by`); `None` for a Taskwarrior task, whose sync carries
    /// no member's token.
    pub created_by: Option<String>,
}

/// Where everything is.
pub struct World {
    pub server: ServerStore,
    pub account_id: i64,
    pub devices: Vec<PathBuf>,
    /// UUID → what was acknowledged.
    pub expected: BTreeMap<String, Expected>,
    /// The Taskwarrior replica's dir, when the campaign had one.
    pub taskwarrior: Option<PathBuf>,
}

impl World {
    /// Reads the server's state, every device's database and the Taskwarrior replica.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let mut snap = view::load(&self.server, self.account_id, &self.devices)?;
        snap.taskwarrior = match &self.taskwarrior {
            Some(dir) => Some(view::load_taskwarrior(dir)?),
            None => None,
        };
        Ok(snap)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub invariant: &'static str,
    pub message: String,
    pub uuids: Vec<String>,
}

pub const ACKED_ON_SERVER: &str =
    "G3 acknowledged task on the server exactly once, with its content, project and parent";
pub const ONE_KEY: &str =
    "G1 one current key per UUID, one task per key ever, renumbered only by a move";
pub const NO_GAPS: &str =
    "G2 numbers per project and parent scope are exactly 1..N, old keys included";
pub const SUBTASK_KEYS: &str = "G1 a subtask's key is its parent's current key and its own number";
pub const RESOLVES: &str =
    "G1 every key ever assigned names its task, on the server and on every device";
pub const DEVICES_AGREE: &str =
    "G4 every device shows the server's key, previous keys and parent; no outbox row left open";
pub const EDITS_KEPT: &str =
    "G3 every acknowledged edit is the task's value, a recorded conflict, or knowingly replaced";
pub const SETTLED: &str =
    "G5 no slot left pending; TaskChampion's key and project match the allocation";
pub const TASKWARRIOR: &str =
    "G4 Taskwarrior shows every task with the server's key; each task it made has one key, once";
pub const CREATED_BY: &str =
    "Teams: created_by is the member whose token created the task, on the server and everywhere";

/// The violations found so far.
#[derive(Default)]
pub struct Found(pub Vec<Violation>);

impl Found {
    pub fn bad(&mut self, invariant: &'static str, message: String, uuids: Vec<String>) {
        self.0.push(Violation {
            invariant,
            message,
            uuids,
        });
    }
}

/// The server's key rows by task, each task's oldest first.
pub struct Keys<'a>(HashMap<&'a str, Vec<&'a KeyRow>>);

impl<'a> Keys<'a> {
    pub fn of(rows: &'a [KeyRow]) -> Keys<'a> {
        let mut by_uuid: HashMap<&str, Vec<&KeyRow>> = HashMap::new();
        for k in rows {
            by_uuid.entry(&k.uuid).or_default().push(k);
        }
        Keys(by_uuid)
    }

    pub fn rows(&self, uuid: &str) -> &[&'a KeyRow] {
        self.0.get(uuid).map_or(&[], |v| &v[..])
    }

    pub fn current(&self, uuid: &str) -> Option<&'a KeyRow> {
        self.rows(uuid).iter().copied().find(|k| k.current)
    }

    /// Its keys before the current one, oldest first (the API's `previous_keys`).
    pub fn previous(&self, uuid: &str) -> Vec<String> {
        let rows = self.rows(uuid).iter().filter(|k| !k.current);
        rows.map(|k| k.key()).collect()
    }
}
