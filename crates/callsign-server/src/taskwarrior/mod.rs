//! Taskwarrior 3 syncs with Callsign: the server is a TaskChampion sync server for each account
//! that is linked, and takes part in that account's chain as a replica of its own.
//!
//! **The chain.** TaskChampion's sync protocol (`taskchampion_sync_server_core`) keeps, per
//! client id, a chain of encrypted versions (each a list of operations) and the latest snapshot
//! (docs/TASKWARRIOR.md). Its storage is the server's own database, beside the accounts' links
//! ([`Links`]): `callsign_storage_sqlite::taskwarrior` (`taskwarrior.sqlite3` in the data dir)
//! or `callsign_storage_postgres::taskwarrior` (the `tw_*` tables, a protocol transaction
//! locking its client's row). `crate::api::taskwarrior` serves the four routes, each on a
//! blocking thread of its own, since the core's futures are not `Send`. An account is linked by
//! `callsign-server account taskwarrior`, which makes a client id and an encryption secret,
//! shows them once and keeps the secret sealed under the admin's server key
//! ([`envelope::ServerKey`]; the envelope is TaskChampion's documented one). The server can
//! read these tasks: this is not end-to-end encryption.
//!
//! **The server's replica.** The account's TaskChampion replica (the task store) syncs with
//! that chain in this process (`settle.rs`'s `Chain`, no HTTP, sealing and opening in memory):
//! after Taskwarrior adds a version, and before a Taskwarrior that is up to date is told so,
//! [`settle`] asks the task store for `sync_replica` (SQLite: `Replica::sync` on the store's
//! worker, after the group it arrived in has committed; PostgreSQL: a `StorageTxn` over the
//! `tc_*` tables under the task store's advisory lock), which applies Taskwarrior's operations
//! with TaskChampion's own rules and sends the server's own (tasks from the app and the CLI,
//! keys, edits) as a new version. Before a replica first joins a chain its log is restated (a
//! `Create` and an `Update` per property of every task, unsynced), since a trimmed log would
//! send updates of tasks the chain never saw. Then, for the tasks the log's operations after
//! the link's `applied_op` touched:
//! - a task the allocation store has never seen (and not deleted) gets its key through the same
//!   create protocol as any other, under the idempotency key `taskwarrior:UUID`, so a repeated
//!   or interrupted sync never gives it a second number; its project is its Taskwarrior
//!   `project` when that names a project of the account, else the account's first project;
//! - a task with a key gets a change-feed entry (`AllocStore::touch`), so every device pulls
//!   Taskwarrior's edit;
//! - `key` (and `project`, which follows the key) are the server's: a Taskwarrior edit of
//!   either is overwritten with the true key;
//! - the key writes are sent in the same settle, so they reach Taskwarrior in the same
//!   `task sync` (it pulls again after its push).
//!
//! How far the replica's log has been settled is kept with the link (`applied_op`), so a crash
//! between a sync and its keys is settled by the next one; the crash points
//! `taskwarrior.after_version` and `taskwarrior.after_keys` are tested end to end (the repeated
//! sync gives no second task or number). One settle runs per account at a time: a mutex in the
//! process ([`Taskwarrior::settling`]) and, on PostgreSQL, a session advisory lock across nodes
//! (`Links::exclusive`).
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use callsign_core::ErrorCode;
use taskchampion_sync_server_core as core;
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};
use callsign_storage::{now_ms, AccountId};

pub mod envelope;
mod settle;

pub use settle::{settle, Settled};

use envelope::{Cryptor, ServerKey};

pub use callsign_storage::{Link, Links};

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

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn internal(e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "taskwarrior sync");
    ApiError::unavailable("the server could not read or write its Taskwarrior sync data; retry")
}
