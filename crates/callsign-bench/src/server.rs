//! The real `callsign-server` (release build beside this binary) on 127.0.0.1, on a temp data
//! dir (SQLite) or a fresh schema (PostgreSQL), each node killed on drop; plus the HTTP calls
//! the benchmarks make.
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use callsign_core::dto::{Mutation, MutationOp, NewTask, SyncRequest, SyncResponse};
use uuid::Uuid;

pub const PREFIX: &str = "BEN";

/// `callsign-server` in this binary's profile dir, built there (without test features) if
/// missing.
pub fn server_bin() -> Result<PathBuf> {
    sibling_bin("callsign-server", "callsign-server")
}

/// The `callsign` CLI in this binary's profile dir, built there if missing.
pub fn cli_bin() -> Result<PathBuf> {
    sibling_bin("callsign", "callsign-cli")
}

/// `name` beside this binary, built from `package` in the same profile if missing.
fn sibling_bin(name: &str, package: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().context("executable dir")?;
    let bin = dir.join(name);
    if !bin.exists() {
        let release = dir.ends_with("release");
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.args(["build", "--quiet", "-p", package]);
        if release {
            cmd.arg("--release");
        }
        if !cmd.status()?.success() {
            bail!("cargo build -p {package} failed");
        }
    }
    Ok(bin)
}

/// Which database a benchmark's servers keep their data in.
#[derive(Clone)]
pub enum Backend {
    /// A fresh temp data dir per server (the embedded SQLite).
    Sqlite,
    /// A fresh schema per server on this PostgreSQL.
    Postgres(callsign_pgtest::Server),
}

/// Where one server's data lives.
pub enum Store {
    /// Its data dir, removed on drop.
    Sqlite(tempfile::TempDir),
    /// The URL of its schema (`?options=-c search_path=…`).
    Postgres(String),
}

impl Store {
    fn args(&self) -> Vec<OsString> {
        match self {
            Store::Sqlite(dir) => vec!["--data-dir".into(), dir.path().into()],
            Store::Postgres(url) => vec!["--database".into(), url.into()],
        }
    }
}

/// One `callsign-server serve` process on 127.0.0.1:0, killed on drop.
///
/// It runs under a guard shell that blocks reading a pipe only this process writes to and
/// kills the server when the pipe closes: when the node is dropped, and also when this
/// process ends without dropping it (killed), as the kernel then closes its descriptors.
pub struct Node {
    pub url: String,
    pid: u32,
    guard: Child,
    pipe: Option<ChildStdin>,
}

/// `$@` is the server's command line; its pid is printed first. A background command of a
/// non-interactive shell reads `/dev/null`, so the server never holds the pipe.
const GUARD: &str = r#""$@" & pid=$!
echo "pid $pid"
read -r _
kill -KILL "$pid" 2>/dev/null
wait "$pid""#;

impl Node {
    fn spawn(store: &Store, flags: &[&str]) -> Result<Node> {
        let mut guard = Command::new("sh")
            .args(["-c", GUARD, "sh"])
            .arg(server_bin()?)
            .arg("serve")
            .args(store.args())
            .args(["--listen", "127.0.0.1:0"])
            .args(flags)
            .env("RUST_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = guard.stdout.take().context("stdout")?;
        // From here on `node` stops the server, whichever way this function returns.
        let mut node = Node {
            url: String::new(),
            pid: 0,
            pipe: guard.stdin.take(),
            guard,
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while node.pid == 0 || node.url.is_empty() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = rx
                .recv_timeout(left)
                .map_err(|_| anyhow!("the server did not start within 30 s"))?;
            if let Some(pid) = line.strip_prefix("pid ") {
                node.pid = pid.trim().parse().context("the server's pid")?;
            } else if let Some(url) = line.trim().strip_prefix("callsign-server listening on ") {
                node.url = url.to_owned();
            } else {
                bail!("server did not start: {line:?}");
            }
        }
        Ok(node)
    }

    /// The server's own pid (not the guard's).
    pub fn pid(&self) -> u32 {
        self.pid
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        drop(self.pipe.take());
        let _ = self.guard.wait();
    }
}

/// A fresh database with one account (project `BEN`) and a first node serving it.
pub struct Server {
    pub url: String,
    /// The token of the account's first member, its owner.
    pub token: String,
    account: i64,
    pub store: Store,
    node: Node,
}

impl Server {
    /// On SQLite, served on 127.0.0.1:0.
    pub fn start() -> Result<Server> {
        Server::start_on(&Backend::Sqlite, &[])
    }

    /// As [`Server::start`], with more `serve` flags.
    pub fn start_with(flags: &[&str]) -> Result<Server> {
        Server::start_on(&Backend::Sqlite, flags)
    }

