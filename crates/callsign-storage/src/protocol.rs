//! The key protocol's vocabulary at the seam (DESIGN.md section 3): what phase 1 is given and
//! decides, what phase 2 commits, and the answer a slot stores. The server runs the protocol
//! (`callsign-server`'s `protocol`); a backend runs each step as one transaction of its own.
use std::collections::HashMap;
use std::sync::Arc;

use callsign_core::dto::{NewTask, Project, Task};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::model::Snapshot;
use crate::rows::KeyRow;

/// What a mutation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Create,
    Update,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Update => "update",
        }
    }
}

/// One mutation as phase 1 sees it.
#[derive(Debug, Clone)]
pub struct Mutation {
    pub idem: String,
    pub uuid: Uuid,
    /// A create's parent, resolved (a subtask is reserved under it).
    pub parent: Option<Uuid>,
    /// The request's fingerprint ([`fingerprint`]).
    pub fp: Vec<u8>,
    /// The request body as stored in the slot (a create's `NewTask`, an update's `TaskPatch`).
    pub request: String,
}

/// The keys a device holds for a task, brought back after a rollback (docs/RECOVERY.md): a
/// create carrying them binds these numbers instead of taking the next one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Witness {
    /// The task's current key on the device.
    pub key: String,
    /// The keys it had before (a move, a rename), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous_keys: Vec<String>,
}

impl Witness {
    /// The prefixes the earlier keys give the key's own number (same scope and number): the
    /// names it had before its project was renamed.
    pub fn aliases(&self) -> Vec<String> {
        let Ok(key) = callsign_core::TaskKey::parse(&self.key) else {
            return Vec::new();
        };
        self.previous_keys
            .iter()
            .filter_map(|k| callsign_core::TaskKey::parse(k).ok())
            .filter(|k| k.parents == key.parents && k.number == key.number)
            .map(|k| k.prefix.to_string())
            .collect()
    }
}

/// A create's request as its slot stores it: the task, and for a witnessed create the keys it
/// binds (stored as `{"task": …, "witness": …}`; a plain create stores the task alone, so
/// slots written before witnesses existed read the same).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CreateRequest {
    Witnessed { task: NewTask, witness: Witness },
    Plain(NewTask),
}

impl CreateRequest {
    pub fn new(task: NewTask, witness: Option<Witness>) -> CreateRequest {
        match witness {
            Some(witness) => CreateRequest::Witnessed { task, witness },
            None => CreateRequest::Plain(task),
        }
    }

    /// Reads a stored create request.
    pub fn parse(request: &str) -> serde_json::Result<CreateRequest> {
        serde_json::from_str(request)
    }

    pub fn into_task(self) -> NewTask {
        match self {
            CreateRequest::Witnessed { task, .. } | CreateRequest::Plain(task) => task,
        }
    }

    pub fn witness(&self) -> Option<&Witness> {
        match self {
            CreateRequest::Witnessed { witness, .. } => Some(witness),
            CreateRequest::Plain(_) => None,
        }
    }

    /// What the slot stores.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// How a stored witnessed create begins (`{"task":…,"witness":…}`, its fields in declaration
/// order); a plain create's task begins `{"project":`. Backends match on it to skip parsing the
/// request of every create but the rare witness (PostgreSQL reads such requests only).
pub const WITNESSED_PREFIX: &str = "{\"task\":";

/// The witness a stored create request carries, if any; a plain create's request is not
/// parsed.
pub fn witness_in(request: &str) -> Option<Witness> {
    if !request.starts_with(WITNESSED_PREFIX) {
        return None;
    }
    match CreateRequest::parse(request).ok()? {
        CreateRequest::Witnessed { witness, .. } => Some(witness),
        CreateRequest::Plain(_) => None,
    }
}

/// What a stored create request says of an imported task: its origin key as the index holds it
/// ([`callsign_core::dto::Origin::normal_key`]), that key's prefix when it is in Callsign's
/// grammar, and the key it keeps as its own (`keep_number`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub key: String,
    pub prefix: Option<String>,
    pub keep: Option<callsign_core::TaskKey>,
}

