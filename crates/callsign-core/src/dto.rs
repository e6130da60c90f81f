//! JSON bodies of the HTTP API v1 (DESIGN.md section 4), shared by the server and the clients.
//!
//! Request bodies reject unknown fields, so a typo is a `422 invalid_body`, never a silently
//! ignored change.
//!
//! `due` is an RFC 3339 time (years 1970-9999, else `422 invalid_body`) and `priority` one of
//! `H`, `M`, `L`; both are `null` when unset. In a [`TaskPatch`] a field that is absent stays
//! as it is, while `null` clears it.
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::merge::{Conflict, Field};
use crate::{Priority, Problem};

/// A field a patch may set, leave alone or clear: absent leaves it, `null` clears it.
fn some_or_null<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    #[default]
    Pending,
    Completed,
    Deleted,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Completed => "completed",
            TaskStatus::Deleted => "deleted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pending" => Some(TaskStatus::Pending),
            "completed" => Some(TaskStatus::Completed),
            "deleted" => Some(TaskStatus::Deleted),
            _ => None,
        }
    }
}

/// A task as the server reports it. `key` and `number` are null only while no number is
/// assigned yet. (`Default`: a pending task with nothing set, for tests to fill in.)
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Task {
    pub uuid: Uuid,
    pub key: Option<String>,
    /// The project's prefix.
    pub project: String,
    pub number: Option<u64>,
    pub description: String,
    pub notes: String,
    pub status: TaskStatus,
    pub tags: Vec<String>,
    /// When the task is due (Taskwarrior's `due`).
    #[serde(default)]
    pub due: Option<DateTime<Utc>>,
    /// `H`, `M` or `L` (Taskwarrior's `priority`).
    #[serde(default)]
    pub priority: Option<Priority>,
    /// The parent's UUID, for a subtask (its key is the parent's key and its own number).
    #[serde(default)]
    pub parent: Option<Uuid>,
    /// Every key the task had before its current one, oldest first: a move to another project
    /// (or its parent's move) gives it a new key, and each old key still names it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous_keys: Vec<String>,
    /// Values that a later edit of the same field replaced while its device had not seen them
    /// (two devices edited one field concurrently), oldest first: kept so a person can restore
    /// one. See `callsign_core::merge`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<Conflict>,
    /// The member whose token created it, stamped by the server (null for a task made in
    /// Taskwarrior or before teams).
    #[serde(default)]
    pub created_by: Option<String>,
    /// The member it is assigned to, or null.
    #[serde(default)]
    pub assignee: Option<String>,
    /// Where it was imported from (`callsign import`): the tracker and the key it had there,
    /// which still names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// The git commits linked to it by their messages (docs/CLI.md "Git"), oldest `at` first,
    /// ties by hash ([`CommitLink::sort`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<CommitLink>,
    pub created_at: DateTime<Utc>,
    pub modified_at: DateTime<Utc>,
}

/// A git commit linked to a task by its message (docs/CLI.md "Git").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitLink {
    /// The commit's full hash: 40 (SHA-1) or 64 (SHA-256) lower-case hex digits.
    pub hash: String,
    /// The message's first line.
    pub subject: String,
    /// The commit's author as git prints `%an <%ae>`.
    pub author: String,
    /// The author date.
    pub at: DateTime<Utc>,
    /// What the message did to the task.
    pub action: CommitAction,
    /// A smart commit's `#comment` text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// What a commit's message did to the task it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CommitAction {
    /// A closing word (`Fixes SYN-42`) completed the task.
    Closes,
    /// The message names the task (`Refs SYN-42`, or the key alone): it links it.
    Refs,
}

impl CommitLink {
    /// Sorts links as a task lists them: oldest `at` first, ties by hash.
    pub fn sort(links: &mut [CommitLink]) {
        links.sort_by(|a, b| (a.at, &a.hash).cmp(&(b.at, &b.hash)));
    }

