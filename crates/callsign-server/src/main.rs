//! `callsign-server`: parses the command line (DESIGN.md section 5) and runs the server.
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use callsign_core::{MemberName, Prefix, Role};
use callsign_server::db::{now_ms, AddMember, RemoveMember};
use callsign_server::storage::{AllocStore, Database, Renamed};
use callsign_server::taskwarrior;
use callsign_server::taskwarrior::envelope::ServerKey;
use callsign_server::{files, reaper, router, serve, store, window, AppState, Config};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "callsign-server",
    version,
    about = "Callsign sync server: tasks with keys like SYN-42"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve the HTTP API.
    Serve {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long, default_value = "127.0.0.1:8750")]
        listen: SocketAddr,
        /// How often the reaper settles slots left pending by a crash (e.g. 60s, 500ms).
        #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
        reaper_interval: Duration,
        /// How long a pending slot whose task never reached the store waits for a retry:
        /// `auto` derives it from the retries the server observes (p99 and late retries, ×2,
        /// clamped by the two flags below); a duration (e.g. 24h) fixes it.
        #[arg(long, default_value = "auto", value_parser = parse_window)]
        idempotency_window: WindowArg,
        /// With `--idempotency-window auto`: never shorter than this.
        #[arg(long, default_value = "24h", value_parser = humantime::parse_duration)]
        idempotency_window_min: Duration,
        /// With `--idempotency-window auto`: never longer than this (also how far back the
        /// evidence reaches).
        #[arg(long, default_value = "7d", value_parser = humantime::parse_duration)]
        idempotency_window_max: Duration,
        /// Failed authentications one client address may make a minute; past that, `429`.
        #[arg(long, default_value_t = 20)]
        auth_failures_per_minute: u32,
        /// Most connections open at once; more wait to be accepted. Keep it well below the
        /// open-file limit (`ulimit -n`).
        #[arg(long, default_value_t = 512)]
        max_connections: usize,
        /// How long a request's line and headers may take to arrive, counted from when the
        /// server starts waiting for them; the connection is closed after that.
        #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
        header_read_timeout: Duration,
        /// How long a request body may take to arrive in full; `408` after that.
        #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
        body_read_timeout: Duration,
        /// Bytes of large request bodies (over 64 KiB) handled at once, in MiB; more wait their
        /// turn. At least 32 (one full `/v1/sync` batch).
        #[arg(long, default_value_t = 32)]
        body_memory_mib: u64,
        /// How long a connection with no request in flight and no bytes moving stays open.
        #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
        idle_timeout: Duration,
        /// Most account replicas (TaskChampion databases) open at once; the least recently
        /// used is closed to make room. Lowered at start to what fits in the open-file limit
        /// beside --max-connections (5 descriptors a replica).
        #[arg(long, default_value_t = 256)]
        max_open_replicas: usize,
        /// Close a replica unused for this long (0s: only to make room).
        #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
        replica_idle_close: Duration,
        /// How long each account's task history (its TaskChampion operations log) is kept;
        /// older operations are trimmed while its replica is open. Tasks are never trimmed.
        #[arg(long, default_value = "90d", value_parser = humantime::parse_duration)]
        history_retention: Duration,
        /// Connections this node keeps to PostgreSQL (with --database postgres://…).
        #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(2..))]
        database_pool: u16,
        /// With PostgreSQL: how long a node's claim on an idempotency key holds if the node
        /// dies mid-request (a retry of that key answers 409 until then).
        #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
        claim_lease: Duration,
        /// With PostgreSQL: concurrent single creates (PUT) and updates (PATCH) of one account
        /// on this node run together as one batch, a few transactions for all of them instead
        /// of several each (`true` or `false`). SQLite group-commits without it.
        #[arg(long, env = "CALLSIGN_COALESCE_REQUESTS", default_value_t = true, action = clap::ArgAction::Set)]
        coalesce_requests: bool,
        /// With --coalesce-requests: most batches of one account's creates (or updates) running
        /// at once on this node.
        #[arg(long, env = "CALLSIGN_COALESCE_BATCHES", default_value_t = callsign_server::DEFAULT_COALESCE_BATCHES,
              value_parser = clap::value_parser!(u16).range(1..=8))]
        coalesce_batches: u16,
        /// The server key (64 hex digits) that seals each account's Taskwarrior secret;
        /// Taskwarrior sync (`/v1/client/...`) is off without it (docs/TASKWARRIOR.md).
        #[arg(long, env = "CALLSIGN_TASKWARRIOR_KEY_FILE")]
        taskwarrior_key_file: Option<std::path::PathBuf>,
        /// Most `GET /v1/changes?wait=` requests held at once; more get `429`. Never more than
        /// half of --max-connections, since each holds its connection.
        #[arg(long, default_value_t = 10_000)]
        max_held_changes: usize,
        /// Most of them for one account.
        #[arg(long, default_value_t = 200)]
        max_held_changes_per_account: usize,
    },
    /// Manage accounts.
    Account {
        #[command(subcommand)]
        cmd: AccountCmd,
    },
    /// Manage a team's members (each with their own tokens).
    Member {
        #[command(subcommand)]
        cmd: MemberCmd,
    },
    /// Manage device tokens.
    Token {
        #[command(subcommand)]
        cmd: TokenCmd,
    },
    /// Manage projects.
    Project {
        #[command(subcommand)]
        cmd: ProjectCmd,
    },
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell) to stdout.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Subcommand)]
enum ProjectCmd {
    /// Rename a project's prefix (SYN-42 becomes SYX-42; every old key still finds its task);
    /// prints the project as JSON. A running server writes the new keys onto the tasks within
    /// a reaper interval.
    Rename {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
        /// The project's prefix now.
        #[arg(long)]
        from: String,
        /// Its new prefix (2-10 characters, a letter first), never one a project of the
        /// account has or had (but its own earlier ones).
        #[arg(long)]
        to: String,
    },
}