/// The origin a stored create request carries, if any (a witnessed create's task included).
/// A request without the field `"origin"` is not parsed: a description holding that word has
/// its quotes escaped.
pub fn origin_in(request: &str) -> Option<Imported> {
    if !request.contains("\"origin\"") {
        return None;
    }
    let task = CreateRequest::parse(request).ok()?.into_task();
    let text = task.origin.as_ref()?.key.as_deref()?;
    let parsed = callsign_core::TaskKey::parse(text).ok();
    let keep = task
        .keep_number
        .then(|| callsign_core::validate::kept_key(&task).ok())
        .flatten();
    Some(Imported {
        key: callsign_core::dto::Origin::normal_key(text),
        prefix: parsed.map(|k| k.prefix.to_string()),
        keep,
    })
}

/// SHA-256 over the operation, the UUID and the canonical JSON of the parsed body, so the same
/// request with other whitespace or field order has the same fingerprint.
pub fn fingerprint(op: &str, uuid: Uuid, body: &impl Serialize) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(op.as_bytes());
    h.update([0]);
    h.update(uuid.as_bytes());
    h.update([0]);
    h.update(serde_json::to_vec(body).unwrap_or_default());
    h.finalize().to_vec()
}

/// The project an update's stored request moves its task to, if it names one (stored
/// normalised by the server).
pub fn move_target(request: &str) -> Option<String> {
    serde_json::from_str::<callsign_core::dto::TaskPatch>(request)
        .ok()?
        .project
}

/// What phase 1 made or found for a mutation that goes on, so that phase 2 does not look it up
/// again: its slot's row id and, for a create, the project of the task's reservation. Phase 2
/// still reads the slot (by this row id) and settles nothing unless it is still the same
/// pending slot; while it is pending, its reservation cannot be released (the reaper releases
/// only reservations no pending slot needs), so the project read in phase 1 still holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserved {
    pub slot: i64,
    pub project: Option<i64>,
}

/// The hold on an idempotency key while phase 2 (or the reaper) works on its slot: nobody
/// else settles the slot until it is dropped. In one process it is an entry in a set; across
/// nodes, a lease on the slot row.
pub struct Claim(#[allow(dead_code)] Box<dyn Send + Sync>);

impl Claim {
    pub fn new(hold: impl Send + Sync + 'static) -> Claim {
        Claim(Box::new(hold))
    }
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Claim")
    }
}

/// Why phase 1 refused a mutation; the server turns each into its HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The key came before with another request (`422 idempotency_key_reused`).
    KeyReused(Op),
    /// Another request holds the key right now (`409 request_in_progress`).
    InProgress,
    /// The account has no project with this prefix (`404 project_not_found`).
    NoProject(String),
    /// The task UUID was created by a different request (`409 task_exists`).
    TaskExists(Uuid),
    /// An update of a task with no key: `reserved` (its create is not committed yet, `409
    /// task_not_committed`) or unknown (`404 task_not_found`).
    NotUpdatable { uuid: Uuid, reserved: bool },
}

/// How one mutation fares in phase 1.
#[derive(Debug)]
pub enum Phase1 {
    /// Its slot is committed: the answer it stored, replayed.
    Replay(Reply),
    /// Refused before anything was reserved.
    Refused(Refusal),
    /// Go on to phase 2, holding the claim.
    Proceed(Reserved, Claim),
}

/// A mutation whose task the task store holds, ready for phase 2's commit.
#[derive(Debug, Clone)]
pub struct Commit {
    pub idem: String,
    pub at: Reserved,
    pub snapshot: Snapshot,
}

/// The answer to one mutation, as stored in its slot and replayed verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub body: String,
    pub replayed: bool,
    /// The change-feed entry this answer's commit appended (`None` for a replay): a sync
    /// response leaves that entry out of its changes, since the answer carries the same task.
    pub change: Option<i64>,
}