    /// A fresh data dir or schema on `backend`, its account, and one node with `flags`.
    pub fn start_on(backend: &Backend, flags: &[&str]) -> Result<Server> {
        let store = match backend {
            Backend::Sqlite => Store::Sqlite(
                tempfile::Builder::new()
                    .prefix("callsign-bench-")
                    .tempdir()?,
            ),
            Backend::Postgres(pg) => Store::Postgres(pg.fresh_schema_blocking("bench")?),
        };
        let out = Command::new(server_bin()?)
            .args(["account", "create"])
            .args(store.args())
            .args(["--name", "Bench", "--prefix", PREFIX])
            .output()?;
        if !out.status.success() {
            bail!("account create: {}", String::from_utf8_lossy(&out.stderr));
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        let token = v["token"].as_str().context("token")?.to_owned();
        let account = v["account_id"].as_i64().context("account_id")?;
        let node = Node::spawn(&store, flags)?;
        Ok(Server {
            url: node.url.clone(),
            token,
            account,
            store,
            node,
        })
    }

    /// Adds a member (`callsign-server member add`) to the account; their first token.
    pub fn add_member(&self, name: &str) -> Result<String> {
        let out = Command::new(server_bin()?)
            .args(["member", "add"])
            .args(self.store.args())
            .args(["--account", &self.account.to_string(), "--name", name])
            .output()?;
        if !out.status.success() {
            bail!("member add: {}", String::from_utf8_lossy(&out.stderr));
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        Ok(v["token"].as_str().context("token")?.to_owned())
    }

    /// Another node serving the same database (PostgreSQL: nodes are stateless).
    pub fn another_node(&self, flags: &[&str]) -> Result<Node> {
        if let Store::Sqlite(_) = self.store {
            bail!("a SQLite data dir has one node");
        }
        Node::spawn(&self.store, flags)
    }

    pub fn pid(&self) -> u32 {
        self.node.pid()
    }

    /// The SQLite data dir (an error on PostgreSQL).
    pub fn data_dir(&self) -> Result<&Path> {
        match &self.store {
            Store::Sqlite(dir) => Ok(dir.path()),
            Store::Postgres(_) => bail!("a PostgreSQL server has no data dir"),
        }
    }
}

pub fn new_task(description: String) -> NewTask {
    NewTask::new(PREFIX, description)
}

/// One `PUT /v1/tasks/{uuid}` create; the assigned number.
pub async fn put_create(http: &reqwest::Client, s: &Server, description: String) -> Result<u64> {
    let uuid = Uuid::new_v4();
    let resp = http
        .put(format!("{}/v1/tasks/{uuid}", s.url))
        .bearer_auth(&s.token)
        .header("Idempotency-Key", Uuid::new_v4().to_string())
        .json(&new_task(description))
        .send()
        .await?;
    if !resp.status().is_success() {
        bail!("PUT create: {} {}", resp.status(), resp.text().await?);
    }
    let v: serde_json::Value = resp.json().await?;
    v["number"].as_u64().context("number in the answer")
}

/// Creates `n` tasks through `POST /v1/sync` batches of 1000; returns their UUIDs in order.
pub async fn fill(http: &reqwest::Client, s: &Server, n: usize) -> Result<Vec<Uuid>> {
    let mut uuids = Vec::with_capacity(n);
    let mut done = 0;
    while done < n {
        let batch = (n - done).min(1000);
        let mutations: Vec<Mutation> = (0..batch)
            .map(|i| {
                let uuid = Uuid::new_v4();
                uuids.push(uuid);
                Ok(Mutation {
                    idempotency_key: Uuid::new_v4().to_string(),
                    op: MutationOp::Create,
                    uuid,
                    fields: serde_json::to_value(new_task(format!("fill {}", done + i)))?,
                })
            })
            .collect::<Result<_>>()?;
        let resp = http
            .post(format!("{}/v1/sync", s.url))
            .bearer_auth(&s.token)
            .json(&SyncRequest {
                since: None,
                mutations,
            })
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!("sync batch: {} {}", resp.status(), resp.text().await?);
        }
        let answer: SyncResponse = resp.json().await?;
        if let Some(bad) = answer.results.iter().find(|r| r.status >= 300) {
            bail!("a fill mutation failed: {bad:?}");
        }
        done += batch;
    }
    Ok(uuids)
}

/// The current numbers of project `BEN`, read from the server's database.
pub async fn numbers(s: &Server) -> Result<Vec<i64>> {
    numbers_of(s, PREFIX).await
}

/// The current numbers of the project `prefix`, in order, read from the server's database.
pub async fn numbers_of(s: &Server, prefix: &str) -> Result<Vec<i64>> {
    let dir = match &s.store {
        Store::Sqlite(dir) => dir.path(),
        Store::Postgres(url) => return crate::pg::numbers(url, prefix).await,
    };
    let c = rusqlite::Connection::open_with_flags(
        dir.join("callsign.sqlite3"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )?;
    let mut st = c.prepare(
        "SELECT k.number FROM keys k JOIN projects p ON p.id = k.project_id
         WHERE p.prefix = ?1 AND k.current = 1 ORDER BY k.number",
    )?;
    let ns = st
        .query_map([prefix], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(ns)
}