#[derive(Subcommand)]
enum AccountCmd {
    /// Create an account (a team) with its first project and its first member, an owner,
    /// and a token of theirs; prints JSON.
    Create {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        name: String,
        /// The first project's key prefix (2-10 characters, a letter first).
        #[arg(long)]
        prefix: String,
        /// The first project's name (default: the prefix).
        #[arg(long)]
        project_name: Option<String>,
        /// The first member's name (an owner).
        #[arg(long, default_value = "owner", value_parser = parse_member)]
        owner: MemberName,
    },
    /// Link an account to Taskwarrior 3: makes a new TaskChampion client id and encryption
    /// secret and prints them once as JSON (a new link replaces the old one). The secret is
    /// kept sealed under the server key, made in --taskwarrior-key-file if that file does not
    /// exist yet. Works while the server runs.
    Taskwarrior {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
        #[arg(long, env = "CALLSIGN_TASKWARRIOR_KEY_FILE")]
        taskwarrior_key_file: std::path::PathBuf,
    },
}

#[derive(Subcommand)]
enum TokenCmd {
    /// Create another token for a member's device; prints JSON `{token}`.
    Create {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
        #[arg(long)]
        device: String,
        /// Whose token (default: the account's first owner).
        #[arg(long, value_parser = parse_member)]
        member: Option<MemberName>,
    },
}

#[derive(Subcommand)]
enum MemberCmd {
    /// Add a member with a first token; prints JSON `{member_id, name, role, token}`.
    Add {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
        /// Their handle (1-32 characters, a letter first; `@name` in captures).
        #[arg(long, value_parser = parse_member)]
        name: MemberName,
        #[arg(long, value_enum, default_value_t = RoleArg::Member)]
        role: RoleArg,
        /// The device the first token is for.
        #[arg(long, default_value = "default")]
        device: String,
    },
    /// List the members, current ones first; prints JSON.
    List {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
    },
    /// Remove a member: their tokens stop working from their next request on, also while the
    /// server runs; the tasks they made stay and still name them.
    Remove {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
        #[arg(long, value_parser = parse_member)]
        name: MemberName,
    },
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum RoleArg {
    Owner,
    Member,
}

impl From<RoleArg> for Role {
    fn from(r: RoleArg) -> Role {
        match r {
            RoleArg::Owner => Role::Owner,
            RoleArg::Member => Role::Member,
        }
    }
}

fn parse_member(s: &str) -> Result<MemberName, String> {
    MemberName::parse(s.trim().trim_start_matches('@')).map_err(|e| e.to_string())
}

/// `--idempotency-window`: `auto` or a duration.
#[derive(Clone, Copy, Debug)]
struct WindowArg(Option<Duration>);

fn parse_window(s: &str) -> Result<WindowArg, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(WindowArg(None));
    }
    humantime::parse_duration(s)
        .map(|d| WindowArg(Some(d)))
        .map_err(|e| format!("{e}: expected `auto` or a duration such as 24h"))
}

