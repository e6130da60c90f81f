//! `callsign-server serve`: checks the flags, sizes what the machine allows (open files,
//! held requests), opens the database and serves until SIGINT or SIGTERM.
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{bail, Context};
use callsign_server::{reaper, router, serve, AppState, Config};
use callsign_storage::window;
use callsign_storage_sqlite::{files, tasks};
use clap::Args;

use crate::args::{parse_window, DatabaseArg, WindowArg};

/// `serve`: the HTTP API, the reaper and the held change requests on one database.
#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub database: DatabaseArg,
    #[arg(long, default_value = "127.0.0.1:8750")]
    pub listen: SocketAddr,
    /// How often the reaper settles slots left pending by a crash (e.g. 60s, 500ms).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub reaper_interval: Duration,
    /// How long a pending slot whose task never reached the store waits for a retry:
    /// `auto` derives it from the retries the server observes (p99 and late retries, ×2,
    /// clamped by the two flags below); a duration (e.g. 24h) fixes it.
    #[arg(long, default_value = "auto", value_parser = parse_window)]
    pub idempotency_window: WindowArg,
    /// With `--idempotency-window auto`: never shorter than this.
    #[arg(long, default_value = "24h", value_parser = humantime::parse_duration)]
    pub idempotency_window_min: Duration,
    /// With `--idempotency-window auto`: never longer than this (also how far back the
    /// evidence reaches).
    #[arg(long, default_value = "7d", value_parser = humantime::parse_duration)]
    pub idempotency_window_max: Duration,
    /// Failed authentications one client address may make a minute; past that, `429`.
    #[arg(long, default_value_t = 20)]
    pub auth_failures_per_minute: u32,
    /// Most connections open at once; more wait to be accepted. Keep it well below the
    /// open-file limit (`ulimit -n`).
    #[arg(long, default_value_t = 512)]
    pub max_connections: usize,
    /// How long a request's line and headers may take to arrive, counted from when the
    /// server starts waiting for them; the connection is closed after that.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub header_read_timeout: Duration,
    /// How long a request body may take to arrive in full; `408` after that.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub body_read_timeout: Duration,
    /// Bytes of large request bodies (over 64 KiB) handled at once, in MiB; more wait their
    /// turn. At least 32 (one full `/v1/sync` batch).
    #[arg(long, default_value_t = 32)]
    pub body_memory_mib: u64,
    /// How long a connection with no request in flight and no bytes moving stays open.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub idle_timeout: Duration,
    /// Most account replicas (TaskChampion databases) open at once; the least recently
    /// used is closed to make room. Lowered at start to what fits in the open-file limit
    /// beside --max-connections (5 descriptors a replica).
    #[arg(long, default_value_t = 256)]
    pub max_open_replicas: usize,
    /// Close a replica unused for this long (0s: only to make room).
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    pub replica_idle_close: Duration,
    /// How long each account's task history (its TaskChampion operations log) is kept;
    /// older operations are trimmed while its replica is open. Tasks are never trimmed.
    #[arg(long, default_value = "90d", value_parser = humantime::parse_duration)]
    pub history_retention: Duration,
    /// Connections this node keeps to PostgreSQL (with --database postgres://…).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(2..))]
    pub database_pool: u16,
    /// With PostgreSQL: how long a node's claim on an idempotency key holds if the node
    /// dies mid-request (a retry of that key answers 409 until then).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub claim_lease: Duration,
    /// With PostgreSQL: concurrent single creates (PUT) and updates (PATCH) of one account
    /// on this node run together as one batch, a few transactions for all of them instead
    /// of several each (`true` or `false`). SQLite group-commits without it.
    #[arg(long, env = "CALLSIGN_COALESCE_REQUESTS", default_value_t = true, action = clap::ArgAction::Set)]
    pub coalesce_requests: bool,
    /// With --coalesce-requests: most batches of one account's creates (or updates) running
    /// at once on this node.
    #[arg(long, env = "CALLSIGN_COALESCE_BATCHES", default_value_t = callsign_server::DEFAULT_COALESCE_BATCHES,
          value_parser = clap::value_parser!(u16).range(1..=8))]
    pub coalesce_batches: u16,
    /// The server key (64 hex digits) that seals each account's Taskwarrior secret;
    /// Taskwarrior sync (`/v1/client/...`) is off without it (docs/TASKWARRIOR.md).
    #[arg(long, env = "CALLSIGN_TASKWARRIOR_KEY_FILE")]
    pub taskwarrior_key_file: Option<std::path::PathBuf>,
    /// Most `GET /v1/changes?wait=` requests held at once; more get `429`. Never more than
    /// half of --max-connections, since each holds its connection.
    #[arg(long, default_value_t = 10_000)]
    pub max_held_changes: usize,
    /// Most of them for one account.
    #[arg(long, default_value_t = 200)]
    pub max_held_changes_per_account: usize,
    /// After a restore or a declared rollback, end a project's recovery at the latest this
    /// long after it began, even if some devices never checked in (docs/RECOVERY.md).
    #[arg(long, default_value = "72h", value_parser = humantime::parse_duration)]
    pub recovery_grace: Duration,
    /// The devices a recovery waits for: those seen in this period before the backup was
    /// taken.
    #[arg(long, default_value = "30d", value_parser = humantime::parse_duration)]
    pub recovery_active: Duration,
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let ServeArgs {
        database,
        listen,
        reaper_interval,
        idempotency_window,
        idempotency_window_min,
        idempotency_window_max,
        auth_failures_per_minute,
        max_connections,
        header_read_timeout,
        body_read_timeout,
        body_memory_mib,
        idle_timeout,
        max_open_replicas,
        replica_idle_close,
        history_retention,
        database_pool,
        claim_lease,
        coalesce_requests,
        coalesce_batches,
        taskwarrior_key_file,
        max_held_changes,
        max_held_changes_per_account,
        recovery_grace,
        recovery_active,
    } = args;
    if reaper_interval < reaper::MIN_INTERVAL {
        bail!(
            "--reaper-interval must be at least {:?}",
            reaper::MIN_INTERVAL
        );
    }
    if claim_lease < Duration::from_millis(100) {
        bail!("--claim-lease must be at least 100ms");
    }
    if history_retention.is_zero() {
        bail!("--history-retention must be more than 0s");
    }
    if idempotency_window_min > idempotency_window_max {
        bail!("--idempotency-window-min must not exceed --idempotency-window-max");
    }
    let idempotency_window = match idempotency_window.0 {
        Some(d) => window::Setting::Fixed(d),
        None => window::Setting::Auto {
            min: idempotency_window_min,
            max: idempotency_window_max,
        },
    };
    let database = database.get()?;
    // One process per data dir; PostgreSQL takes any number of nodes.
    let _lock = match database.data_dir() {
        Some(dir) => Some(lock_data_dir(dir)?),
        None => None,
    };
    let replicas = tasks::Settings {
        max_open: replica_pool(max_open_replicas, max_connections),
        idle_close: Some(replica_idle_close).filter(|d| !d.is_zero()),
        history_retention: Some(history_retention),
    };
    let config = Config {
        database,
        reaper_interval,
        idempotency_window,
        auth_failures_per_minute,
        body_read_timeout,
        body_memory: body_memory_mib.saturating_mul(1024 * 1024),
        replicas,
        pool_size: usize::from(database_pool),
        claim_lease,
        coalesce_requests,
        coalesce_batches: usize::from(coalesce_batches),
        taskwarrior_key: taskwarrior_key_file
            .map(|f| read_key_file(&f))
            .transpose()?,
        held_changes: held_limits(
            callsign_server::feed::Limits {
                per_account: max_held_changes_per_account,
                total: max_held_changes,
            },
            max_connections,
        ),
        recovery: callsign_server::checkins::Settings {
            grace: recovery_grace,
            active: recovery_active,
        },
    };
    let state = AppState::open(config).await?;
    reaper::spawn(state.clone());
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("binding {listen}"))?;
    let addr = listener.local_addr()?;
    println!("callsign-server listening on http://{addr}");
    use std::io::Write;
    std::io::stdout().flush()?;
    let limits = serve::Limits {
        max_connections,
        header_read_timeout,
        idle_timeout,
    };
    // Held change requests answer at once when the server stops, so it stops promptly.
    let feed = state.feed.clone();
    let stop = async move {
        shutdown().await;
        feed.shut_down();
    };
    serve::serve(listener, router(state), limits, stop).await;
    Ok(())
}

