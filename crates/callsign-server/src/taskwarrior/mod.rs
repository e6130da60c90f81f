//! Taskwarrior 3 syncs with Callsign: the server is a TaskChampion sync server for each
//! account that is linked, and takes part in that account's chain as a replica of its own.
//!
//! **The chain.** TaskChampion's sync protocol (`taskchampion_sync_server_core`) keeps, per
//! client id, a chain of encrypted versions (each a list of operations) and the latest
//! snapshot; its storage here is [`sqlite::SqliteSync`]. An account is linked by
//! `callsign-server account taskwarrior`, which makes a client id and an encryption secret,
//! shows them once and keeps the secret sealed under the admin's server key
//! ([`envelope::ServerKey`]). The server can read these tasks: this is not end-to-end
//! encryption.
//!
//! **The server's replica.** The account's TaskChampion replica (the task store) syncs with
//! that chain in this process ([`Chain`], no HTTP): after Taskwarrior adds a version, and
//! before a Taskwarrior that is up to date is told so, [`settle`] runs the replica's
//! `Replica::sync` on the task store's worker, which applies Taskwarrior's operations with
//! TaskChampion's own rules and sends the server's own (tasks from the app and the CLI, keys,
//! edits) as a new version. Then, for the tasks those operations touched:
//! - a task the allocation store has never seen gets its key through the same create protocol
//!   as any other, under the idempotency key `taskwarrior:UUID`, so a repeated or interrupted
//!   sync never gives it a second number; its project is its Taskwarrior `project` when that
//!   names a project of the account, else the account's first project;
//! - a task with a key gets a change-feed entry, so every device pulls Taskwarrior's edit;
//! - `key` (and `project`, which follows the key) are the server's: a Taskwarrior edit of
//!   either is overwritten with the true key;
//! - the key writes are sent in the same settle, so they reach Taskwarrior in the same
//!   `task sync` (it pulls again after its push).
//!
//! How far the replica's log has been settled is kept with the link (`applied_op`), so a crash
//! between a sync and its keys is settled by the next one. One settle runs per account at a
//! time in a process.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use callsign_core::dto::NewTask;
use callsign_core::ErrorCode;
use taskchampion::server::{
    AddVersionResult, GetVersionResult, HistorySegment, Snapshot as TcSnapshot, SnapshotUrgency,
    VersionId,
};
use taskchampion_sync_server_core as core;
use uuid::Uuid;

use crate::db::{now_ms, AccountId};
use crate::error::{ApiError, ApiResult};
use crate::protocol::{self, CreateReq};
use crate::storage::ReplicaSyncJob;
use crate::AppState;

pub mod envelope;
pub mod pg;
pub mod sqlite;

use envelope::{Cryptor, ServerKey};

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

/// Where the links live, beside the chains (`taskwarrior.sqlite3`, or PostgreSQL's `tw_*`
/// tables).
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
    ) -> anyhow::Result<()>;
    /// The link whose client id this is.
    async fn link_by_client(&self, client_id: Uuid) -> anyhow::Result<Option<Link>>;
    /// The account's link.
    async fn link_of(&self, account: AccountId) -> anyhow::Result<Option<Link>>;
    /// Records how far the server has settled the account's replica, for the link with
    /// `client_id` (a relink meanwhile is left alone).
    async fn set_applied(&self, client_id: Uuid, op: i64) -> anyhow::Result<()>;
    /// The latest version of the client's chain (`None`: no such client).
    async fn latest_version(&self, client_id: Uuid) -> anyhow::Result<Option<Uuid>>;
    /// Held while the account settles: no other node settles it meanwhile.
    async fn exclusive(&self, account: AccountId) -> anyhow::Result<Box<dyn Send>>;
}

/// What a user sets in Taskwarrior, shown once.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Credentials {
    pub client_id: Uuid,
    pub encryption_secret: String,
}

/// The Taskwarrior side of a server.
pub struct Taskwarrior {
    pub links: Arc<dyn Links>,
    core: Arc<core::Server>,
    key: Option<ServerKey>,
    cryptors: Mutex<HashMap<Uuid, Arc<Cryptor>>>,
    settling: Mutex<HashMap<AccountId, Arc<tokio::sync::Mutex<()>>>>,
}

impl Taskwarrior {
    /// The service on `links` and the chains in `chains` (the same database).
    pub fn new(
        links: Arc<dyn Links>,
        chains: impl core::Storage + 'static,
        key: Option<ServerKey>,
    ) -> Taskwarrior {
        Taskwarrior {
            core: Arc::new(core::Server::new(core::ServerConfig::default(), chains)),
            links,
            key,
            cryptors: Mutex::default(),
            settling: Mutex::default(),
        }
    }

