//! The rows and outcomes the stores speak, the same on every backend: accounts, members,
//! tokens, invites, idempotency slots, keys and the change feed.
use std::collections::HashMap;

use callsign_core::dto::{Member, Project};
use callsign_core::{scope_of, MemberName, Prefix, Role, TaskKey};
use sha2::{Digest, Sha256};
use uuid::Uuid;

pub type AccountId = i64;

pub type MemberId = i64;

/// 16 random bytes made when the allocation database was created. A replica bound to another
/// instance belongs to another allocation database.
pub type InstanceId = Vec<u8>;

/// Milliseconds since the Unix epoch, the time unit of every column.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// What `account create` made: the plain token (the first owner's) is shown once and never
/// stored.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NewAccount {
    pub account_id: AccountId,
    pub token: String,
    pub project: Project,
    /// The team's first member, an owner, whom the token belongs to.
    pub member: Member,
}

pub fn hash_token(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// A fresh random device token: `cs_` and 64 hex digits (256 bits).
pub fn new_token() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("cs_{}", hex::encode(bytes))
}

/// Who a request comes from: the member its bearer token belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub account: AccountId,
    pub member: MemberId,
    pub name: MemberName,
    pub role: Role,
    /// When the token was last recorded as used (hour grain; `None`: not since it was made).
    pub last_seen_at: Option<i64>,
}

/// What `member add` made: the plain token is shown once and never stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NewMember {
    pub account_id: AccountId,
    pub member_id: MemberId,
    pub name: MemberName,
    pub role: Role,
    pub token: String,
}

/// A member as `member list` shows them to an admin.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MemberRow {
    pub name: MemberName,
    pub role: Role,
    pub created_at: i64,
    /// When they were removed; their name stays theirs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<i64>,
    /// Tokens they hold now (none once removed).
    pub tokens: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddMember {
    Added(NewMember),
    NoAccount,
    /// The account has or had a member of this name.
    Taken,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoveMember {
    /// Removed; this many tokens stopped working.
    Removed { tokens: u64 },
    /// No current member of this name.
    NotFound,
    /// They are the team's only owner.
    LastOwner,
}

/// An invite about to be stored: the code's hash, never the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewInvite {
    pub account: AccountId,
    pub code_hash: Vec<u8>,
    pub role: Role,
    pub made_by: MemberId,
    pub now: i64,
    pub expires_at: i64,
}

/// What redeeming an invite code came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redeem {
    Joined(NewMember),
    NotFound,
    Used,
    Expired,
    /// The team has or had a member of this name; the invite stays unused.
    Taken,
}

/// Why a found invite cannot be redeemed at `now`, if it cannot: used before, or expired
/// (the same rule on every backend; only the SQL differs).
pub fn invite_refusal(used_at: Option<i64>, expires_at: i64, now: i64) -> Option<Redeem> {
    if used_at.is_some() {
        Some(Redeem::Used)
    } else if expires_at <= now {
        Some(Redeem::Expired)
    } else {
        None
    }
}

/// How long an expired invite is kept before the reaper deletes it (ms).
pub const INVITE_KEPT_MS: i64 = 7 * 24 * 3600 * 1000;

/// Reads a stored role or name back; the table's CHECKs make a bad one corruption.
pub fn role_of(s: &str) -> std::result::Result<Role, String> {
    Role::parse(s).ok_or_else(|| format!("stored role {s:?} is not owner or member"))
}

