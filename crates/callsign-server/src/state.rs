//! The server's shared state ([`AppState`]) and settings ([`Config`]), and the one place that
//! picks a storage backend ([`AppState::open`], and [`open_alloc`] / [`open_taskwarrior`] for
//! the admin commands).
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use callsign_storage::{window, AccountId, Database};

use crate::{cursor, feed, metrics, protocol, taskwarrior, throttle, tokens};
use callsign_storage_postgres as pg;
use callsign_storage_sqlite as sqlite;

/// Body limit of single requests (a task's notes may be 64 KiB).
pub const BODY_LIMIT: usize = 1024 * 1024;
/// Body limit of `POST /v1/sync` (1000 mutations).
pub const SYNC_BODY_LIMIT: usize = 32 * 1024 * 1024;

/// Server settings, from the command line.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the data lives (`--database`).
    pub database: Database,
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
    /// history they keep (SQLite's task store, `callsign_storage_sqlite::tasks`). `main` sizes
    /// the pool from the open-file limit (`callsign_storage_sqlite::files::replica_budget`).
    pub replicas: sqlite::tasks::Settings,
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
    /// How long a recovery after a rollback waits, and for which devices.
    pub recovery: crate::checkins::Settings,
}

/// Batches of one account's coalesced requests in flight at once on a node, by default.
pub const DEFAULT_COALESCE_BATCHES: u16 = 1;

impl Config {
    /// The embedded default: SQLite files in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Config {
        Config::with_database(Database::Sqlite(data_dir.into()))
    }

    pub fn with_database(database: Database) -> Config {
        Config {
            database,
            reaper_interval: Duration::from_secs(60),
            idempotency_window: window::Setting::Auto {
                min: window::Setting::DEFAULT_MIN,
                max: window::Setting::DEFAULT_MAX,
            },
            auth_failures_per_minute: 20,
            body_read_timeout: Duration::from_secs(60),
            body_memory: SYNC_BODY_LIMIT as u64,
            replicas: sqlite::tasks::Settings::default(),
            pool_size: 16,
            claim_lease: pg::alloc::LEASE,
            coalesce_requests: true,
            coalesce_batches: usize::from(DEFAULT_COALESCE_BATCHES),
            taskwarrior_key: None,
            held_changes: feed::Limits::default(),
            recovery: crate::checkins::Settings::default(),
        }
    }

    /// The allocation database's file, on SQLite.
    pub fn db_path(&self) -> Option<PathBuf> {
        self.database
            .data_dir()
            .map(|d| d.join(sqlite::datadir::DB_FILE))
    }
}

pub struct Inner {
    /// The allocation store (accounts, counters, slots, keys, change feed).
    pub alloc: Arc<dyn callsign_storage::AllocStore>,
    /// The task store (TaskChampion's model per account).
    pub tasks: Arc<dyn callsign_storage::TaskStore>,
    /// The SQLite allocation database, when that is the backend (tests look inside it).
    pub sqlite: Option<sqlite::alloc::Db>,
    pub config: Config,
    pub(crate) metrics: metrics::Metrics,
    /// The queues that coalesce single requests into batches, when in use (PostgreSQL).
    pub(crate) coalesce: Option<protocol::Coalescers>,
    pub(crate) tokens: tokens::TokenCache,
    /// Member removals seen here, on other nodes or by the admin CLI ([`crate::api::auth`]).
    pub revocations: Arc<tokens::Revocations>,
    /// Held `GET /v1/changes?wait=` requests and what wakes them ([`feed`]).
    pub feed: Arc<feed::Feed>,
    /// The accounts whose change is being announced to other nodes (PostgreSQL).
    pub(crate) announcing: feed::Announcing,
    pub(crate) auth_failures: throttle::FailureLimit,
    pub(crate) cursors: cursor::CursorKey,
    pub(crate) body_budget: tokio::sync::Semaphore,
    pub(crate) body_budget_kib: u32,
    /// The idempotency window in force (the reaper derives it each pass and stores it in the
    /// allocation database).
    pub(crate) window: std::sync::Mutex<window::Window>,
    /// The order of key writes onto tasks ([`protocol::keys`]).
    pub(crate) key_writes: protocol::keys::KeyWrites,
    /// Taskwarrior sync ([`taskwarrior`]): on SQLite with a server key.
    pub taskwarrior: Option<Arc<taskwarrior::Taskwarrior>>,
    /// Devices' check-ins and the rollback notice ([`crate::checkins`]).
    pub checkins: crate::checkins::Checkins,
}