    /// The chain's protocol (`taskchampion_sync_server_core`).
    pub fn core(&self) -> &core::Server {
        &self.core
    }

    fn key(&self) -> ApiResult<&ServerKey> {
        self.key.as_ref().ok_or_else(|| {
            ApiError::new(
                ErrorCode::NotImplemented,
                "Taskwarrior sync needs a server key: start the server with \
                 --taskwarrior-key-file (docs/TASKWARRIOR.md)",
            )
        })
    }

    /// Links `account` to a new client id and secret (replacing any earlier link: a
    /// Taskwarrior set up with the old one is refused from now on).
    pub async fn link(&self, account: AccountId) -> anyhow::Result<Credentials> {
        let key = self.key().map_err(|e| anyhow::anyhow!("{}", e.detail))?;
        let client_id = Uuid::new_v4();
        let secret = hex::encode(envelope::random_bytes()?);
        let sealed = key.seal(client_id, secret.as_bytes())?;
        self.links
            .relink(account, client_id, &sealed, now_ms())
            .await?;
        Ok(Credentials {
            client_id,
            encryption_secret: secret,
        })
    }

    /// The link of a Taskwarrior's `X-Client-Id` (`403 unknown_client` for none).
    pub async fn link_by_client(&self, client_id: Uuid) -> ApiResult<Link> {
        self.key()?;
        self.links
            .link_by_client(client_id)
            .await
            .map_err(internal)?
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::UnknownClient,
                    format!(
                        "no account is linked to client id {client_id}; ask the admin for \
                         the current one (callsign-server account taskwarrior)"
                    ),
                )
            })
    }

    /// The account's envelope key, derived once per process (PBKDF2 is slow by design).
    fn cryptor(&self, link: &Link) -> ApiResult<Arc<Cryptor>> {
        if let Some(c) = lock(&self.cryptors).get(&link.client_id) {
            return Ok(c.clone());
        }
        let secret = self
            .key()?
            .open(link.client_id, &link.sealed_secret)
            .map_err(|e| {
                tracing::error!(account = link.account, error = %e, "a Taskwarrior secret does not open with the server key");
                ApiError::new(
                    ErrorCode::Internal,
                    "this account's Taskwarrior secret does not open with the server's key",
                )
            })?;
        let c = Arc::new(Cryptor::new(link.client_id, &secret));
        lock(&self.cryptors).insert(link.client_id, c.clone());
        Ok(c)
    }

    /// Refuses a version that does not open with the account's key or is not a list of
    /// TaskChampion's operations: taken into the chain, it would stop every replica of the
    /// account at its next sync (TaskChampion's clients do not expect one).
    pub fn check_version(&self, link: &Link, parent: Uuid, sealed: &[u8]) -> ApiResult<()> {
        let plain = self.open_sealed(link, parent, sealed)?;
        serde_json::from_slice::<VersionShape>(&plain).map_err(|e| {
            ApiError::new(
                ErrorCode::InvalidBody,
                format!("the version is not a list of TaskChampion operations: {e}"),
            )
        })?;
        Ok(())
    }

    /// Refuses a snapshot that does not open with the account's key.
    pub fn check_snapshot(&self, link: &Link, version: Uuid, sealed: &[u8]) -> ApiResult<()> {
        self.open_sealed(link, version, sealed).map(drop)
    }

    fn open_sealed(&self, link: &Link, id: Uuid, sealed: &[u8]) -> ApiResult<Vec<u8>> {
        self.cryptor(link)?.open(id, sealed).map_err(|e| {
            ApiError::new(
                ErrorCode::InvalidBody,
                format!(
                    "{e}: check Taskwarrior's sync.encryption_secret (the one \
                     `callsign-server account taskwarrior` printed for this client id)"
                ),
            )
        })
    }

    /// Serializes the settles of one account in this process.
    pub async fn settling(&self, account: AccountId) -> tokio::sync::OwnedMutexGuard<()> {
        let m = lock(&self.settling).entry(account).or_default().clone();
        m.lock_owned().await
    }
}

