//! The storage seam: what the server needs from a database, so the key protocol, the reaper
//! and the API are written once for every backend.
//!
//! - [`AllocStore`], the allocation store: accounts, tokens, projects, counters, idempotency
//!   slots (and the claim on one), keys, the change feed, the idempotency window. Its steps are
//!   the key protocol's transactions (phase 1 for a batch, phase 2's commits), so each backend
//!   runs a step as one transaction of its own kind.
//! - [`TaskStore`], the task store: TaskChampion's model ([`model`]) per account.
//! - [`Links`], the accounts' links to Taskwarrior, beside TaskChampion's sync chains.
//!
//! The types these speak live here too ([`rows`], [`protocol`], [`model`], [`window`]), with
//! one [`Error`] that carries no driver's types. A backend returns rows and outcomes; the
//! answers a client sees (task JSON, HTTP errors) are made above the seam, by the server:
//! phase 1 says why it refused ([`Refusal`]), and a commit stores the body the server's
//! [`Render`] makes.
//!
//! Backends: `callsign-storage-sqlite` (the embedded default: one allocation database and one
//! TaskChampion replica per account, in a data dir) and `callsign-storage-postgres` (any number
//! of server nodes on one PostgreSQL). `callsign-storage-conformance` is the suite both pass.
#![forbid(unsafe_code)]

pub mod error;
pub mod model;
pub mod protocol;
pub mod rows;
pub mod stats;
pub mod window;

use std::collections::HashMap;
use std::path::PathBuf;

use async_trait::async_trait;
use callsign_core::dto::{NewTask, Project, TaskPatch};
use callsign_core::{MemberName, Prefix, Role};
use uuid::Uuid;