/// The allocation store alone, for the admin commands (migrated, no worker threads).
pub async fn open_alloc(
    database: &Database,
) -> Result<Arc<dyn callsign_storage::AllocStore>, StartError> {
    let failed = |e: callsign_storage::Error| StartError::Database(database.to_string(), e);
    Ok(match database {
        Database::Sqlite(dir) => Arc::new(sqlite::alloc::backend::SqliteAlloc::new(
            sqlite::datadir::open_allocation_db(dir, None).map_err(sqlite::OpenError::from)?,
        )),
        Database::Postgres(url) => {
            let pool = pg::pool(url, 2).map_err(|e| failed(e.into()))?;
            pg::migrate(&pool).await.map_err(|e| failed(e.into()))?;
            Arc::new(pg::alloc::PgAlloc::new(pool, pg::alloc::LEASE))
        }
    })
}

/// Taskwarrior's side of the server on `database` with the server `key`, for the admin
/// commands (`account taskwarrior`), beside a running server.
pub async fn open_taskwarrior(
    database: &Database,
    key: taskwarrior::envelope::ServerKey,
) -> Result<taskwarrior::Taskwarrior, StartError> {
    Ok(match database {
        Database::Sqlite(dir) => sqlite_taskwarrior(dir, key)?,
        Database::Postgres(url) => pg_taskwarrior(
            pg::pool(url, 2).map_err(|e| StartError::Database(database.to_string(), e.into()))?,
            key,
        ),
    })
}

/// Taskwarrior's side on the SQLite data dir `dir`.
fn sqlite_taskwarrior(
    dir: &std::path::Path,
    key: taskwarrior::envelope::ServerKey,
) -> Result<taskwarrior::Taskwarrior, StartError> {
    let s = sqlite::taskwarrior::SqliteSync::open(dir)
        .map_err(|e| StartError::Taskwarrior(format!("{e:#}")))?;
    Ok(taskwarrior::Taskwarrior::new(
        Arc::new(s.clone()),
        s,
        Some(key),
    ))
}