pub fn name_of(s: &str) -> std::result::Result<MemberName, String> {
    MemberName::parse(s).map_err(|e| format!("stored member name: {e}"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotState {
    Pending,
    Committed,
    Failed,
}

impl SlotState {
    pub fn parse(s: &str) -> SlotState {
        match s {
            "committed" => SlotState::Committed,
            "failed" => SlotState::Failed,
            _ => SlotState::Pending,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Slot {
    /// The row id: phase 2 finds and commits the slot phase 1 made by it, without searching
    /// the `(account, idempotency key)` index again.
    pub id: i64,
    pub account_id: AccountId,
    pub idem_key: String,
    pub fingerprint: Vec<u8>,
    pub op: String,
    pub task_uuid: Uuid,
    pub request: String,
    pub state: SlotState,
    pub response_status: Option<u16>,
    pub response_body: Option<String>,
    pub attempts: i64,
    pub created_at: i64,
}

/// A task's current key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRow {
    pub project_id: i64,
    pub prefix: String,
    /// The counter's scope: `""` for a task, the parent's key path for a subtask (`"42"`).
    pub scope: String,
    pub number: i64,
}

impl KeyRow {
    /// The key this row holds, as the domain type (`TaskKey` formats and parses every key).
    pub fn task_key(&self) -> TaskKey {
        let prefix = Prefix::parse(&self.prefix).expect("a stored prefix is valid");
        TaskKey {
            prefix,
            parents: scope_numbers(&self.scope),
            number: self.number as u64,
        }
    }

    pub fn key(&self) -> String {
        self.task_key().to_string()
    }

    /// The scope of this task's subtasks' counter: its own key path.
    pub fn child_scope(&self) -> String {
        child_scope(&self.scope, self.number)
    }
}

/// A stored scope's numbers (`"42.1"`: 42, 1; `""`: none).
fn scope_numbers(scope: &str) -> Vec<u64> {
    scope
        .split('.')
        .filter(|s| !s.is_empty())
        .map(|n| n.parse().expect("a stored scope is numbers"))
        .collect()
}

/// The scope of the subtasks of the task numbered `number` in `scope`: its key path.
pub fn child_scope(scope: &str, number: i64) -> String {
    let mut path = scope_numbers(scope);
    path.push(number as u64);
    scope_of(&path)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRow {
    pub task_uuid: Uuid,
    pub seq: i64,
}

/// A project on the wire: `id` its number in the account, `row` its row id; its earlier
/// prefixes (from [`earlier_prefixes`]) oldest first, each once, without the one it has now.
pub fn project(
    (id, row): (i64, i64),
    name: String,
    prefix: String,
    earlier: &HashMap<i64, Vec<String>>,
) -> Project {
    let mut previous_prefixes: Vec<String> = Vec::new();
    for p in earlier.get(&row).into_iter().flatten() {
        if *p != prefix && !previous_prefixes.contains(p) {
            previous_prefixes.push(p.clone());
        }
    }
    Project {
        id,
        name,
        prefix,
        previous_prefixes,
    }
}

/// Why a project is recovering (`recovering.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RecoveryReason {
    /// `callsign-server restore` put a backup in place.
    Restore,
    /// An admin declared it (`callsign-server recovery start`, e.g. after a PostgreSQL
    /// restore or failover).
    Declared,
    /// The server found it: a device's cursor, or a node's own commits, past the end of the
    /// change feed (a data dir copied back by hand, a failover to a standby that was behind).
    Detected,
}

impl RecoveryReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RecoveryReason::Restore => "restore",
            RecoveryReason::Declared => "declared",
            RecoveryReason::Detected => "detected",
        }
    }

    pub fn parse(s: &str) -> Option<RecoveryReason> {
        match s {
            "restore" => Some(RecoveryReason::Restore),
            "declared" => Some(RecoveryReason::Declared),
            "detected" => Some(RecoveryReason::Detected),
            _ => None,
        }
    }
}

/// A project that numbers nothing until its recovery ends, with its counter as it stands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RecoveringRow {
    pub account: AccountId,
    pub prefix: String,
    /// When recovery began (ms since the epoch).
    pub since: i64,
    pub reason: RecoveryReason,
    /// The highest number the project's counter has handed out (0: none).
    pub last: i64,
}

/// A rollback the server was told of: a restore (with when its backup was taken) or one an
/// admin declared (`recovery start`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Rollback {
    /// When it was restored or declared (ms since the epoch).
    pub at: i64,
    pub reason: RecoveryReason,
    /// When the restored backup was taken, if known.
    pub taken_at: Option<i64>,
}

/// A device (a token) the latest rollback is still waiting for: active before the backup, and
/// not yet back with its keys.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeviceRow {
    pub account: AccountId,
    pub member: String,
    pub device: String,
    /// When it last reached the server (hour grain; `None`: not since it was made).
    pub last_seen_at: Option<i64>,
}

/// A key a device brought back that another task already holds: the held key stays with its
/// task, and the device's task is numbered anew.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Clash {
    pub account: AccountId,
    pub key: String,
    pub held_by: Uuid,
    pub claimed_by: Uuid,
    pub at: i64,
}

/// What a recovery could not bring back (docs/RECOVERY.md), for `recovery status`, the log and
/// `/metrics`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecoveryReport {
    /// Numbers below a counter that no task holds: handed out before the rollback and brought
    /// back by no device. Never handed out again (the counter is past them).
    pub lost: Vec<LostKey>,
    pub clashes: Vec<Clash>,
}

/// A lost number, as the key it was.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LostKey {
    pub account: AccountId,
    pub key: String,
}
