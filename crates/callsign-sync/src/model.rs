//! The engine's local view of tasks and outbox rows.
use callsign_core::dto::{CommitLink, MutationOp, Origin, Task, TaskStatus};
use callsign_core::Priority;
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

/// Where a task stands with respect to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncState {
    /// No key yet: the create has not been committed by the server (or not seen back).
    Provisional,
    /// The server has numbered it.
    Synced,
    /// The server refused a request for it; the user must edit or retry.
    Failed,
}

/// A task as this device knows it: the server's fields plus its sync state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LocalTask {
    pub uuid: Uuid,
    pub key: Option<String>,
    pub project: String,
    pub number: Option<u64>,
    pub description: String,
    pub notes: String,
    pub status: TaskStatus,
    pub tags: Vec<String>,
    pub due: Option<DateTime<Utc>>,
    pub priority: Option<Priority>,
    /// The parent's UUID, for a subtask (its key is the parent's key and its own number).
    pub parent: Option<Uuid>,
    /// The keys it had before its current one, oldest first (it moved): each still names it.
    pub previous_keys: Vec<String>,
    /// Values the server kept when a later edit of the same field from another device replaced
    /// them (`callsign_core::merge`), oldest first: each can be restored or dismissed.
    pub conflicts: Vec<callsign_core::merge::Conflict>,
    /// The member who created it (the server's stamp; `None` until it has answered).
    pub created_by: Option<String>,
    /// The member it is assigned to.
    pub assignee: Option<String>,
    /// Where it was imported from, and the key it had there (`ENG-42`, `#12`): that key keeps
    /// naming it here ([`crate::store::Store::find`]), before and after the server numbers it.
    pub origin: Option<Origin>,
    /// The git commits linked to it (docs/CLI.md "Git"), oldest `at` first, ties by hash: the
    /// server's list, with this device's links and unlinks applied while they wait to be sent.
    pub commits: Vec<CommitLink>,
    /// How many subtasks it has.
    pub children: u32,
    /// How many of those are still pending: while any is, the task is blocked (it cannot be
    /// completed).
    pub open_children: u32,
    /// For a provisional subtask: the label of the ancestor whose create the server refused,
    /// which holds this task back until that one is fixed, sent again or discarded.
    pub held_by: Option<String>,
    pub created_at: DateTime<Utc>,
    pub modified_at: DateTime<Utc>,
    pub sync_state: SyncState,
    /// The server's message for a failed request, or the last transient error while waiting.
    pub last_error: Option<String>,
    /// The server's stable code for `last_error`, when it sent one (`project_not_found`, ...).
    pub error_code: Option<String>,
    /// Outbox rows for this task not yet done (pending, in progress or failed).
    #[serde(skip)]
    pub open_rows: u32,
    /// When the next attempt for this task's oldest open row is due (Unix ms), if it waits.
    #[serde(skip)]
    pub next_attempt_at: Option<i64>,
}

impl LocalTask {
    /// A short provisional id for display: `~` and the first 8 hex digits of the UUID.
    pub fn short_id(&self) -> String {
        format!("~{}", &self.uuid.simple().to_string()[..8])
    }

    /// In the local inbox: captured with no server project, kept on this device (never sent)
    /// until the user sends it to one.
    pub fn is_local(&self) -> bool {
        self.key.is_none() && self.project == callsign_core::LOCAL_PROJECT
    }

    /// Has open subtasks, so it cannot be completed yet.
    pub fn is_blocked(&self) -> bool {
        self.open_children > 0
    }

    /// The key, or the provisional short id.
    pub fn label(&self) -> String {
        self.key.clone().unwrap_or_else(|| self.short_id())
    }

    /// The fields concurrent edits merge, as this device has them.
    pub fn fields(&self) -> callsign_core::merge::Fields {
        callsign_core::merge::Fields {
            description: self.description.clone(),
            notes: self.notes.clone(),
            status: self.status,
            tags: self.tags.clone(),
            due: self.due,
            priority: self.priority,
        }
    }