/// Taskwarrior's side on a PostgreSQL `pool`.
fn pg_taskwarrior(
    pool: pg::Pool,
    key: taskwarrior::envelope::ServerKey,
) -> taskwarrior::Taskwarrior {
    let s = pg::taskwarrior::PgSync::new(pool);
    taskwarrior::Taskwarrior::new(Arc::new(s.clone()), s, Some(key))
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
    #[error(transparent)]
    DataDir(#[from] sqlite::OpenError),
    #[error(transparent)]
    Storage(#[from] callsign_storage::Error),
    #[error("cannot open the database {0}: {1}")]
    Database(String, callsign_storage::Error),
    #[error("Taskwarrior sync: {0}")]
    Taskwarrior(String),
}

/// The stores of the backend the config names, opened, and what only that backend has.
struct Opened {
    alloc: Arc<dyn callsign_storage::AllocStore>,
    tasks: Arc<dyn callsign_storage::TaskStore>,
    sqlite: Option<sqlite::alloc::Db>,
    taskwarrior: Option<taskwarrior::Taskwarrior>,
}

impl AppState {
    /// Opens the database the config names and starts what serves it. On SQLite: the
    /// allocation database (migrating it; refusing a data dir whose allocation database does
    /// not know its replicas, see [`datadir`]) and the task store worker.
    pub async fn open(config: Config) -> Result<AppState, StartError> {
        let mut metrics = metrics::Metrics::default();
        let key = match &config.taskwarrior_key {
            None => None,
            Some(key) => Some(
                taskwarrior::envelope::ServerKey::parse(key)
                    .map_err(|e| StartError::Taskwarrior(e.to_string()))?,
            ),
        };
        let Opened {
            alloc,
            tasks,
            sqlite,
            taskwarrior,
        } = Self::open_backend(&config, &mut metrics, key).await?;
        let cursors = cursor::CursorKey::new(alloc.cursor_key().await?);
        let body_budget_kib = u32::try_from(
            config
                .body_memory
                .max(SYNC_BODY_LIMIT as u64)
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
        let feed = Arc::new(feed::Feed::new(config.held_changes));
        let revocations = match &config.database {
            Database::Sqlite(dir) => Arc::new(tokens::Revocations::watching(dir)),
            Database::Postgres(url) => {
                let revs = Arc::new(tokens::Revocations::default());
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
            tokens: tokens::TokenCache::default(),
            revocations,
            feed,
            announcing: feed::Announcing::default(),
            auth_failures: throttle::FailureLimit::new(config.auth_failures_per_minute),
            cursors,
            body_budget: tokio::sync::Semaphore::new(body_budget_kib as usize),
            body_budget_kib,
            window: std::sync::Mutex::new(window),
            key_writes: protocol::keys::KeyWrites::default(),
            taskwarrior: taskwarrior.map(Arc::new),
            checkins: crate::checkins::Checkins::default(),
            config,
        })))
    }

    /// The one place that picks a backend: opens the stores `config.database` names (and
    /// Taskwarrior's, with a server `key`), and registers their counters in `metrics`.
    async fn open_backend(
        config: &Config,
        metrics: &mut metrics::Metrics,
        key: Option<taskwarrior::envelope::ServerKey>,
    ) -> Result<Opened, StartError> {
        match &config.database {
            Database::Sqlite(dir) => {
                let opened = sqlite::open(dir, config.replicas)?;
                metrics.register_group_commits(
                    "alloc_db",
                    "allocation database",
                    opened.db.group_commits(),
                );
                metrics.register_group_commits(
                    "task_store",
                    "task store",
                    opened.tasks.group_commits(),
                );
                metrics.register_replicas(opened.tasks.replica_stats());
                let taskwarrior = key.map(|key| sqlite_taskwarrior(dir, key)).transpose()?;
                Ok(Opened {
                    alloc: Arc::new(opened.alloc),
                    tasks: Arc::new(opened.tasks),
                    sqlite: Some(opened.db),
                    taskwarrior,
                })
            }
            Database::Postgres(url) => {
                let (alloc, tasks) = pg::open(url, config.pool_size, config.claim_lease)
                    .await
                    .map_err(|e| StartError::Database(config.database.to_string(), e.into()))?;
                match pg::durability::durability(tasks.pool()).await {
                    Ok(d) if d.survives_failover() => tracing::info!("{}", d.describe()),
                    Ok(d) => tracing::warn!("{}", d.describe()),
                    Err(e) => tracing::warn!(error = %e, "reading the replication settings"),
                }
                let taskwarrior = key.map(|key| pg_taskwarrior(tasks.pool().clone(), key));
                Ok(Opened {
                    alloc: Arc::new(alloc),
                    tasks: Arc::new(tasks),
                    sqlite: None,
                    taskwarrior,
                })
            }
        }
    }

    /// A change committed in `account`: wakes its held change requests here and, through the
    /// store, on every other node (PostgreSQL's `NOTIFY`).
    pub async fn feed_changed(&self, account: AccountId) {
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
    pub(crate) fn set_window(&self, w: window::Window) {
        let mut cur = self.window.lock().unwrap_or_else(|p| p.into_inner());
        if (cur.ms, cur.basis) != (w.ms, w.basis) {
            tracing::info!("idempotency window: {w}");
        }
        *cur = w;
    }
}
