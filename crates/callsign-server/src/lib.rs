//! Callsign's sync server: hands out `PREFIX-N` keys that are never duplicated, never skipped
//! by a failure and never lost (DESIGN.md sections 1-4).
//!
//! Layout: [`storage`] is the seam between the server and its database (SQLite by default:
//! [`db`] is the allocation database, [`store`] the TaskChampion replicas),
//! [`protocol`] the two-phase create/update, [`reaper`] settles what crashes left pending,
//! [`api`] the HTTP surface. `main.rs` only parses the command line.
#![forbid(unsafe_code)]

pub mod api;
pub mod crash;
pub mod cursor;
pub mod datadir;
pub mod db;
pub mod error;
pub mod feed;
pub mod files;
mod inflight;
pub mod metrics;
pub mod pg;
pub mod protocol;
pub mod reaper;
pub mod serve;
pub mod storage;
pub mod store;
pub mod taskwarrior;
pub mod throttle;
pub mod wal;
pub mod window;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use api::router;

/// Server settings, from the command line.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the data lives (`--database`).
    pub database: storage::Database,
    /// How often the reaper runs.
    pub reaper_interval: Duration,
    /// How long a pending slot whose task never reached the store is kept for a retry: derived
    /// from the retries observed ([`window`]), or fixed.
    pub idempotency_window: window::Setting,
    /// Failed authentications one client address may make a minute ([`throttle`]).
    pub auth_failures_per_minute: u32,
    /// How long a request body may take to arrive in full (`408 request_timeout` after).
    pub body_read_timeout: Duration,
    /// Bytes of large request bodies (over 64 KiB) handled at once; more wait
    /// (`api::extract::body_budget`). At least the largest body a route takes.
    pub body_memory: u64,
    /// How many account replicas the task store keeps open, for how long, and how much task
    /// history they keep ([`store`]). `main` sizes the pool from the open-file limit
    /// ([`files::replica_budget`]).
    pub replicas: store::Settings,
    /// Connections each node keeps to PostgreSQL (`--database-pool`).
    pub pool_size: usize,
    /// How long a node's claim on an idempotency key holds if it dies (`--claim-lease`).
    pub claim_lease: Duration,
    /// On PostgreSQL: concurrent single creates (and updates) of one account join one batch
    /// (`--coalesce-requests`, [`protocol::coalesce`]). SQLite's writer threads group-commit
    /// without it.
    pub coalesce_requests: bool,
    /// With coalescing: most batches of one account (and kind) running at once on a node.
    pub coalesce_batches: usize,
    /// The key that seals the accounts' Taskwarrior secrets (`--taskwarrior-key-file`);
    /// Taskwarrior sync is off without it.
    pub taskwarrior_key: Option<String>,
    /// Bounds on held `GET /v1/changes?wait=` requests ([`feed`]).
    pub held_changes: feed::Limits,
}

/// Batches of one account's coalesced requests in flight at once on a node, by default.
pub const DEFAULT_COALESCE_BATCHES: u16 = 1;

impl Config {
    /// The embedded default: SQLite files in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Config {
        Config::with_database(storage::Database::Sqlite(data_dir.into()))
    }

    pub fn with_database(database: storage::Database) -> Config {
        Config {
            database,
            reaper_interval: Duration::from_secs(60),
            idempotency_window: window::Setting::Auto {
                min: window::Setting::DEFAULT_MIN,
                max: window::Setting::DEFAULT_MAX,
            },
            auth_failures_per_minute: 20,
            body_read_timeout: Duration::from_secs(60),
            body_memory: api::SYNC_BODY_LIMIT as u64,
            replicas: store::Settings::default(),
            pool_size: 16,
            claim_lease: pg::alloc::LEASE,
            coalesce_requests: true,
            coalesce_batches: usize::from(DEFAULT_COALESCE_BATCHES),
            taskwarrior_key: None,
            held_changes: feed::Limits::default(),
        }
    }

    /// The allocation database's file, on SQLite.
    pub fn db_path(&self) -> Option<PathBuf> {
        self.database.data_dir().map(|d| d.join(datadir::DB_FILE))
    }
}