    /// Applies links and unlinks to a task's list: each unlinked hash's link goes, each link
    /// replaces the one of its hash (or is added), and the list is sorted ([`CommitLink::sort`]).
    /// A hash both unlinked and linked ends up linked (validation refuses such a request).
    pub fn apply(list: &mut Vec<CommitLink>, links: &[CommitLink], unlinks: &[String]) {
        list.retain(|c| !unlinks.contains(&c.hash) && !links.iter().any(|l| l.hash == c.hash));
        for l in links {
            list.retain(|c| c.hash != l.hash);
            list.push(l.clone());
        }
        CommitLink::sort(list);
    }
}

/// Where an imported task came from: its tracker, and the key it had there (`ENG-42`, `#12`),
/// which keeps naming it in this account (`GET /v1/tasks/ENG-42`, any case).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    /// `jira`, `linear`, `github` or `taskwarrior`.
    pub tracker: String,
    /// Its key there; none for a Taskwarrior task, which keeps its UUID instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl Origin {
    /// The trackers a task may come from.
    pub const TRACKERS: [&'static str; 4] = ["jira", "linear", "github", "taskwarrior"];

    /// The origin key as the server indexes it: a key in Callsign's grammar written as Callsign
    /// writes keys (`eng 42` is `ENG-42`), anything else trimmed and upper-cased (`#12`).
    pub fn normal_key(text: &str) -> String {
        match crate::TaskKey::parse(text) {
            Ok(k) => k.to_string(),
            Err(_) => text.trim().to_ascii_uppercase(),
        }
    }
}

/// Body of `PUT /v1/tasks/{uuid}` and of a `create` mutation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTask {
    /// The project's prefix, any case.
    pub project: String,
    pub description: String,
    #[serde(default)]
    pub notes: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// Makes this a subtask of that task (a UUID or a key, any case): it gets the next number
    /// under the parent's key (`SYN-42.1`) once the parent has its key. It goes into the
    /// parent's project, wherever the parent is when it is numbered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// When the task was captured on the client (offline tasks keep their capture time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    /// A member of the team to assign it to (`422 unknown_member` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// Who creates it: set by the server from the request's token, never read from a body (a
    /// body that names `created_by` is refused like any unknown field) and not part of the
    /// request's fingerprint.
    #[serde(skip)]
    #[schema(ignore)]
    pub created_by: Option<String>,
    /// An imported task's tracker and key there (owners only: `403 forbidden` otherwise). The
    /// key keeps naming the task; a key another task of the account has, or had, or that a
    /// project's prefix would name, is `409 key_taken`; one imported already is `409
    /// already_imported`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// With `origin`: the task takes the origin key as its own key (`ENG-42` stays `ENG-42`,
    /// `--keep-numbers`) instead of the project's next number. The key's prefix must be the
    /// project's; the project's counter goes on after the highest number kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_number: bool,
    /// Git commits linked to the task before it reached the server (docs/CLI.md "Git"), at
    /// most one per hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<CommitLink>,
}

impl NewTask {
    /// A task with only a project and a description.
    pub fn new(project: impl Into<String>, description: impl Into<String>) -> NewTask {
        NewTask {
            project: project.into(),
            description: description.into(),
            notes: String::new(),
            status: None,
            tags: Vec::new(),
            due: None,
            priority: None,
            parent: None,
            created_at: None,
            assignee: None,
            created_by: None,
            origin: None,
            keep_number: false,
            commits: Vec::new(),
        }
    }
}

/// Body of `PATCH /v1/tasks/{ref}` and of an `update` mutation: only the fields present change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// A date sets it, `null` clears it.
    #[serde(
        default,
        deserialize_with = "some_or_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<DateTime<Utc>>, nullable)]
    pub due: Option<Option<DateTime<Utc>>>,
    /// `H`, `M` or `L` sets it, `null` clears it.
    #[serde(
        default,
        deserialize_with = "some_or_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<Priority>, nullable)]
    pub priority: Option<Option<Priority>>,
    /// Another project's prefix (any case) moves the task there: it gets the next number in
    /// that project, its subtasks are numbered anew under its new key, and every old key still
    /// names it. A subtask moves only with its parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The value each field this patch sets had on the device when the user changed it. A field
    /// that another device changed meanwhile keeps this patch's value (the later edit in the
    /// server's order), and the value it replaces is recorded in the task's `conflicts`.
    /// Without it the patch is a plain last write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<PatchBase>,
    /// Fields whose conflicts the user settled by keeping the current value: they are cleared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolve: Vec<Field>,
    /// A member's name assigns the task to them (`422 unknown_member` for anyone else); `null`
    /// unassigns it. The later write wins.
    #[serde(
        default,
        deserialize_with = "some_or_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, nullable)]
    pub assignee: Option<Option<String>>,
    /// Git commits to link (docs/CLI.md "Git"): each is added, replacing the task's link with
    /// the same hash. Not a merged field: links of different commits from two devices both
    /// stay, and a link never records a conflict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<CommitLink>,
    /// Full hashes of commits whose links go (a commit rewritten by an amend or a rebase is
    /// replaced by its new one). A hash the task has no link of is no error.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unlink_commits: Vec<String>,
}