/// A task as a commit settled it: its content and its key rows, from which the server makes
/// the answer the slot stores.
#[derive(Debug, Clone, Copy)]
pub struct Settled<'a> {
    pub snapshot: &'a Snapshot,
    /// Its project's prefix (before it has a key: the project it is reserved in).
    pub prefix: &'a str,
    pub key: Option<&'a KeyRow>,
    pub parent: Option<Uuid>,
    /// Its keys before the current one, oldest first.
    pub previous: &'a [String],
}

impl Settled<'_> {
    /// The task as the API shows it: content from the task store, key from the allocation
    /// store (the authority).
    pub fn task(&self) -> Task {
        let (s, key) = (self.snapshot, self.key);
        Task {
            uuid: s.uuid,
            key: key.map(KeyRow::key),
            project: key.map_or_else(|| self.prefix.to_owned(), |k| k.prefix.clone()),
            number: key.map(|k| k.number as u64),
            description: s.description.clone(),
            notes: s.notes.clone(),
            status: s.status,
            tags: s.tags.clone(),
            due: s.due,
            priority: s.priority,
            parent: self.parent,
            previous_keys: self.previous.to_vec(),
            conflicts: s.conflicts.clone(),
            created_by: s.created_by.clone(),
            assignee: s.assignee.clone(),
            origin: s.origin.clone(),
            commits: s.commits.clone(),
            created_at: s.created_at,
            modified_at: s.modified_at,
        }
    }
}

/// Makes the body a commit stores in its slot from what it settled. The server gives it (the
/// task's JSON); it runs inside the commit's transaction, so it must not block or fail.
pub type Render = Arc<dyn Fn(Settled<'_>) -> String + Send + Sync>;

/// What the allocation store knows of a reserved task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// Its project's prefix.
    pub prefix: String,
    /// Its current key (`None`: no key yet).
    pub key: Option<KeyRow>,
    /// Its parent, for a subtask.
    pub parent: Option<Uuid>,
    /// Its keys before the current one, oldest first (a move leaves them).
    pub previous: Vec<String>,
}

impl Meta {
    /// This task as settled, with `snapshot` its content.
    pub fn settled<'a>(&'a self, snapshot: &'a Snapshot) -> Settled<'a> {
        Settled {
            snapshot,
            prefix: &self.prefix,
            key: self.key.as_ref(),
            parent: self.parent,
            previous: &self.previous,
        }
    }
}

/// [`Meta`] of each reserved task among those asked for.
pub type TaskMeta = HashMap<Uuid, Meta>;

/// A key that a refused `uuid_for_key` explains: `Err(false)` no such prefix, `Err(true)` no
/// such number.
pub type KeyLookup = std::result::Result<Uuid, bool>;

/// What a project update (`AllocStore::update_project`) came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Renamed {
    /// Done: the project as it is now, and, if its prefix changed, the current key of each of
    /// its tasks, to be written onto them (their `in_store` is cleared in the same
    /// transaction, so the reaper writes any a crash leaves out).
    Done {
        project: Project,
        keys: Vec<(Uuid, String)>,
    },
    /// No project has this prefix now; `Some`: the project that had it, by its prefix now.
    NotFound(Option<String>),
    /// The new prefix is, or was, another project's (named by its prefix now): its keys name
    /// that project's tasks forever.
    Taken(String),
    /// The new prefix is that of keys tasks imported from another tracker keep (`ENG-4`
    /// imported into OPS): it names them, so no project can take it.
    Imported,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_witnessed_create_is_stored_with_the_witness_prefix() {
        let task = NewTask::new("SYN", "brought back");
        let plain = CreateRequest::new(task.clone(), None).to_json();
        assert!(!plain.starts_with(WITNESSED_PREFIX), "{plain}");
        assert_eq!(
            plain,
            serde_json::to_string(&task).unwrap(),
            "as before witnesses"
        );
        assert_eq!(witness_in(&plain), None);
        let witness = Witness {
            key: "SYN-12".into(),
            previous_keys: vec!["OPS-3".into()],
        };
        let stored = CreateRequest::new(task, Some(witness.clone())).to_json();
        assert!(stored.starts_with(WITNESSED_PREFIX), "{stored}");
        assert_eq!(witness_in(&stored), Some(witness));
    }
}