/// Where the data lives: `--database` (or `CALLSIGN_DATABASE_URL`), or `--data-dir` for the
/// embedded SQLite default.
#[derive(Args, Clone, Debug)]
struct DatabaseArg {
    /// The embedded SQLite database's directory (the same as `--database sqlite:DIR`).
    #[arg(long, env = "CALLSIGN_SERVER_DATA_DIR", conflicts_with = "database")]
    data_dir: Option<PathBuf>,
    /// `sqlite:<data-dir>` or `postgres://user@host:port/db`.
    #[arg(long, env = "CALLSIGN_DATABASE_URL", value_parser = Database::parse)]
    database: Option<Database>,
}

impl DatabaseArg {
    fn get(self) -> anyhow::Result<Database> {
        match (self.database, self.data_dir) {
            (Some(d), _) => Ok(d),
            (None, Some(dir)) => Ok(Database::Sqlite(dir)),
            (None, None) => bail!(
                "say where the data lives: --data-dir DIR (embedded SQLite) or --database \
                 postgres://user@host:port/db"
            ),
        }
    }
}

/// The allocation store alone, for the admin commands.
async fn open_alloc(database: &Database) -> anyhow::Result<Box<dyn AllocStore>> {
    match database {
        Database::Sqlite(dir) => Ok(Box::new(callsign_server::db::backend::SqliteAlloc::new(
            callsign_server::datadir::open_allocation_db(dir, None)?,
        ))),
        Database::Postgres(url) => {
            let pool = callsign_server::pg::pool(url, 2)?;
            callsign_server::pg::migrate(&pool).await?;
            Ok(Box::new(callsign_server::pg::alloc::PgAlloc::new(
                pool,
                callsign_server::pg::alloc::LEASE,
            )))
        }
    }
}

/// The account's first current owner (by name), whom `token create` gives a token by default.
async fn first_owner(alloc: &dyn AllocStore, account: i64) -> anyhow::Result<MemberName> {
    let members = alloc
        .list_members(account)
        .await?
        .with_context(|| format!("no account {account}"))?;
    members
        .into_iter()
        .find(|m| m.role == Role::Owner && m.removed_at.is_none())
        .map(|m| m.name)
        .with_context(|| format!("account {account} has no owner"))
}

