//! The storage seam: what the server needs from a database, behind two traits, so the protocol,
//! the reaper and the API are written once for every backend.
//!
//! - [`AllocStore`], the allocation store: accounts, tokens, projects, counters, idempotency
//!   slots (and the claim on one), keys, the change feed, the idempotency window. Its steps are
//!   the key protocol's transactions (phase 1 for a batch, phase 2's commits), so each backend
//!   runs a step as one transaction of its own kind.
//! - [`TaskStore`], the task store: TaskChampion's model (tasks, operations, working set) per
//!   account.
//!
//! A backend is chosen once at start-up from a [`Database`] (`--database`). The embedded
//! default is SQLite ([`crate::db`] and [`crate::store`]: one allocation database and one
//! TaskChampion replica per account, in a data dir). [`conformance`] is the suite every
//! backend passes.
pub mod conformance;

use std::collections::HashMap;
use std::path::PathBuf;

use async_trait::async_trait;
use callsign_core::dto::{NewTask, Project, TaskPatch};
use callsign_core::{MemberName, Prefix, Role};
use uuid::Uuid;

use crate::db::meta::InstanceId;
use crate::db::{
    AccountId, AddMember, Caller, ChangeRow, KeyRow, MemberRow, NewAccount, NewInvite, Redeem,
    RemoveMember, Result, Slot,
};
use crate::error::ApiResult;
use crate::protocol::Reply;
use crate::store::{Snapshot, StoreError};
use crate::window::{Basis, Setting, Window};

/// Where the server keeps its data, chosen once at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// The embedded default: SQLite files in a data dir.
    Sqlite(PathBuf),
    /// A PostgreSQL server (`postgres://…`), shared by any number of server nodes.
    Postgres(String),
}

impl Database {
    /// `sqlite:<dir>` (or a bare path), `postgres://…` / `postgresql://…`.
    pub fn parse(s: &str) -> std::result::Result<Database, String> {
        let s = s.trim();
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(Database::Postgres(s.to_owned()));
        }
        let dir = s.strip_prefix("sqlite:").unwrap_or(s);
        if dir.is_empty() {
            return Err("a database is sqlite:<data-dir> or postgres://user@host:port/db".into());
        }
        if dir.contains("://") {
            return Err(format!(
                "unknown database {s:?}: use sqlite:<data-dir> or postgres://user@host:port/db"
            ));
        }
        Ok(Database::Sqlite(PathBuf::from(dir)))
    }

    /// The data dir of an SQLite database.
    pub fn data_dir(&self) -> Option<&std::path::Path> {
        match self {
            Database::Sqlite(d) => Some(d),
            Database::Postgres(_) => None,
        }
    }
}

impl std::fmt::Display for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Database::Sqlite(d) => write!(f, "sqlite:{}", d.display()),
            // Never print a password.
            Database::Postgres(url) => match url.split_once('@') {
                Some((auth, host)) if auth.contains(':') && auth.matches(':').count() > 1 => {
                    let user = auth.rsplit_once(':').map_or(auth, |(u, _)| u);
                    write!(f, "{user}:***@{host}")
                }
                _ => f.write_str(url),
            },
        }
    }
}

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
    /// The request's fingerprint (`protocol::fingerprint`).
    pub fp: Vec<u8>,
    /// The request body as stored in the slot (a create's `NewTask`, an update's `TaskPatch`).
    pub request: String,
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

/// How one mutation fares in phase 1.
#[derive(Debug)]
pub enum Phase1 {
    /// Answered already: a replay, or a refusal (`422`, `409`, `404`).
    Done(ApiResult<Reply>),
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

/// [`Meta`] of each reserved task among those asked for.
pub type TaskMeta = HashMap<Uuid, Meta>;

/// A key that a refused `uuid_for_key` explains: `Err(false)` no such prefix, `Err(true)` no
/// such number.
pub type KeyLookup = std::result::Result<Uuid, bool>;

/// What a project update ([`AllocStore::update_project`]) came to.
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
}

