//! The server processes of a campaign: one `callsign-server` on its SQLite data dir, or several
//! nodes on one PostgreSQL, each on a fixed loopback port (so it can be killed and restarted
//! behind the proxy on the same address). Killing is SIGKILL: no cleanup, like a power cut.
//! Every wait is bounded.
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;

use crate::bins::server_bin;
pub use crate::device::Device;
use crate::taskwarrior::Link;
use crate::view::ServerStore;

/// A free loopback port (free now; the caller binds it soon after).
pub fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

fn run_json(cmd: &mut Command) -> Result<Value> {
    let out = cmd.output().context("running callsign-server")?;
    if !out.status.success() {
        bail!("{:?} failed: {}", cmd, String::from_utf8_lossy(&out.stderr));
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

fn token_of(v: &Value) -> Result<String> {
    Ok(v["token"]
        .as_str()
        .ok_or_else(|| anyhow!("no token in {v}"))?
        .to_owned())
}

/// How a server process ended, as far as a campaign counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Running,
    /// Exited by itself (a `CALLSIGN_CRASH_AT` point aborts).
    Aborted,
}

/// One server process's address and, while it runs, the process.
struct Node {
    port: u16,
    child: Option<Child>,
}

pub struct Server {
    pub store: ServerStore,
    pub reaper_interval: Duration,
    pub window: Duration,
    /// With PostgreSQL, how long a dead node's claim on an idempotency key holds.
    pub claim_lease: Duration,
    /// `--taskwarrior-key-file`, once an account is linked to Taskwarrior.
    taskwarrior_key: Option<PathBuf>,
    nodes: Vec<Node>,
}

impl Server {
    /// Creates an account (prefix `prefix`, first member the owner `owner`) in `store`;
    /// returns the server of `nodes` nodes (none started), the account id and the owner's first
    /// token. SQLite has one node (its data dir is locked by the process serving it).
    pub fn prepare(
        store: ServerStore,
        nodes: usize,
        prefix: &str,
        owner: &str,
    ) -> Result<(Server, i64, String)> {
        if nodes == 0 || (nodes > 1 && matches!(store, ServerStore::Sqlite(_))) {
            bail!("{nodes} nodes: SQLite runs one node, PostgreSQL one or more");
        }
        let nodes = (0..nodes)
            .map(|_| {
                Ok(Node {
                    port: free_port()?,
                    child: None,
                })
            })
            .collect::<Result<_>>()?;
        let server = Server {
            store,
            reaper_interval: Duration::from_millis(500),
            window: Duration::from_secs(3),
            claim_lease: Duration::from_secs(2),
            taskwarrior_key: None,
            nodes,
        };
        let v = run_json(
            Command::new(server_bin())
                .args(["account", "create"])
                .args(server.database_args())
                .args(["--name", "Chaos", "--prefix", prefix, "--owner", owner]),
        )?;
        let id = v["account_id"]
            .as_i64()
            .ok_or_else(|| anyhow!("no account_id in {v}"))?;
        let token = token_of(&v)?;
        Ok((server, id, token))
    }

    /// `--data-dir DIR` or `--database URL`.
    fn database_args(&self) -> Vec<OsString> {
        match &self.store {
            ServerStore::Sqlite(dir) => vec!["--data-dir".into(), dir.into()],
            ServerStore::Postgres(url) => vec!["--database".into(), url.into()],
        }
    }

    /// Another token of `member`'s, for their device `device`.
    pub fn token(&self, account: i64, member: &str, device: &str) -> Result<String> {
        let v = run_json(
            Command::new(server_bin())
                .args(["token", "create"])
                .args(self.database_args())
                .args(["--account", &account.to_string(), "--device", device])
                .args(["--member", member]),
        )?;
        token_of(&v)
    }

    /// Adds `name` to the team as an owner or a member (`member add`); returns the first token
    /// of theirs, for their device `device`.
    pub fn add_member(
        &self,
        account: i64,
        name: &str,
        owner: bool,
        device: &str,
    ) -> Result<String> {
        let role = if owner { "owner" } else { "member" };
        let v = run_json(
            Command::new(server_bin())
                .args(["member", "add"])
                .args(self.database_args())
                .args(["--account", &account.to_string(), "--name", name])
                .args(["--role", role, "--device", device]),
        )?;
        if v["name"].as_str() != Some(name) || v["role"].as_str() != Some(role) {
            bail!("member add answered {v}, not {name} as {role}");
        }
        token_of(&v)
    }

    /// Links `account` to Taskwarrior (`account taskwarrior`, making the server key in
    /// `key_file`); nodes started from now on serve TaskChampion's sync protocol with it.
    pub fn link_taskwarrior(&mut self, account: i64, key_file: &Path) -> Result<Link> {
        let v = run_json(
            Command::new(server_bin())
                .args(["account", "taskwarrior"])
                .args(self.database_args())
                .args(["--account", &account.to_string(), "--taskwarrior-key-file"])
                .arg(key_file),
        )?;
        let client_id = v["client_id"]
            .as_str()
            .and_then(|c| uuid::Uuid::parse_str(c).ok())
            .ok_or_else(|| anyhow!("no client_id in {v}"))?;
        let encryption_secret = v["encryption_secret"]
            .as_str()
            .ok_or_else(|| anyhow!("no encryption_secret in {v}"))?
            .to_owned();
        self.taskwarrior_key = Some(key_file.to_owned());
        Ok(Link {
            client_id,
            encryption_secret,
        })
    }

    /// How many nodes there are.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The first node's URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.nodes[0].port)
    }

    /// Every node's `127.0.0.1:PORT`, in node order.
    pub fn upstreams(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect()
    }

    /// Starts node `node`'s `serve` (optionally armed with `CALLSIGN_CRASH_AT=crash_at`) and
    /// waits, bounded, for its listening line. A port still held by the killed process is
    /// retried briefly.
    pub fn start(&mut self, node: usize, crash_at: Option<&str>) -> Result<()> {
        self.kill(node);
        let mut last = None;
        for _ in 0..50 {
            match self.try_start(node, crash_at) {
                Ok(child) => {
                    self.nodes[node].child = Some(child);
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(last.unwrap_or_else(|| anyhow!("node {node} did not start")))
    }

    fn try_start(&self, node: usize, crash_at: Option<&str>) -> Result<Child> {
        let mut cmd = Command::new(server_bin());
        match crash_at {
            Some(point) => cmd.env("CALLSIGN_CRASH_AT", point),
            None => cmd.env_remove("CALLSIGN_CRASH_AT"),
        };
        cmd.arg("serve")
            .args(self.database_args())
            .args(["--listen", &format!("127.0.0.1:{}", self.nodes[node].port)])
            .arg("--reaper-interval")
            .arg(format!("{}ms", self.reaper_interval.as_millis()))
            .arg("--idempotency-window")
            .arg(format!("{}ms", self.window.as_millis()));
        if let Some(key) = &self.taskwarrior_key {
            cmd.arg("--taskwarrior-key-file").arg(key);
        }
        if matches!(self.store, ServerStore::Postgres(_)) {
            cmd.args(["--database-pool", "4", "--claim-lease"])
                .arg(format!("{}ms", self.claim_lease.as_millis()));
        }
        let mut child = cmd
            .env("RUST_LOG", "error")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("spawning {}", server_bin().display()))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        if !line.starts_with("callsign-server listening on ") {
            let _ = child.kill();
            let _ = child.wait();
            bail!("node {node} did not start: {line:?}");
        }
        Ok(child)
    }

    /// `backup --to DIR`: a consistent copy of the server's data, taken while it runs (or
    /// while it is down after a crash). SQLite only: a PostgreSQL rollback is a failover,
    /// tested on its own (`tests/e2e/failover.rs`).
    pub fn backup(&self, to: &Path) -> Result<Value> {
        self.sqlite_only("backup")?;
        run_json(
            Command::new(server_bin())
                .arg("backup")
                .arg("--to")
                .arg(to)
                .args(self.database_args()),
        )
    }

    /// Stops every node (SIGKILL, like an admin's data dir lost) and puts `from` back with
    /// `restore --from`: the server starts again recovering (nothing started here).
    pub fn restore(&mut self, from: &Path) -> Result<Value> {
        self.sqlite_only("restore")?;
        self.kill_all();
        run_json(
            Command::new(server_bin())
                .arg("restore")
                .arg("--from")
                .arg(from)
                .args(self.database_args()),
        )
    }

    /// `recovery status`: what still recovers, whom it waits for, the lost numbers.
    pub fn recovery_status(&self) -> Result<Value> {
        run_json(
            Command::new(server_bin())
                .args(["recovery", "status"])
                .args(self.database_args()),
        )
    }

    fn sqlite_only(&self, what: &str) -> Result<()> {
        match self.store {
            ServerStore::Sqlite(_) => Ok(()),
            ServerStore::Postgres(_) => {
                bail!("{what}: the campaign restores SQLite data dirs only")
            }
        }
    }

    /// SIGKILLs node `node` (no-op when it is not running).
    pub fn kill(&mut self, node: usize) {
        if let Some(mut c) = self.nodes[node].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn kill_all(&mut self) {
        for node in 0..self.nodes.len() {
            self.kill(node);
        }
    }

    /// Whether node `node` ended by itself since the last look.
    pub fn poll(&mut self, node: usize) -> Ended {
        let n = &mut self.nodes[node];
        let gone = n
            .child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))));
        if gone {
            n.child = None;
            Ended::Aborted
        } else {
            Ended::Running
        }
    }

    pub fn running(&self, node: usize) -> bool {
        self.nodes[node].child.is_some()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill_all();
    }
}