/// The values a patch's fields had on the device before the edit (`TaskPatch::base`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchBase {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(
        default,
        deserialize_with = "some_or_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<DateTime<Utc>>, nullable)]
    pub due: Option<Option<DateTime<Utc>>>,
    #[serde(
        default,
        deserialize_with = "some_or_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<Priority>, nullable)]
    pub priority: Option<Option<Priority>>,
}

impl PatchBase {
    /// Keeps this (earlier) base for each field it has, taking the later one's for the rest:
    /// a device's base is what it showed before its first unsent edit of the field.
    fn merge(&mut self, later: PatchBase) {
        self.description = self.description.take().or(later.description);
        self.notes = self.notes.take().or(later.notes);
        self.status = self.status.take().or(later.status);
        self.tags = self.tags.take().or(later.tags);
        self.due = self.due.take().or(later.due);
        self.priority = self.priority.take().or(later.priority);
    }
}

impl TaskPatch {
    /// Changes nothing: no field set, no conflict resolved, no commit linked or unlinked (a
    /// base alone is nothing).
    pub fn is_empty(&self) -> bool {
        TaskPatch {
            base: None,
            ..self.clone()
        } == TaskPatch::default()
    }

    /// Folds a later patch into this one: the later value of each field wins, the earlier base
    /// of each field stays, and the resolved fields add up. Commit links add up, the later link
    /// winning per hash; a later unlink drops an earlier link of its hash and is kept (the
    /// server may hold that link already), and a later link drops an earlier unlink of its hash.
    pub fn merge(&mut self, later: TaskPatch) {
        for h in later.unlink_commits {
            self.commits.retain(|c| c.hash != h);
            if !self.unlink_commits.contains(&h) {
                self.unlink_commits.push(h);
            }
        }
        for l in later.commits {
            self.unlink_commits.retain(|h| *h != l.hash);
            self.commits.retain(|c| c.hash != l.hash);
            self.commits.push(l);
        }
        CommitLink::sort(&mut self.commits);
        match (&mut self.base, later.base) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
        for f in later.resolve {
            if !self.resolve.contains(&f) {
                self.resolve.push(f);
            }
        }
        if later.description.is_some() {
            self.description = later.description;
        }
        if later.notes.is_some() {
            self.notes = later.notes;
        }
        if later.status.is_some() {
            self.status = later.status;
        }
        if later.tags.is_some() {
            self.tags = later.tags;
        }
        if later.due.is_some() {
            self.due = later.due;
        }
        if later.priority.is_some() {
            self.priority = later.priority;
        }
        if later.project.is_some() {
            self.project = later.project;
        }
        if later.assignee.is_some() {
            self.assignee = later.assignee;
        }
    }