/// The allocation store. Every method is one transaction; a write returns after it is durable.
#[async_trait]
pub trait AllocStore: Send + Sync + 'static {
    /// `"sqlite"` or `"postgres"`, for logs and metrics.
    fn backend(&self) -> &'static str;
    /// Whether concurrent single requests should be joined into batches before they reach
    /// this store (`protocol::coalesce`): true for a store that does not group commits itself.
    fn wants_coalescing(&self) -> bool {
        false
    }

    // --- accounts, members, tokens, projects ---
    /// A new account (a team) with its first project and its first member, an owner named
    /// `owner`, who holds the token it returns.
    async fn create_account(
        &self,
        name: &str,
        prefix: &Prefix,
        project_name: &str,
        owner: &MemberName,
    ) -> Result<NewAccount>;
    /// A new token for the account's current member `member` (`None`: no such account or
    /// current member).
    async fn create_token(
        &self,
        account: AccountId,
        member: &MemberName,
        device: &str,
    ) -> Result<Option<String>>;
    /// The member a token belongs to; `None` for an unknown token or a removed member's.
    async fn caller_by_token_hash(&self, hash: &[u8]) -> Result<Option<Caller>>;
    /// Adds a member with a first token.
    async fn add_member(
        &self,
        account: AccountId,
        name: &MemberName,
        role: Role,
        device: &str,
    ) -> Result<AddMember>;
    /// Every member the account has had, current ones first (`None`: no such account).
    async fn list_members(&self, account: AccountId) -> Result<Option<Vec<MemberRow>>>;
    /// Removes a current member and deletes their tokens; never the last owner.
    async fn remove_member(
        &self,
        account: AccountId,
        name: &MemberName,
        now: i64,
    ) -> Result<RemoveMember>;
    async fn create_invite(&self, invite: NewInvite) -> Result<()>;
    /// Tells the other nodes that `account` has a new change (PostgreSQL: `NOTIFY
    /// callsign_feed`); nothing to do for a store with one process.
    async fn announce_change(&self, account: AccountId) -> Result<()> {
        let _ = account;
        Ok(())
    }
    /// Redeems the invite whose code hashes to `code_hash`, one transaction (see [`Redeem`]).
    async fn redeem_invite(
        &self,
        code_hash: &[u8],
        name: &MemberName,
        device: &str,
        now: i64,
    ) -> Result<Redeem>;
    /// Deletes invites that expired before `before` (the reaper); how many.
    async fn purge_invites(&self, before: i64) -> Result<u64>;
    async fn list_projects(&self, account: AccountId) -> Result<Vec<Project>>;
    /// `None`: the account has a project with this prefix already.
    async fn create_project(
        &self,
        account: AccountId,
        name: &str,
        prefix: &Prefix,
    ) -> Result<Option<Project>>;
    /// Renames the project whose prefix is `from` to `prefix` (a move of the prefix, one
    /// transaction): its numbers stay, its current keys take the new prefix, every key it had
    /// keeps naming its task, and each of its tasks gets a change-feed entry. `prefix` may be
    /// none of the account's prefixes, current or earlier, but this project's own earlier
    /// ones. `name` renames it too (or alone).
    async fn update_project(
        &self,
        account: AccountId,
        from: &Prefix,
        prefix: Option<&Prefix>,
        name: Option<&str>,
        now: i64,
    ) -> Result<Renamed>;
    async fn account_ids(&self) -> Result<Vec<AccountId>>;
    /// Random bytes made with the store: what replicas and cursors are bound to.
    async fn instance_id(&self) -> Result<InstanceId>;
    async fn cursor_key(&self) -> Result<Vec<u8>>;

    // --- the key protocol ---
    /// Phase 1 for a batch of mutations with distinct idempotency keys, one transaction: claim
    /// each key (`409 request_in_progress` if held), then replay a committed slot, resume a
    /// pending one, refuse another fingerprint (`422`), or reserve the UUID (a create) and
    /// insert a pending slot with no number. One answer per mutation, in order.
    async fn phase1(
        &self,
        account: AccountId,
        op: Op,
        items: &[Mutation],
        now: i64,
    ) -> Vec<ApiResult<Phase1>>;
    /// Claims one key for the reaper (`None`: someone holds it).
    async fn claim(&self, account: AccountId, idem: &str) -> Result<Option<Claim>>;
    /// Phase 2's commit for a batch, one transaction: per create, keep the UUID's key or bump
    /// the counter and insert the key; commit the slot with its answer; append to the change
    /// feed. A slot no longer pending answers what it stored. An item's failure is its own.
    async fn commit(
        &self,
        account: AccountId,
        op: Op,
        work: Vec<Commit>,
        now: i64,
    ) -> Result<Vec<Result<Reply>>>;
    /// The prefix and current key of each reserved task among `uuids`.
    async fn task_meta(&self, account: AccountId, uuids: Vec<Uuid>) -> Result<TaskMeta>;
    /// Records that these keys were written onto their tasks in the task store: a task whose
    /// current key is the one written is marked; one whose key changed meanwhile (a move, a
    /// rename) is unmarked, as the write may have put back an older key.
    async fn mark_in_store(&self, account: AccountId, keys: Vec<(Uuid, String)>) -> Result<()>;
    /// Appends a change-feed entry for each of `uuids` that has a key (tasks changed outside
    /// the key protocol: by a Taskwarrior sync), so every device pulls them again.
    async fn touch(&self, account: AccountId, uuids: Vec<Uuid>, now: i64) -> Result<()>;
    /// Whether the account reserved `uuid`.
    async fn task_reserved(&self, account: AccountId, uuid: Uuid) -> Result<bool>;
    /// The task of a key: `scope` is `""` for a task, the parent's key path for a subtask.
    async fn uuid_for_key(
        &self,
        account: AccountId,
        prefix: &str,
        scope: &str,
        number: i64,
    ) -> Result<KeyLookup>;
    /// The subtasks reserved under each of `parents` (a parent with none is absent).
    async fn children(
        &self,
        account: AccountId,
        parents: Vec<Uuid>,
    ) -> Result<HashMap<Uuid, Vec<Uuid>>>;
    /// Up to `limit` feed entries after `after`, and whether more follow. A cursor never skips
    /// an entry that commits later.
    async fn changes_since(
        &self,
        account: AccountId,
        after: i64,
        limit: usize,
    ) -> Result<(Vec<ChangeRow>, bool)>;

    // --- the reaper ---
    /// Pending slots created before `before`, oldest first.
    async fn pending_slots(&self, before: i64, limit: usize) -> Result<Vec<Slot>>;
    /// Fails a pending slot and releases its UUID reservation if no pending slot needs it;
    /// `false` if the slot was no longer pending.
    async fn fail_slot(&self, account: AccountId, idem: &str, uuid: Uuid, now: i64)
        -> Result<bool>;
    /// Committed keys not yet written onto their tasks, assigned before `before`.
    async fn keys_not_in_store(
        &self,
        before: i64,
        limit: usize,
    ) -> Result<Vec<(AccountId, Uuid, String)>>;
    /// Purges up to `limit` settled slots older than `before`, leaving tombstones.
    async fn purge_settled(&self, before: i64, limit: usize, now: i64) -> Result<usize>;
    /// Forgets up to `limit` tombstones older than `before`.
    async fn forget_purged(&self, before: i64, limit: usize) -> Result<usize>;
    /// Derives the window from the evidence since `since` ([`crate::window::derive`]), stores
    /// it if it changed, forgets older evidence; one transaction, so nodes agree.
    async fn update_window(
        &self,
        setting: Setting,
        current: i64,
        since: i64,
        now: i64,
    ) -> Result<Window>;
    /// The window last stored, and its basis.
    async fn window_in_force(&self) -> Result<Option<(i64, Basis)>>;

    // --- operations ---
    /// Retry spans of slots created since `since` (for `/metrics`), and the pending count.
    async fn retry_stats(&self, since: i64) -> Result<(Vec<i64>, i64)>;
    /// Reads one row and commits one write; an error says which failed.
    async fn probe(&self) -> std::result::Result<(), String>;
}