pub struct Inner {
    /// The allocation store (accounts, counters, slots, keys, change feed).
    pub alloc: Arc<dyn storage::AllocStore>,
    /// The task store (TaskChampion's model per account).
    pub tasks: Arc<dyn storage::TaskStore>,
    /// The SQLite allocation database, when that is the backend (tests look inside it).
    pub sqlite: Option<db::Db>,
    pub config: Config,
    metrics: metrics::Metrics,
    /// The queues that coalesce single requests into batches, when in use (PostgreSQL).
    coalesce: Option<protocol::Coalescers>,
    tokens: api::auth::TokenCache,
    /// Member removals seen here, on other nodes or by the admin CLI ([`api::auth`]).
    pub revocations: Arc<api::auth::Revocations>,
    /// Held `GET /v1/changes?wait=` requests and what wakes them ([`feed`]).
    pub feed: Arc<feed::Feed>,
    /// The accounts whose change is being announced to other nodes (PostgreSQL).
    announcing: feed::Announcing,
    auth_failures: throttle::FailureLimit,
    cursors: cursor::CursorKey,
    body_budget: tokio::sync::Semaphore,
    body_budget_kib: u32,
    /// The idempotency window in force (the reaper derives it each pass and stores it in the
    /// allocation database, [`db::window`]).
    window: std::sync::Mutex<window::Window>,
    /// The order of key writes onto tasks ([`protocol::keys`]).
    key_writes: protocol::keys::KeyWrites,
    /// Taskwarrior sync ([`taskwarrior`]): on SQLite with a server key.
    pub taskwarrior: Option<Arc<taskwarrior::Taskwarrior>>,
}