    pub fn from_server(t: Task) -> Self {
        LocalTask {
            uuid: t.uuid,
            key: t.key,
            project: t.project,
            number: t.number,
            description: t.description,
            notes: t.notes,
            status: t.status,
            tags: t.tags,
            due: t.due,
            priority: t.priority,
            parent: t.parent,
            previous_keys: t.previous_keys,
            conflicts: t.conflicts,
            created_by: t.created_by,
            assignee: t.assignee,
            origin: t.origin,
            commits: t.commits,
            children: 0,
            open_children: 0,
            held_by: None,
            created_at: t.created_at,
            modified_at: t.modified_at,
            sync_state: SyncState::Synced,
            last_error: None,
            error_code: None,
            open_rows: 0,
            next_attempt_at: None,
        }
    }
}

/// The order of a task listing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Sort {
    /// Capture order (the store's order).
    #[default]
    Created,
    /// Soonest due first; tasks with no due date last.
    Due,
    /// H, M, L, then none.
    Priority,
    /// By key: prefix, then the numbers one by one, so a subtask follows its parent
    /// (`DEV-2`, `DEV-2.1`, `DEV-2.1.1`, `DEV-10`); tasks without a key yet last, in capture
    /// order.
    Key,
}

impl std::str::FromStr for Sort {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Sort, String> {
        match s.to_ascii_lowercase().as_str() {
            "created" => Ok(Sort::Created),
            "due" => Ok(Sort::Due),
            "priority" | "pri" => Ok(Sort::Priority),
            "key" => Ok(Sort::Key),
            _ => Err(format!(
                "'{s}' is not an order: use key, created, due or priority"
            )),
        }
    }
}

impl Sort {
    /// Sorts `tasks` stably: ties keep the order they came in (capture order from
    /// [`crate::Engine::query`], leaf-first from [`crate::Engine::next`]).
    pub fn apply(self, tasks: &mut [LocalTask]) {
        match self {
            Sort::Created => tasks.sort_by_key(|t| t.created_at),
            Sort::Due => tasks.sort_by_key(|t| (t.due.is_none(), t.due)),
            Sort::Priority => tasks.sort_by_key(|t| std::cmp::Reverse(t.priority)),
            Sort::Key => tasks.sort_by_cached_key(|t| {
                let key = key_order(t);
                (key.is_none(), key, t.created_at)
            }),
        }
    }
}

/// A key as it sorts: the prefix, then every number root first (`DEV-2.1` is `("DEV", [2, 1])`),
/// so numbers compare as numbers and a subtask comes right after its parent. `None` for a task
/// without a key (or, never expected, one that does not parse).
pub(crate) fn key_order(t: &LocalTask) -> Option<(callsign_core::Prefix, Vec<u64>)> {
    let key = callsign_core::TaskKey::parse(t.key.as_deref()?).ok()?;
    let mut numbers = key.parents;
    numbers.push(key.number);
    Some((key.prefix, numbers))
}

/// The life of an outbox row (DESIGN.md section 6). See [`crate::outbox_state`] for the moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowState {
    Pending,
    InProgress,
    Failed,
    Done,
}

impl RowState {
    pub fn as_str(self) -> &'static str {
        match self {
            RowState::Pending => "pending",
            RowState::InProgress => "in_progress",
            RowState::Failed => "failed",
            RowState::Done => "done",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => RowState::Pending,
            "in_progress" => RowState::InProgress,
            "failed" => RowState::Failed,
            "done" => RowState::Done,
            _ => return None,
        })
    }
}

pub fn op_str(op: MutationOp) -> &'static str {
    match op {
        MutationOp::Create => "create",
        MutationOp::Update => "update",
    }
}