/// The service on the server's database: `taskwarrior.sqlite3` in a data dir, the `tw_*`
/// tables on PostgreSQL (through `pool`).
pub fn open(
    database: &crate::storage::Database,
    pool: Option<deadpool_postgres::Pool>,
    key: Option<ServerKey>,
) -> Result<Taskwarrior, crate::StartError> {
    use crate::storage::Database;
    Ok(match (database, pool) {
        (Database::Sqlite(dir), _) => {
            let s = sqlite::SqliteSync::open(dir)
                .map_err(|e| crate::StartError::Taskwarrior(format!("{e:#}")))?;
            Taskwarrior::new(Arc::new(s.clone()), s, key)
        }
        (Database::Postgres(_), Some(pool)) => {
            let s = pg::PgSync::new(pool);
            Taskwarrior::new(Arc::new(s.clone()), s, key)
        }
        (Database::Postgres(url), None) => {
            return Err(crate::StartError::Taskwarrior(format!(
                "no connection pool for {url}"
            )))
        }
    })
}

/// What TaskChampion's clients read from a version: `{"operations": [SyncOp, ...]}` with its
/// serde encoding. Parsed only to check the shape.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct VersionShape {
    #[allow(dead_code)]
    operations: Vec<OpShape>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
enum OpShape {
    Create {
        uuid: Uuid,
    },
    Delete {
        uuid: Uuid,
    },
    Update {
        uuid: Uuid,
        property: String,
        value: Option<String>,
        timestamp: chrono::DateTime<chrono::Utc>,
    },
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn internal(e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "taskwarrior sync");
    ApiError::unavailable("the server could not read or write its Taskwarrior sync data; retry")
}

/// The account's chain as TaskChampion's client side sees it, in this process: versions and
/// snapshots sealed and opened with the account's key.
struct Chain {
    core: Arc<core::Server>,
    client_id: Uuid,
    cryptor: Arc<Cryptor>,
}

type TcResult<T> = Result<T, taskchampion::Error>;

fn tc_err(e: impl std::fmt::Display) -> taskchampion::Error {
    taskchampion::Error::Server(e.to_string())
}

#[async_trait(?Send)]
impl taskchampion::Server for Chain {
    async fn add_version(
        &mut self,
        parent_version_id: VersionId,
        history_segment: HistorySegment,
    ) -> TcResult<(AddVersionResult, SnapshotUrgency)> {
        let sealed = self
            .cryptor
            .seal(parent_version_id, &history_segment)
            .map_err(tc_err)?;
        let (res, urgency) = self
            .core
            .add_version(self.client_id, parent_version_id, sealed)
            .await
            .map_err(tc_err)?;
        let res = match res {
            core::AddVersionResult::Ok(v) => AddVersionResult::Ok(v),
            core::AddVersionResult::ExpectedParentVersion(v) => {
                AddVersionResult::ExpectedParentVersion(v)
            }
        };
        let urgency = match urgency {
            core::SnapshotUrgency::None => SnapshotUrgency::None,
            core::SnapshotUrgency::Low => SnapshotUrgency::Low,
            core::SnapshotUrgency::High => SnapshotUrgency::High,
        };
        Ok((res, urgency))
    }

    async fn get_child_version(
        &mut self,
        parent_version_id: VersionId,
    ) -> TcResult<GetVersionResult> {
        match self
            .core
            .get_child_version(self.client_id, parent_version_id)
            .await
            .map_err(tc_err)?
        {
            core::GetVersionResult::Success {
                version_id,
                parent_version_id,
                history_segment,
            } => Ok(GetVersionResult::Version {
                version_id,
                parent_version_id,
                history_segment: self
                    .cryptor
                    .open(parent_version_id, &history_segment)
                    .map_err(tc_err)?,
            }),
            core::GetVersionResult::NotFound => Ok(GetVersionResult::NoSuchVersion),
            core::GetVersionResult::Gone => Err(tc_err(format!(
                "version {parent_version_id} is no longer in the chain"
            ))),
        }
    }

    async fn add_snapshot(&mut self, version_id: VersionId, snapshot: TcSnapshot) -> TcResult<()> {
        let sealed = self.cryptor.seal(version_id, &snapshot).map_err(tc_err)?;
        self.core
            .add_snapshot(self.client_id, version_id, sealed)
            .await
            .map_err(tc_err)
    }

    async fn get_snapshot(&mut self) -> TcResult<Option<(VersionId, TcSnapshot)>> {
        match self
            .core
            .get_snapshot(self.client_id)
            .await
            .map_err(tc_err)?
        {
            Some((v, data)) => Ok(Some((v, self.cryptor.open(v, &data).map_err(tc_err)?))),
            None => Ok(None),
        }
    }
}

/// What one settle did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Settled {
    /// Tasks that got their key.
    pub keyed: usize,
    /// Tasks whose `key` or `project` was put back.
    pub restored: usize,
    /// Tasks given a change-feed entry.
    pub touched: usize,
}