    /// Applies this patch to a create body that has not been sent yet.
    pub fn fold_into(self, create: &mut NewTask) {
        if let Some(d) = self.description {
            create.description = d;
        }
        if let Some(n) = self.notes {
            create.notes = n;
        }
        if let Some(s) = self.status {
            create.status = Some(s);
        }
        if let Some(t) = self.tags {
            create.tags = t;
        }
        if let Some(d) = self.due {
            create.due = d;
        }
        if let Some(p) = self.priority {
            create.priority = p;
        }
        if let Some(p) = self.project {
            create.project = p;
        }
        if let Some(a) = self.assignee {
            create.assignee = a;
        }
        CommitLink::apply(&mut create.commits, &self.commits, &self.unlink_commits);
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Project {
    pub id: i64,
    pub name: String,
    pub prefix: String,
    /// The prefixes it had before a rename, oldest first. Each still names this project: its
    /// old keys resolve, and a create or move that names one goes here. No other project of
    /// the account can take one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous_prefixes: Vec<String>,
}

impl Project {
    /// Whether `prefix` (upper-case) names this project: its prefix or an earlier one.
    pub fn is_named(&self, prefix: &str) -> bool {
        self.prefix == prefix || self.previous_prefixes.iter().any(|p| p == prefix)
    }
}

/// `PATCH /v1/projects/{prefix}`: a new prefix (a rename: every key moves to it, the old ones
/// keep naming their tasks) and/or a new name. At least one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Take a new `prefix` even if it sounds like another project's (`prefix_sounds_alike`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_similar: bool,
}

/// `POST /v1/projects`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewProject {
    pub name: String,
    pub prefix: String,
    /// Take the prefix even if it sounds like another project's (`prefix_sounds_alike`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_similar: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ProjectList {
    pub projects: Vec<Project>,
}

/// A member of the team (the account): the handle tasks name them by, and their role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Member {
    /// Lower-case handle (`bob`), unique in the account for good: a removed member's name
    /// still names them on the tasks they made.
    pub name: String,
    pub role: crate::Role,
}

/// `POST /v1/invites`: an invite for one new member.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewInvite {
    /// The role the new member gets (default `member`).
    #[serde(default)]
    pub role: Option<crate::Role>,
    /// Hours until the code expires, 1-168 (default 24).
    #[serde(default)]
    pub expires_in_hours: Option<u32>,
}

/// An invite code, shown once: single use, until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Invite {
    /// `XXXX-XXXX-XXXX-XXXX` (Crockford base 32; case, dashes and spaces are forgiven).
    pub code: String,
    pub role: crate::Role,
    pub expires_at: DateTime<Utc>,
}

/// `POST /v1/join`: redeem an invite code as a new member, with no token yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JoinRequest {
    pub code: String,
    /// The handle the new member picks (`@name` in captures).
    pub name: String,
    /// What the first token is for (default `default`).
    #[serde(default)]
    pub device: Option<String>,
}

/// What joining gave: the new member and their first token (shown once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Joined {
    pub member: Member,
    pub token: String,
}

/// `GET /v1/members`: the team's current members, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MemberList {
    pub members: Vec<Member>,
}

/// `GET /v1/changes`: tasks changed since the cursor, each with its current state and key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ChangesPage {
    pub changes: Vec<Task>,
    /// Opaque; pass it back as `since`.
    pub cursor: String,
    pub has_more: bool,
    /// When the server's database was last rolled back (a restored backup, a failover; ms
    /// since the epoch), for 90 days after: a device that has not brought back its keys since
    /// then sends them (`POST /v1/recovery/witness`, docs/RECOVERY.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_at: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MutationOp {
    Create,
    Update,
}

/// One mutation of a `POST /v1/sync` batch. `fields` is a [`NewTask`] for `create` and a
/// [`TaskPatch`] for `update`; it is checked per mutation so one bad mutation fails alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Mutation {
    pub idempotency_key: String,
    pub op: MutationOp,
    pub uuid: Uuid,
    /// A `NewTask` (create) or a `TaskPatch` (update). Any JSON is taken: a value of the
    /// wrong shape fails this mutation alone, in its result, not the batch.
    #[schema(value_type = Value)]
    pub fields: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncRequest {
    #[serde(default)]
    pub since: Option<String>,
    #[serde(default)]
    pub mutations: Vec<Mutation>,
}

/// The outcome of one mutation: what the single request would have answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MutationResult {
    pub idempotency_key: String,
    pub status: u16,
    #[serde(default)]
    pub replayed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Problem>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SyncResponse {
    pub results: Vec<MutationResult>,
    pub changes: Vec<Task>,
    pub cursor: String,
    pub has_more: bool,
}