pub use error::{Error, Result};
pub use model::Snapshot;
pub use protocol::{
    fingerprint, Claim, Commit, CreateRequest, KeyLookup, Meta, Mutation, Op, Phase1, Refusal,
    Renamed, Render, Reply, Reserved, Settled, TaskMeta, Witness,
};
pub use protocol::{origin_in, witness_in, Imported};
pub use rows::{
    now_ms, AccountId, AddMember, Caller, ChangeRow, Clash, DeviceRow, InstanceId, KeyRow, LostKey,
    MemberId, MemberRow, NewAccount, NewInvite, NewMember, RecoveringRow, RecoveryReason,
    RecoveryReport, Redeem, RemoveMember, Rollback, Slot, SlotState,
};
use window::{Basis, Setting, Window};

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

    // --- recovery after a rollback (docs/RECOVERY.md) ---
    /// Marks every project of every account (or of `account`) recovering since `now`, and
    /// records the rollback ([`Self::last_rollback`]); a project already recovering keeps its
    /// start. While a project recovers, every commit that would
    /// take a number from its counter fails with [`Error::Recovering`] and takes none.
    /// Returns the projects now recovering.
    async fn start_recovery(
        &self,
        account: Option<AccountId>,
        reason: RecoveryReason,
        now: i64,
    ) -> Result<Vec<RecoveringRow>>;
    /// The projects recovering, by account and prefix.
    async fn recovering(&self) -> Result<Vec<RecoveringRow>>;
    /// The latest rollback (a restore, or one declared by `start_recovery`), if any.
    async fn last_rollback(&self) -> Result<Option<Rollback>>;
    /// Ends the recovery of `account`'s projects (all accounts': `None`), or of its project
    /// `prefix` only. Returns the projects whose recovery ended.
    async fn end_recovery(
        &self,
        account: Option<AccountId>,
        prefix: Option<&Prefix>,
    ) -> Result<Vec<RecoveringRow>>;
    /// Records that the token hashing to `hash` reached the server at `now` (the caller
    /// writes at most hourly per token).
    async fn token_seen(&self, hash: &[u8], now: i64) -> Result<()>;
    /// Records that the token's device brought back the keys it holds at `now`.
    async fn token_witnessed(&self, hash: &[u8], now: i64) -> Result<()>;
    /// The devices of `account` seen at or after `active_since` (a token never seen counts
    /// from when it was made) that have not brought back their keys at or after `after`.
    async fn unwitnessed(
        &self,
        account: AccountId,
        active_since: i64,
        after: i64,
    ) -> Result<Vec<DeviceRow>>;
    /// What recovery could not bring back, for `account` (every account: `None`): numbers
    /// below a counter that no task holds, and keys two tasks claimed.
    async fn recovery_report(&self, account: Option<AccountId>) -> Result<RecoveryReport>;
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
    ) -> Vec<Result<Phase1>>;
    /// Claims one key for the reaper (`None`: someone holds it).
    async fn claim(&self, account: AccountId, idem: &str) -> Result<Option<Claim>>;
    /// Phase 2's commit for a batch, one transaction: per create, keep the UUID's key or bump
    /// the counter and insert the key (a witnessed create, [`CreateRequest::Witnessed`], binds
    /// the numbers it brings where no other task holds them, also while its project recovers,
    /// raises the counter past them, and records a clash for each held one; a UUID that has a
    /// key keeps it and gains the free witnessed ones as earlier keys); commit the slot with its answer; append to the change
    /// feed. A slot no longer pending answers what it stored. An item's failure is its own.
    async fn commit(
        &self,
        account: AccountId,
        op: Op,
        work: Vec<Commit>,
        now: i64,
        render: Render,
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
    /// The tasks that hold these origin keys (each [`callsign_core::dto::Origin::normal_key`]):
    /// an imported task's key in its tracker keeps naming it. A key no task holds is absent.
    async fn origin_holders(
        &self,
        account: AccountId,
        keys: Vec<String>,
    ) -> Result<HashMap<String, Uuid>>;
    /// The subtasks reserved under each of `parents` (a parent with none is absent).
    async fn children(
        &self,
        account: AccountId,
        parents: Vec<Uuid>,
    ) -> Result<HashMap<Uuid, Vec<Uuid>>>;
    /// The last feed position a cursor of `account` can be at now: a cursor past it was given
    /// out before the database was rolled back.
    async fn feed_end(&self, account: AccountId) -> Result<i64>;
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
    /// Derives the window from the evidence since `since` ([`window::derive`]), stores
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
    ) -> Result<Vec<Snapshot>>;
    /// Applies each patch; `None` for a task the store does not hold.
    async fn update(
        &self,
        account: AccountId,
        work: Vec<(Uuid, TaskPatch)>,
    ) -> Result<Vec<Option<Snapshot>>>;
    /// Writes the `key` property onto tasks (idempotent).
    async fn set_keys(&self, account: AccountId, keys: Vec<(Uuid, String)>) -> Result<()>;
    async fn get(&self, account: AccountId, uuids: Vec<Uuid>) -> Result<Vec<Option<Snapshot>>>;
    /// Whether the store runs, and the accounts whose data failed its last use.
    fn health(&self) -> (bool, Vec<(AccountId, String)>);
    /// Syncs the account's replica with its Taskwarrior chain (Taskwarrior sync): pulls
    /// and applies the versions it has not seen, sends its own operations as a new version.
    async fn sync_replica(&self, account: AccountId, job: ReplicaSyncJob) -> Result<ReplicaSynced> {
        let _ = (account, job);
        Err(Error::Unsupported(
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

/// An account's link to Taskwarrior.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub account: AccountId,
    pub client_id: Uuid,
    /// The secret, sealed under the server key.
    pub sealed_secret: Vec<u8>,
    /// The last operation of the account's replica that the server has settled (keys, feed);
    /// `None` until its replica first joins the chain.
    pub applied_op: Option<i64>,
}

/// Where the links to Taskwarrior live, beside TaskChampion's sync chains (SQLite's
/// `taskwarrior.sqlite3`, or PostgreSQL's `tw_*` tables). A backend's link store also stores
/// the chains (`taskchampion_sync_server_core::Storage`).
#[async_trait]
pub trait Links: Send + Sync + 'static {
    /// Links `account` to a new client id with `sealed_secret`, replacing any earlier link and
    /// forgetting its chain (a Taskwarrior still set up with the old id gets `403`).
    async fn relink(
        &self,
        account: AccountId,
        client_id: Uuid,
        sealed_secret: &[u8],
        now: i64,
    ) -> Result<()>;
    /// The link whose client id this is.
    async fn link_by_client(&self, client_id: Uuid) -> Result<Option<Link>>;
    /// The account's link.
    async fn link_of(&self, account: AccountId) -> Result<Option<Link>>;
    /// Records how far the server has settled the account's replica, for the link with
    /// `client_id` (a relink meanwhile is left alone).
    async fn set_applied(&self, client_id: Uuid, op: i64) -> Result<()>;
    /// The latest version of the client's chain (`None`: no such client).
    async fn latest_version(&self, client_id: Uuid) -> Result<Option<Uuid>>;
    /// Held while the account settles: no other node settles it meanwhile.
    async fn exclusive(&self, account: AccountId) -> Result<Box<dyn Send>>;
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