/// Syncs the account's replica with its chain and settles what that brought (see the module
/// docs). Call with [`Taskwarrior::settling`] held.
pub async fn settle(state: &AppState, tw: &Taskwarrior, link: &Link) -> ApiResult<Settled> {
    let account = link.account;
    let synced = sync_once(state, tw, link, link.applied_op).await?;
    let mut out = Settled::default();
    let mut keys = Vec::new();
    if !synced.touched.is_empty() {
        keys = settle_touched(state, account, synced.touched, &mut out).await?;
    }
    let mut last = synced.last_op;
    if !keys.is_empty() {
        protocol::write_keys(state, account, keys).await?;
        crate::crash::point(crate::crash::TASKWARRIOR_AFTER_KEYS);
        // Sends the keys to the chain now, so Taskwarrior gets them in this `task sync`.
        last = sync_once(state, tw, link, Some(last)).await?.last_op;
    }
    // Most settles (an up-to-date Taskwarrior asking for news) move nothing: no write then.
    if link.applied_op != Some(last) {
        tw.links
            .set_applied(link.client_id, last)
            .await
            .map_err(internal)?;
    }
    Ok(out)
}

async fn sync_once(
    state: &AppState,
    tw: &Taskwarrior,
    link: &Link,
    after: Option<i64>,
) -> ApiResult<crate::storage::ReplicaSynced> {
    let job = ReplicaSyncJob {
        server: Box::new(Chain {
            core: tw.core.clone(),
            client_id: link.client_id,
            cryptor: tw.cryptor(link)?,
        }),
        restate: after.is_none(),
        after: after.unwrap_or(0),
        latest: tw
            .links
            .latest_version(link.client_id)
            .await
            .map_err(internal)?
            .unwrap_or_else(Uuid::nil),
    };
    Ok(state.tasks.sync_replica(link.account, job).await?)
}

/// Numbers the new tasks among `touched`, feeds the keyed ones, and returns the key writes
/// to make (new keys, and keys or projects Taskwarrior changed).
async fn settle_touched(
    state: &AppState,
    account: AccountId,
    touched: Vec<Uuid>,
    out: &mut Settled,
) -> ApiResult<Vec<(Uuid, String)>> {
    let meta = state.alloc.task_meta(account, touched.clone()).await?;
    let snapshots = state.tasks.get(account, touched.clone()).await?;
    let projects = state.alloc.list_projects(account).await?;
    let fallback = projects
        .iter()
        .min_by_key(|p| p.id)
        .map(|p| p.prefix.clone());
    let mut creates = Vec::new();
    let mut keys = Vec::new();
    let mut keyed = Vec::new();
    for (uuid, snap) in touched.into_iter().zip(snapshots) {
        let Some(snap) = snap else { continue };
        match meta.get(&uuid) {
            Some(m) => {
                let Some(k) = &m.key else {
                    // Reserved, not numbered yet: its create finishes (or the reaper settles it).
                    continue;
                };
                let key = k.key();
                keyed.push(uuid);
                if snap.key.as_deref() != Some(key.as_str())
                    || snap.project.as_deref() != Some(k.prefix.as_str())
                {
                    out.restored += 1;
                    keys.push((uuid, key));
                }
            }
            None if snap.status == callsign_core::dto::TaskStatus::Deleted => {}
            None => {
                let named = snap.project.as_deref().and_then(|p| {
                    projects
                        .iter()
                        .find(|pr| pr.is_named(&p.to_ascii_uppercase()))
                        .map(|pr| pr.prefix.clone())
                });
                let Some(project) = named.or_else(|| fallback.clone()) else {
                    continue;
                };
                let mut description: String = snap.description.chars().take(200).collect();
                if description.trim().is_empty() {
                    description = "(no description)".to_owned();
                }
                creates.push(CreateReq {
                    idem: format!("taskwarrior:{uuid}"),
                    uuid,
                    body: NewTask {
                        created_at: Some(snap.created_at),
                        ..NewTask::new(project, description)
                    },
                });
            }
        }
    }
    if !keyed.is_empty() {
        out.touched = keyed.len();
        state.alloc.touch(account, keyed, now_ms()).await?;
    }
    if !creates.is_empty() {
        for answer in protocol::create_many(state, account, creates).await {
            match answer {
                Ok(reply) => {
                    if let Ok(task) = serde_json::from_str::<callsign_core::dto::Task>(&reply.body)
                    {
                        if let Some(k) = task.key {
                            out.keyed += 1;
                            keys.push((task.uuid, k));
                        }
                    }
                }
                // Left pending or refused: the next settle (or the reaper) finishes it.
                Err(e) => tracing::warn!(account, error = %e, "numbering a Taskwarrior task"),
            }
        }
    }
    Ok(keys)
}