/// The server key in `path` (its text; checked when the server opens it).
pub fn read_key_file(path: &std::path::Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| {
        format!(
            "reading the Taskwarrior server key {} (`callsign-server account taskwarrior` \
             makes one)",
            path.display()
        )
    })
}

/// Raises the open-file soft limit to the hard one and sizes the replica pool from it: at most
/// `wanted`, fewer if the limit leaves no room for them beside the connections. Says what it
/// decided in one log line (a warning when the pool is smaller than asked).
fn replica_pool(wanted: usize, max_connections: usize) -> usize {
    let raised = match files::raise_limit() {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, "could not raise the open-file limit");
            None
        }
    };
    let Some((soft, hard)) = files::limit() else {
        return wanted;
    };
    let pool = files::replica_budget(wanted, soft, max_connections);
    let from = raised.map_or(soft, |(before, _)| before);
    let msg = format!(
        "open files: limit {soft} (soft limit was {from}, hard {hard}); at most {pool} replicas \
         open at once ({} descriptors kept for --max-connections {max_connections} and the \
         server, {} a replica)",
        files::reserved(max_connections),
        files::FILES_PER_REPLICA,
    );
    if pool < wanted {
        tracing::warn!(
            "{msg}: fewer than --max-open-replicas {wanted}; raise the open-file limit \
             (LimitNOFILE=) or lower --max-connections"
        );
    } else {
        tracing::info!("{msg}");
    }
    pool
}

/// The held-request limits within the connections (`Limits::within_connections`), said in
/// the log when that lowers `--max-held-changes`.
fn held_limits(
    asked: callsign_server::feed::Limits,
    max_connections: usize,
) -> callsign_server::feed::Limits {
    let held = asked.within_connections(max_connections);
    if held.total < asked.total {
        tracing::info!(
            "at most {} change requests held at once, not --max-held-changes {}: half of \
             --max-connections {max_connections}, so pushes still find a connection; raise \
             --max-connections (and the open-file limit) for more devices online at once",
            held.total,
            asked.total
        );
    }
    held
}

/// One server per data dir: the in-process idempotency claims (no two phase-2 runs at once for
/// a slot) hold only if no second process serves the same files. The OS releases the lock when
/// the process dies, so a crash never leaves it stale.
fn lock_data_dir(data_dir: &std::path::Path) -> anyhow::Result<std::fs::File> {
    callsign_storage_sqlite::datadir::create_private_dir(data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    Ok(callsign_storage_sqlite::datadir::lock(data_dir)?)
}

async fn shutdown() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return ctrl_c.await.unwrap_or(()),
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