async fn member_cmd(cmd: MemberCmd) -> anyhow::Result<()> {
    match cmd {
        MemberCmd::Add {
            database,
            account,
            name,
            role,
            device,
        } => {
            let alloc = open_alloc(&database.get()?).await?;
            match alloc
                .add_member(account, &name, role.into(), &device)
                .await?
            {
                AddMember::Added(made) => println!("{}", serde_json::to_string(&made)?),
                AddMember::NoAccount => bail!("no account {account}"),
                AddMember::Taken => bail!(
                    "account {account} has or had a member {name} (a removed member's name \
                     still names the tasks they made): choose another name"
                ),
            }
        }
        MemberCmd::List { database, account } => {
            let alloc = open_alloc(&database.get()?).await?;
            let members = alloc
                .list_members(account)
                .await?
                .with_context(|| format!("no account {account}"))?;
            println!("{}", serde_json::json!({ "members": members }));
        }
        MemberCmd::Remove {
            database,
            account,
            name,
        } => {
            let database = database.get()?;
            let alloc = open_alloc(&database).await?;
            match alloc.remove_member(account, &name, now_ms()).await? {
                RemoveMember::Removed { tokens } => {
                    // A server running on this data dir stops taking their cached tokens now;
                    // on PostgreSQL every node heard the removal's NOTIFY.
                    if let Some(dir) = database.data_dir() {
                        callsign_server::api::auth::mark_revoked(dir)
                            .with_context(|| format!("telling the server in {}", dir.display()))?;
                    }
                    println!(
                        "{}",
                        serde_json::json!({ "removed": name, "tokens": tokens })
                    );
                }
                RemoveMember::NotFound => bail!("account {account} has no member {name}"),
                RemoveMember::LastOwner => bail!(
                    "{name} is the only owner of account {account}: add another owner first \
                     (member add --role owner)"
                ),
            }
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().cmd {
        Cmd::Completions { shell } => {
            use clap::CommandFactory;
            use std::io::Write;
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "callsign-server", &mut script);
            // A closed pipe (`| head`) is not an error worth a message.
            let _ = std::io::stdout().write_all(&script);
        }
        Cmd::Serve {
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
            idle_timeout,
            body_memory_mib,
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
        } => {
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
            let replicas = store::Settings {
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
        }
        Cmd::Account {
            cmd:
                AccountCmd::Create {
                    database,
                    name,
                    prefix,
                    project_name,
                    owner,
                },
        } => {
            let prefix = Prefix::parse(prefix.trim())?;
            if prefix.is_local() {
                bail!("{}", callsign_server::api::projects::RESERVED);
            }
            let project_name = project_name.unwrap_or_else(|| prefix.to_string());
            let alloc = open_alloc(&database.get()?).await?;
            let made = alloc
                .create_account(&name, &prefix, &project_name, &owner)
                .await?;
            println!("{}", serde_json::to_string(&made)?);
        }
        Cmd::Account {
            cmd:
                AccountCmd::Taskwarrior {
                    database,
                    account,
                    taskwarrior_key_file,
                },
        } => {
            let database = database.get()?;
            let alloc = open_alloc(&database).await?;
            if !alloc.account_ids().await?.contains(&account) {
                bail!("no account {account}");
            }
            if !taskwarrior_key_file.exists() {
                write_key_file(&taskwarrior_key_file)?;
                eprintln!(
                    "made a new server key in {} (start the server with \
                     --taskwarrior-key-file {0}; keep a copy: without it no linked \
                     Taskwarrior can sync)",
                    taskwarrior_key_file.display()
                );
            }
            let key = ServerKey::parse(&read_key_file(&taskwarrior_key_file)?)
                .with_context(|| taskwarrior_key_file.display().to_string())?;
            let pool = match &database {
                Database::Postgres(url) => Some(callsign_server::pg::pool(url, 2)?),
                Database::Sqlite(_) => None,
            };
            let tw = taskwarrior::open(&database, pool, Some(key))?;
            let made = tw.link(account).await?;
            println!("{}", serde_json::to_string(&made)?);
            eprintln!(
                "In Taskwarrior 3 (shown once; docs/TASKWARRIOR.md):\n  \
                 task config sync.server.url http://HOST:PORT\n  \
                 task config sync.server.client_id {}\n  \
                 task config sync.encryption_secret {}",
                made.client_id, made.encryption_secret
            );
        }
        Cmd::Token {
            cmd:
                TokenCmd::Create {
                    database,
                    account,
                    device,
                    member,
                },
        } => {
            let alloc = open_alloc(&database.get()?).await?;
            let member = match member {
                Some(m) => m,
                None => first_owner(&*alloc, account).await?,
            };
            let token = alloc.create_token(account, &member, &device).await?;
            match token {
                Some(token) => println!("{}", serde_json::json!({ "token": token })),
                None => bail!("account {account} has no member {member}"),
            }
        }
        Cmd::Member { cmd } => member_cmd(cmd).await?,
        Cmd::Project {
            cmd:
                ProjectCmd::Rename {
                    database,
                    account,
                    from,
                    to,
                },
        } => {
            let from = Prefix::parse(from.trim()).context("--from")?;
            let to = Prefix::parse(to.trim()).context("--to")?;
            if to.is_local() {
                bail!("{}", callsign_server::api::projects::RESERVED);
            }
            let alloc = open_alloc(&database.get()?).await?;
            let now = callsign_server::db::now_ms();
            match alloc
                .update_project(account, &from, Some(&to), None, now)
                .await?
            {
                Renamed::Done { project, .. } => println!("{}", serde_json::to_string(&project)?),
                Renamed::NotFound(Some(now)) => {
                    bail!("{from} was renamed: the project is {now} now")
                }
                Renamed::NotFound(None) => bail!("account {account} has no project {from}"),
                Renamed::Taken(owner) if owner == to.as_str() => {
                    bail!("account {account} already has a project {to}")
                }
                Renamed::Taken(owner) => bail!(
                    "{to} was the prefix of project {owner} before a rename: its old keys still \
                     name that project's tasks"
                ),
            }
        }
    }
    Ok(())
}

/// The server key in `path` (its text; checked when the server opens it).
fn read_key_file(path: &std::path::Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| {
        format!(
            "reading the Taskwarrior server key {} (`callsign-server account taskwarrior` \
             makes one)",
            path.display()
        )
    })
}

/// Writes a new server key to `path`, readable by its owner only, never over an existing file.
fn write_key_file(path: &std::path::Path) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    writeln!(f, "{}", ServerKey::generate()?)?;
    f.sync_all()?;
    Ok(())
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
    callsign_server::datadir::create_private_dir(data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let path = data_dir.join("server.lock");
    let mut open = std::fs::OpenOptions::new();
    open.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
    let file = open
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("making {} private", path.display()))?;
    }
    if file.try_lock().is_err() {
        bail!(
            "another callsign-server is already serving {}",
            data_dir.display()
        );
    }
    Ok(file)
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
