//! What the UI sees: the engine's types with the few view facts the UI needs added.
use callsign_core::dto::Member;
use callsign_sync::events::Plain;
use callsign_sync::reason::{task_failure, waiting_reason, TaskFailure};
use callsign_sync::{Engine, LocalTask, SyncState, SyncStatus};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Why a provisional or failed task waits (the UI turns it into the marker text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Waiting {
    /// `failed` (the server refused it; Retry sends it again) or `pending` (queued or in flight).
    pub state: &'static str,
    /// When the engine will try this task's request again, if it is backing off.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The engine's own words, as the CLI shows them ("waiting: offline, retrying in 8 s").
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UiTask {
    #[serde(flatten)]
    pub task: LocalTask,
    pub waiting: Option<Waiting>,
    /// In the local inbox: kept on this device until sent to a server project.
    pub local: bool,
    /// What the server refused and what to do, in plain words; `None` unless it refused.
    pub failure: Option<TaskFailure>,
    /// The git branch named by its key (`syn-42-short-title`, as `callsign branch` makes
    /// it); `None` before it has a key.
    pub branch: Option<String>,
}

impl UiTask {
    pub fn new(task: LocalTask, status: &SyncStatus, logged_in: bool) -> UiTask {
        let waiting =
            (task.sync_state == SyncState::Failed || task.open_rows > 0).then(|| Waiting {
                state: if task.sync_state == SyncState::Failed {
                    "failed"
                } else {
                    "pending"
                },
                next_attempt_at: task
                    .next_attempt_at
                    .and_then(DateTime::from_timestamp_millis),
                reason: waiting_reason(&task, status, logged_in, Utc::now()),
            });
        let branch = task
            .key
            .as_deref()
            .and_then(|k| callsign_core::TaskKey::parse(k).ok())
            .map(|k| callsign_core::git::branch_name(&k, &task.description));
        UiTask {
            branch,
            local: task.is_local(),
            failure: task_failure(&task),
            task,
            waiting,
        }
    }
}

/// The sync indicator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UiStatus {
    /// A server URL and a token are saved; without them the app is local-only.
    pub configured: bool,
    pub online: bool,
    pub pending: u64,
    pub failed: u64,
    pub in_flight: u64,
    /// Tasks in the local inbox.
    pub local: u64,
    /// Of the pending, those a server recovering from a rollback keeps unnumbered.
    pub recovering: u64,
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The technical detail of the last sync error.
    pub last_error: Option<String>,
    /// The same in plain words (what the header shows).
    pub problem: Option<Plain>,
    pub last_sync_at: Option<DateTime<Utc>>,
    pub server_url: Option<String>,
}

impl UiStatus {
    pub fn new(s: SyncStatus, server_url: Option<String>, has_token: bool) -> UiStatus {
        UiStatus {
            configured: server_url.is_some() && has_token,
            online: s.online == Some(true),
            pending: s.pending,
            failed: s.failed,
            in_flight: s.in_flight,
            local: s.local,
            recovering: s.recovering,
            next_attempt_at: s.next_attempt_at,
            last_error: s.last_error,
            problem: s.problem,
            last_sync_at: s.last_sync_at,
            server_url,
        }
    }

    pub fn read(engine: &Engine) -> callsign_sync::Result<UiStatus> {
        let settings = engine.settings()?;
        Ok(UiStatus::new(
            engine.status()?,
            settings.server_url,
            engine.has_token()?,
        ))
    }
}

/// Settings as shown: the token never leaves the engine, only whether one is set and a hint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UiSettings {
    pub server_url: Option<String>,
    pub device_name: String,
    pub token_set: bool,
    pub token_hint: Option<String>,
    pub project: Option<String>,
    /// The team member this device's token belongs to (`None` with no server, or before a
    /// login or join could ask).
    pub member: Option<Member>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListFilter {
    pub text: Option<String>,
    /// `pending` (default), `completed`, `deleted` or `all`.
    pub status: Option<String>,
    pub project: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateInput {
    pub description: String,
    pub project: Option<String>,
    #[serde(default)]
    pub notes: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// As typed (`tomorrow`, `fri`, `2026-12-01`, `3d`): the engine's parser reads it.
    #[serde(default)]
    pub due: Option<String>,
    /// `H`, `M` or `L`, any case.
    #[serde(default)]
    pub priority: Option<String>,
    /// The parent task (key, UUID or provisional id) of a subtask; it takes the parent's
    /// project.
    #[serde(default)]
    pub parent: Option<String>,
    /// The member to assign it to (`bob` or `@bob`): a member of the team as last listed, any
    /// handle while no list is known (the rule `@name` follows in a capture).
    #[serde(default)]
    pub assignee: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    pub description: Option<String>,
    pub notes: Option<String>,
    pub tags: Option<Vec<String>>,
    /// As typed; empty (or `none`) clears the due date.
    pub due: Option<String>,
    /// `H`, `M` or `L`; empty clears it.
    pub priority: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsInput {
    /// `Some(None)` (JSON null) clears the server: local-only.
    #[serde(default, with = "double_option")]
    pub server_url: Option<Option<String>>,
    pub token: Option<String>,
    pub device_name: Option<String>,
    pub project: Option<String>,
}

/// "Join a team": the server, the invite code an owner gave, and the handle to join as.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinInput {
    pub server_url: String,
    pub code: String,
    pub name: String,
    /// This device's name as the server lists it (default: the one in the settings).
    #[serde(default)]
    pub device_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UiProject {
    pub prefix: String,
    pub name: String,
    /// This device's inbox, not a server project.
    pub local: bool,
}

/// The team as `list_members` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UiMembers {
    pub members: Vec<Member>,
    /// A list was had (now or before): `@name` then counts only for its members.
    pub known: bool,
}

/// A page of the list, newest first, and how many tasks there are in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UiPage {
    pub tasks: Vec<UiTask>,
    pub total: u64,
}

/// The payload of `task-removed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Removed {
    pub uuid: uuid::Uuid,
}

/// Tells a missing field from an explicit `null`.
mod double_option {
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Option<String>>, D::Error> {
        Option::<String>::deserialize(d).map(Some)
    }
}