/// Shared server state. Cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot create data dir {0}: {1}")]
    DataDir(PathBuf, std::io::Error),
    #[error(transparent)]
    Db(#[from] db::DbError),
    #[error(transparent)]
    Refused(#[from] datadir::DataDirError),
    #[error("cannot start the task store: {0}")]
    Store(std::io::Error),
    #[error("cannot start the WAL checkpoint thread: {0}")]
    Checkpointer(std::io::Error),
    #[error("cannot open the database {0}: {1}")]
    Database(String, db::DbError),
    #[error("Taskwarrior sync: {0}")]
    Taskwarrior(String),
}

impl AppState {
    /// Opens the database the config names and starts what serves it. On SQLite: the
    /// allocation database (migrating it; refusing a data dir whose allocation database does
    /// not know its replicas, see [`datadir`]) and the task store worker.
    pub async fn open(config: Config) -> Result<AppState, StartError> {
        let mut metrics = metrics::Metrics::default();
        let mut pg_pool = None;
        let (alloc, tasks, sqlite): (Arc<dyn storage::AllocStore>, Arc<dyn storage::TaskStore>, _) =
            match &config.database {
                storage::Database::Sqlite(dir) => {
                    datadir::create_private_dir(dir)
                        .map_err(|e| StartError::DataDir(dir.clone(), e))?;
                    let checkpointer =
                        wal::Checkpointer::start().map_err(StartError::Checkpointer)?;
                    let db = datadir::open_allocation_db(dir, Some(checkpointer.clone()))?;
                    let instance = db.read_blocking(db::meta::instance_id)?;
                    let store = store::TaskStore::start(
                        dir.clone(),
                        instance,
                        checkpointer,
                        config.replicas,
                    )
                    .map_err(StartError::Store)?;
                    metrics.register_group_commits(
                        "alloc_db",
                        "allocation database",
                        db.group_commits(),
                    );
                    metrics.register_group_commits(
                        "task_store",
                        "task store",
                        store.group_commits(),
                    );
                    metrics.register_replicas(store.replica_stats());
                    (
                        Arc::new(db::backend::SqliteAlloc::new(db.clone())),
                        Arc::new(store),
                        Some(db),
                    )
                }
                storage::Database::Postgres(url) => {
                    let (alloc, tasks) = pg::open(url, config.pool_size, config.claim_lease)
                        .await
                        .map_err(|e| StartError::Database(config.database.to_string(), e))?;
                    pg_pool = Some(tasks.pool().clone());
                    (Arc::new(alloc), Arc::new(tasks), None)
                }
            };
        let cursors = cursor::CursorKey::new(alloc.cursor_key().await?);
        let body_budget_kib = u32::try_from(
            config
                .body_memory
                .max(api::SYNC_BODY_LIMIT as u64)
                .div_ceil(1024),
        )
        .unwrap_or(u32::MAX);
        let window = match config.idempotency_window {
            window::Setting::Fixed(d) => window::Window::fixed(d),
            setting @ window::Setting::Auto { .. } => {
                let stored = alloc.window_in_force().await?;
                window::Window {
                    ms: stored.map_or(setting.initial().as_millis() as i64, |(ms, _)| ms),
                    basis: stored.map_or(window::Basis::Min, |(_, b)| b),
                    p99_ms: None,
                    late_ms: None,
                }
            }
        };
        metrics.window(&window);
        let taskwarrior = match &config.taskwarrior_key {
            None => None,
            Some(key) => {
                let key = taskwarrior::envelope::ServerKey::parse(key)
                    .map_err(|e| StartError::Taskwarrior(e.to_string()))?;
                Some(Arc::new(taskwarrior::open(
                    &config.database,
                    pg_pool,
                    Some(key),
                )?))
            }
        };
        let feed = Arc::new(feed::Feed::new(config.held_changes));
        let revocations = match &config.database {
            storage::Database::Sqlite(dir) => Arc::new(api::auth::Revocations::watching(dir)),
            storage::Database::Postgres(url) => {
                let revs = Arc::new(api::auth::Revocations::default());
                let (heard, woken) = (revs.clone(), feed.clone());
                let channels = &[pg::listen::MEMBERS, pg::listen::FEED];
                pg::listen::spawn(url.clone(), channels, move |h| match h {
                    pg::listen::Heard::Listening => {
                        heard.bump();
                        woken.changed_everywhere();
                    }
                    pg::listen::Heard::Notify { channel, payload } => {
                        if channel == pg::listen::FEED {
                            if let Ok(account) = payload.parse() {
                                woken.changed(account);
                            }
                        } else {
                            heard.bump();
                        }
                    }
                });
                revs
            }
        };
        let coalesce = (config.coalesce_requests && alloc.wants_coalescing())
            .then(|| protocol::Coalescers::new(config.coalesce_batches));
        Ok(AppState(Arc::new(Inner {
            alloc,
            coalesce,
            tasks,
            sqlite,
            metrics,
            tokens: api::auth::TokenCache::default(),
            revocations,
            feed,
            announcing: feed::Announcing::default(),
            auth_failures: throttle::FailureLimit::new(config.auth_failures_per_minute),
            cursors,
            body_budget: tokio::sync::Semaphore::new(body_budget_kib as usize),
            body_budget_kib,
            window: std::sync::Mutex::new(window),
            key_writes: protocol::keys::KeyWrites::default(),
            taskwarrior,
            config,
        })))
    }

    /// A change committed in `account`: wakes its held change requests here and, through the
    /// store, on every other node (PostgreSQL's `NOTIFY`).
    pub async fn feed_changed(&self, account: db::AccountId) {
        self.feed.changed(account);
        if self.config.database.data_dir().is_some() || !self.announcing.begin(account) {
            return;
        }
        // Off the request path: the commit is done; other nodes hear of it shortly. Commits
        // while this one is on the way are announced by one more after it.
        let state = self.clone();
        tokio::spawn(async move {
            loop {
                if let Err(e) = state.alloc.announce_change(account).await {
                    tracing::debug!(error = %e, account, "announcing a change to other nodes failed");
                }
                if !state.announcing.sent(account) {
                    break;
                }
            }
        });
    }

    /// The idempotency window in force.
    pub fn window(&self) -> window::Window {
        *self.window.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the window in force; says so in one log line when it changes.
    fn set_window(&self, w: window::Window) {
        let mut cur = self.window.lock().unwrap_or_else(|p| p.into_inner());
        if (cur.ms, cur.basis) != (w.ms, w.basis) {
            tracing::info!("idempotency window: {w}");
        }
        *cur = w;
    }
}