/// A task as a device holds it after a rollback, with the keys it was told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WitnessedTask {
    pub idempotency_key: String,
    pub uuid: Uuid,
    /// Its current key on the device.
    pub key: String,
    /// The keys it had before, oldest first.
    #[serde(default)]
    pub previous_keys: Vec<String>,
    /// Who created it, as the server told the device. A server that lost the task makes it
    /// with this creator when the name is one of the team's members (removed ones included),
    /// not with the member whose device happens to bring it back first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// Its fields, as a create's (the server makes the task from them if it lost it).
    pub fields: NewTask,
}

/// Body of `POST /v1/recovery/witness`: up to 1000 keyed tasks a device holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WitnessRequest {
    pub tasks: Vec<WitnessedTask>,
    /// This is the device's last batch: once every task in it is answered, the server counts
    /// the device as checked in.
    #[serde(default)]
    pub complete: bool,
}

/// Answer of `POST /v1/recovery/witness`: one result per task, as a create's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct WitnessResponse {
    pub results: Vec<MutationResult>,
    /// The device counts as checked in for the latest rollback.
    pub checked_in: bool,
}

/// The most mutations one `POST /v1/sync` may carry.
pub const MAX_BATCH: usize = 1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_rejected() {
        let e =
            serde_json::from_str::<NewTask>(r#"{"project":"SYN","description":"x","colour":1}"#);
        assert!(e.unwrap_err().to_string().contains("colour"));
        assert!(serde_json::from_str::<TaskPatch>(r#"{"descripton":"x"}"#).is_err());
    }

    #[test]
    fn later_patch_wins_and_folds_into_create() {
        let mut p = TaskPatch {
            description: Some("a".into()),
            notes: Some("n".into()),
            ..Default::default()
        };
        p.merge(TaskPatch {
            description: Some("b".into()),
            status: Some(TaskStatus::Completed),
            ..Default::default()
        });
        let mut create = NewTask {
            project: "SYN".into(),
            description: "orig".into(),
            notes: String::new(),
            status: None,
            tags: vec!["t".into()],
            due: None,
            priority: Some(Priority::L),
            parent: None,
            created_at: None,
            assignee: None,
            created_by: None,
            keep_number: false,
            origin: None,
            commits: Vec::new(),
        };
        p.fold_into(&mut create);
        assert_eq!(create.description, "b");
        assert_eq!(create.notes, "n");
        assert_eq!(create.status, Some(TaskStatus::Completed));
        assert_eq!(create.tags, vec!["t".to_string()]);
        assert_eq!(create.priority, Some(Priority::L), "absent leaves it");
    }

    #[test]
    fn a_patch_sets_clears_or_leaves_due_and_priority() {
        let p: TaskPatch = serde_json::from_str(r#"{"due":null,"priority":"H"}"#).unwrap();
        assert_eq!(p.due, Some(None));
        assert_eq!(p.priority, Some(Some(Priority::H)));
        let p: TaskPatch = serde_json::from_str(r#"{"due":"2026-12-01T00:00:00Z"}"#).unwrap();
        assert!(matches!(p.due, Some(Some(_))));
        assert_eq!(p.priority, None);
        // The same JSON back: null stays null, absent stays absent.
        let p: TaskPatch = serde_json::from_str(r#"{"due":null}"#).unwrap();
        assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"due":null}"#);
        assert!(serde_json::from_str::<TaskPatch>(r#"{"priority":"X"}"#).is_err());
        let mut create: NewTask =
            serde_json::from_str(r#"{"project":"SYN","description":"x","priority":"M"}"#).unwrap();
        serde_json::from_str::<TaskPatch>(r#"{"priority":null}"#)
            .unwrap()
            .fold_into(&mut create);
        assert_eq!(create.priority, None, "null clears");
    }

    fn link(hash: char, at: i64, subject: &str) -> CommitLink {
        CommitLink {
            hash: hash.to_string().repeat(40),
            subject: subject.into(),
            author: "Ann <ann@example.com>".into(),
            at: DateTime::from_timestamp(at, 0).unwrap(),
            action: CommitAction::Refs,
            comment: None,
        }
    }

    fn hashes(links: &[CommitLink]) -> Vec<String> {
        links.iter().map(|l| l.hash[..1].to_string()).collect()
    }

    #[test]
    fn merged_patches_add_up_their_links_the_later_winning_per_hash() {
        let mut p = TaskPatch {
            commits: vec![link('b', 20, "first b"), link('a', 30, "a")],
            unlink_commits: vec!["c".repeat(40), "d".repeat(40)],
            ..Default::default()
        };
        p.merge(TaskPatch {
            commits: vec![link('b', 20, "amended b"), link('c', 10, "c again")],
            unlink_commits: vec!["a".repeat(40), "e".repeat(40)],
            ..Default::default()
        });
        // a: linked, then unlinked later; b: the later link; c: unlinked, then linked later.
        assert_eq!(hashes(&p.commits), ["c", "b"], "sorted by time");
        assert_eq!(p.commits[1].subject, "amended b");
        assert_eq!(
            p.unlink_commits,
            ["d".repeat(40), "a".repeat(40), "e".repeat(40)],
            "a later unlink is kept, a later link drops its hash's unlink"
        );
        assert!(!p.is_empty());
        assert!(!TaskPatch {
            unlink_commits: vec!["a".repeat(40)],
            ..Default::default()
        }
        .is_empty());
    }

    #[test]
    fn a_later_assignment_survives_the_merge() {
        let mut p = TaskPatch {
            description: Some("a".into()),
            ..Default::default()
        };
        p.merge(TaskPatch {
            assignee: Some(Some("bob".into())),
            ..Default::default()
        });
        assert_eq!(p.assignee, Some(Some("bob".into())));
    }

    #[test]
    fn links_and_unlinks_fold_into_a_create() {
        let mut create = NewTask::new("SYN", "x");
        create.commits = vec![link('a', 30, "a"), link('b', 20, "old b")];
        TaskPatch {
            commits: vec![link('b', 20, "new b"), link('c', 10, "c")],
            unlink_commits: vec!["a".repeat(40), "f".repeat(40)],
            ..Default::default()
        }
        .fold_into(&mut create);
        assert_eq!(hashes(&create.commits), ["c", "b"]);
        assert_eq!(create.commits[1].subject, "new b");
    }

    #[test]
    fn links_sort_by_time_then_hash() {
        let mut links = vec![link('c', 5, "c"), link('b', 9, "b"), link('a', 9, "a")];
        CommitLink::sort(&mut links);
        assert_eq!(hashes(&links), ["c", "a", "b"]);
    }

    #[test]
    fn a_task_with_commits_round_trips_and_one_without_has_no_field() {
        let mut t = Task {
            project: "SYN".into(),
            ..Default::default()
        };
        assert!(!serde_json::to_string(&t).unwrap().contains("commits"));
        let mut closing = link('a', 1_700_000_000, "Fix the thing");
        closing.action = CommitAction::Closes;
        closing.comment = Some("done at last".into());
        t.commits = vec![closing, link('b', 1_700_000_001, "More")];
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["commits"][0]["action"], "closes");
        assert_eq!(json["commits"][0]["comment"], "done at last");
        assert_eq!(json["commits"][1]["action"], "refs");
        assert!(json["commits"][1].get("comment").is_none());
        assert_eq!(serde_json::from_value::<Task>(json).unwrap(), t);
        let p: TaskPatch =
            serde_json::from_str(&format!(r#"{{"unlink_commits":["{}"]}}"#, "a".repeat(40)))
                .unwrap();
        assert_eq!(p.unlink_commits.len(), 1);
        assert!(serde_json::from_str::<CommitLink>(
            r#"{"hash":"x","subject":"s","author":"a","at":"2026-01-01T00:00:00Z","action":"fixes"}"#
        )
        .is_err());
    }

    #[test]
    fn a_task_stored_before_due_and_priority_still_reads() {
        let t: Task = serde_json::from_str(
            r#"{"uuid":"00000000-0000-0000-0000-000000000001","key":"SYN-1","project":"SYN",
                "number":1,"description":"x","notes":"","status":"pending","tags":[],
                "created_at":"2026-01-01T00:00:00Z","modified_at":"2026-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        assert_eq!((t.due, t.priority), (None, None));
    }
}