/// The task store: TaskChampion's model per account.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Creates each task (an existing UUID is left as it is); one commit for all.
    async fn create(
        &self,
        account: AccountId,
        tasks: Vec<(Uuid, NewTask)>,
    ) -> std::result::Result<Vec<Snapshot>, StoreError>;
    /// Applies each patch; `None` for a task the store does not hold.
    async fn update(
        &self,
        account: AccountId,
        work: Vec<(Uuid, TaskPatch)>,
    ) -> std::result::Result<Vec<Option<Snapshot>>, StoreError>;
    /// Writes the `key` property onto tasks (idempotent).
    async fn set_keys(
        &self,
        account: AccountId,
        keys: Vec<(Uuid, String)>,
    ) -> std::result::Result<(), StoreError>;
    async fn get(
        &self,
        account: AccountId,
        uuids: Vec<Uuid>,
    ) -> std::result::Result<Vec<Option<Snapshot>>, StoreError>;
    /// Whether the store runs, and the accounts whose data failed its last use.
    fn health(&self) -> (bool, Vec<(AccountId, String)>);
    /// Syncs the account's replica with its Taskwarrior chain ([`crate::taskwarrior`]): pulls
    /// and applies the versions it has not seen, sends its own operations as a new version.
    async fn sync_replica(
        &self,
        account: AccountId,
        job: ReplicaSyncJob,
    ) -> std::result::Result<ReplicaSynced, StoreError> {
        let _ = (account, job);
        Err(StoreError::Unsupported(
            "Taskwarrior sync is not available on this storage backend yet",
        ))
    }
}

/// One sync of an account's replica with its Taskwarrior chain.
pub struct ReplicaSyncJob {
    /// The chain, in this process: TaskChampion's client side of the sync protocol.
    pub server: Box<dyn taskchampion::Server + Send>,
    /// Restate the operations log first: the replica joins this chain for the first time.
    pub restate: bool,
    /// Report the tasks of the operations after this id of the replica's log.
    pub after: i64,
    /// The chain's latest version: a replica based on it with nothing to send skips the sync.
    pub latest: Uuid,
}

/// What a [`ReplicaSyncJob`] came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaSynced {
    /// The tasks of the log's operations after the job's `after` (restated ones excepted),
    /// each once.
    pub touched: Vec<Uuid>,
    /// The id of the log's last operation.
    pub last_op: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_is_a_data_dir_or_a_postgres_url() {
        assert_eq!(
            Database::parse("sqlite:/var/lib/callsign").unwrap(),
            Database::Sqlite("/var/lib/callsign".into())
        );
        assert_eq!(
            Database::parse("./data").unwrap(),
            Database::Sqlite("./data".into())
        );
        assert_eq!(
            Database::parse("postgres://u@127.0.0.1:5432/db").unwrap(),
            Database::Postgres("postgres://u@127.0.0.1:5432/db".into())
        );
        assert!(Database::parse("mysql://x").is_err());
        assert!(Database::parse("sqlite:").is_err());
        assert_eq!(
            Database::Postgres("postgres://u:secret@h/db".into()).to_string(),
            "postgres://u:***@h/db"
        );
    }
}