pub fn parse_op(s: &str) -> Option<MutationOp> {
    match s {
        "create" => Some(MutationOp::Create),
        "update" => Some(MutationOp::Update),
        _ => None,
    }
}

/// One outbox row. Once `sent` is true, `idempotency_key` and `body` are frozen (a database
/// trigger enforces it) until the row fails and the user retries it with a new key.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxRow {
    pub id: i64,
    pub uuid: Uuid,
    pub op: MutationOp,
    pub idempotency_key: String,
    pub body: serde_json::Value,
    pub state: RowState,
    pub sent: bool,
    pub try_count: u32,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub last_touch: i64,
    pub next_attempt_at: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn task(n: u128, due: Option<i64>, priority: Option<Priority>) -> LocalTask {
        LocalTask::from_server(Task {
            uuid: Uuid::from_u128(n),
            project: "SYN".into(),
            description: format!("t{n}"),
            due: due.map(|d| Utc.timestamp_opt(d, 0).unwrap()),
            priority,
            ..Default::default()
        })
    }

    fn order(sort: Sort, mut tasks: Vec<LocalTask>) -> Vec<String> {
        sort.apply(&mut tasks);
        tasks.into_iter().map(|t| t.description).collect()
    }

    #[test]
    fn sorts_by_due_and_priority_keeping_capture_order_on_ties() {
        let tasks = vec![
            task(1, None, Some(Priority::L)),
            task(2, Some(200), None),
            task(3, Some(100), Some(Priority::H)),
            task(4, None, Some(Priority::H)),
            task(5, Some(100), None),
        ];
        assert_eq!(
            order(Sort::Due, tasks.clone()),
            ["t3", "t5", "t2", "t1", "t4"]
        );
        assert_eq!(
            order(Sort::Priority, tasks.clone()),
            ["t3", "t4", "t1", "t2", "t5"]
        );
        assert_eq!(order(Sort::Created, tasks), ["t1", "t2", "t3", "t4", "t5"]);
        assert_eq!("Due".parse(), Ok(Sort::Due));
        assert_eq!("KEY".parse(), Ok(Sort::Key));
        assert!("size"
            .parse::<Sort>()
            .unwrap_err()
            .contains("key, created, due or priority"));
    }

    /// Captured at second `at` (capture order), with `key` when it has one.
    fn keyed(key: Option<&str>, at: i64) -> LocalTask {
        let mut t = task(at as u128, None, None);
        t.description = key.map_or_else(|| format!("~{at}"), str::to_owned);
        t.key = key.map(str::to_owned);
        t.created_at = Utc.timestamp_opt(at, 0).unwrap();
        t
    }

    #[test]
    fn key_order_is_prefix_then_numbers_with_subtasks_after_their_parent() {
        let tasks = vec![
            keyed(None, 9),
            keyed(Some("DEV-10"), 1),
            keyed(Some("DEV-2.1"), 2),
            keyed(None, 3),
            keyed(Some("ABC-7"), 4),
            keyed(Some("DEV-2"), 5),
            keyed(Some("DEV-2.10"), 6),
            keyed(Some("DEV-2.1.1"), 7),
            keyed(Some("DEV-9"), 8),
            keyed(Some("DEV-2.2"), 10),
        ];
        assert_eq!(
            order(Sort::Key, tasks.clone()),
            [
                "ABC-7",
                "DEV-2",
                "DEV-2.1",
                "DEV-2.1.1",
                "DEV-2.2",
                "DEV-2.10",
                "DEV-9",
                "DEV-10",
                "~3",
                "~9"
            ]
        );
    }

    /// `next` hands its tasks over leaf-first; `--sort created` puts them back in capture order.
    #[test]
    fn created_restores_capture_order_from_any_order() {
        let tasks = vec![keyed(None, 3), keyed(Some("DEV-1"), 1), keyed(None, 2)];
        assert_eq!(order(Sort::Created, tasks), ["DEV-1", "~2", "~3"]);
    }
}
