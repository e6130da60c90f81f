//! Fixtures: the real `callsign-server` binary on 127.0.0.1, and the `callsign` CLI.
//!
//! [`TestServer`] owns a temp data dir and a server process listening on `127.0.0.1:PORT`
//! (port 0, or a port chosen beforehand for "server down, then up" scenarios); it kills the
//! process on drop. Every wait is bounded so a broken build fails instead of hanging.
//!
//! The server's store is the embedded SQLite data dir, or, with
//! `CALLSIGN_E2E_DATABASE=postgres`, a fresh schema on the test PostgreSQL
//! (`callsign_pgtest::shared()`), so every scenario runs unchanged against either backend
//! (the test command runs them on both).
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

pub use crate::cli::{keyed, wait_for, Cli};
use serde_json::Value;

pub use callsign_chaos::bins::{cli_bin, server_bin};

/// A free loopback port (free now; the caller binds it soon after).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local addr").port()
}

/// The account an `account create` made.
#[derive(Debug, Clone)]
pub struct Account {
    pub id: i64,
    pub token: String,
}

pub struct TestServer {
    /// The data dir (SQLite), removed on drop; unused with PostgreSQL.
    _dir: tempfile::TempDir,
    pub url: String,
    /// `--data-dir DIR` or `--database postgres://…`: where this server's data lives.
    store: [String; 2],
    child: Option<Child>,
}

/// The environment variable that picks the backend: `postgres`, or unset/`sqlite`.
pub const DATABASE_ENV: &str = "CALLSIGN_E2E_DATABASE";

/// Where a new server keeps its data: the temp dir, or a fresh schema on the test PostgreSQL.
fn store_for(dir: &std::path::Path, prefix: &str) -> Result<[String; 2]> {
    match std::env::var(DATABASE_ENV).as_deref() {
        Err(_) | Ok("" | "sqlite") => Ok(["--data-dir".into(), dir.display().to_string()]),
        Ok("postgres") => {
            let pg = callsign_pgtest::shared().ok_or_else(|| {
                anyhow!("{DATABASE_ENV}=postgres, but no PostgreSQL could be started")
            })?;
            let url = pg.fresh_schema_blocking(&format!("e2e_{}", prefix.to_lowercase()))?;
            Ok(["--database".into(), url])
        }
        Ok(other) => bail!("{DATABASE_ENV}={other:?}: expected sqlite or postgres"),
    }
}

fn run_json(cmd: &mut Command) -> Result<Value> {
    let out = cmd.output().context("running callsign-server")?;
    if !out.status.success() {
        bail!("{:?} failed: {}", cmd, String::from_utf8_lossy(&out.stderr));
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

impl TestServer {
    /// A data dir with one account (prefix `prefix`); the server is not started yet.
    pub fn prepare(prefix: &str) -> Result<(TestServer, Account)> {
        let dir = tempfile::tempdir()?;
        let store = store_for(dir.path(), prefix)?;
        Self::prepare_in(dir, store, prefix)
    }

    /// As [`Self::prepare`], on the PostgreSQL at `database` (`postgres://…`, e.g. a schema of
    /// a cluster the test started itself), whatever `CALLSIGN_E2E_DATABASE` says.
    pub fn prepare_on(database: &str, prefix: &str) -> Result<(TestServer, Account)> {
        let store = ["--database".into(), database.to_owned()];
        Self::prepare_in(tempfile::tempdir()?, store, prefix)
    }

    fn prepare_in(
        dir: tempfile::TempDir,
        store: [String; 2],
        prefix: &str,
    ) -> Result<(TestServer, Account)> {
        let v = run_json(
            Command::new(server_bin())
                .args(["account", "create"])
                .args(&store)
                .args(["--name", "Test", "--prefix", prefix]),
        )?;
        let account = Account {
            id: v["account_id"]
                .as_i64()
                .ok_or_else(|| anyhow!("no account_id in {v}"))?,
            token: v["token"]
                .as_str()
                .ok_or_else(|| anyhow!("no token in {v}"))?
                .to_owned(),
        };
        let s = TestServer {
            _dir: dir,
            url: String::new(),
            store,
            child: None,
        };
        Ok((s, account))
    }

    /// Prepares an account and starts the server on a free port.
    pub fn start(prefix: &str) -> Result<(TestServer, Account)> {
        let (mut s, a) = Self::prepare(prefix)?;
        s.serve(0)?;
        Ok((s, a))
    }

    /// A second device token for `account`.
    pub fn token(&self, account: &Account, device: &str) -> Result<String> {
        let v = run_json(
            Command::new(server_bin())
                .args(["token", "create"])
                .args(&self.store)
                .args(["--account", &account.id.to_string(), "--device", device]),
        )?;
        Ok(v["token"]
            .as_str()
            .ok_or_else(|| anyhow!("no token in {v}"))?
            .to_owned())
    }

    /// `callsign-server ARGS… --data-dir/--database … --account ID`, which must succeed: its
    /// JSON (an admin's command, e.g. `member remove`, also while the server runs).
    pub fn admin(&self, account: &Account, args: &[&str]) -> Result<Value> {
        run_json(
            Command::new(server_bin())
                .args(args)
                .args(&self.store)
                .args(["--account", &account.id.to_string()]),
        )
    }

    /// `callsign-server ARGS… --data-dir/--database …`, which must succeed: its JSON.
    pub fn run(&self, args: &[&str]) -> Result<Value> {
        run_json(Command::new(server_bin()).args(args).args(&self.store))
    }

    /// `callsign-server ARGS… --data-dir/--database …`, which must fail: its stderr.
    pub fn run_failing(&self, args: &[&str]) -> Result<String> {
        let out = Command::new(server_bin())
            .args(args)
            .args(&self.store)
            .output()
            .context("running callsign-server")?;
        if out.status.success() {
            bail!(
                "{args:?} succeeded: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        Ok(String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// The SQLite data dir, if that is where this server keeps its data.
    pub fn data_dir(&self) -> Option<std::path::PathBuf> {
        self.is_sqlite()
            .then(|| std::path::PathBuf::from(&self.store[1]))
    }

    /// Whether this server keeps its data in a SQLite data dir (else PostgreSQL).
    pub fn is_sqlite(&self) -> bool {
        self.store[0] == "--data-dir"
    }

    /// Starts `serve` on `127.0.0.1:port` and waits (bounded) for its one listening line.
    pub fn serve(&mut self, port: u16) -> Result<()> {
        self.serve_crashing(port, None)
    }

    /// As [`Self::serve`], with `CALLSIGN_CRASH_AT=crash_at` (the server aborts at that point).
    pub fn serve_crashing(&mut self, port: u16, crash_at: Option<&str>) -> Result<()> {
        self.stop();
        let mut cmd = Command::new(server_bin());
        match crash_at {
            Some(point) => cmd.env("CALLSIGN_CRASH_AT", point),
            None => cmd.env_remove("CALLSIGN_CRASH_AT"),
        };
        let mut child = cmd
            .arg("serve")
            .args(&self.store)
            .args([
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--reaper-interval",
                "1s",
            ])
            .args(self.taskwarrior_key_args())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("spawning {}", server_bin().display()))?;
        let stdout = child.stdout.take().expect("piped stdout");
        self.child = Some(child);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| anyhow!("server printed no listening line within 30 s"))?;
        let url = line
            .trim()
            .strip_prefix("callsign-server listening on ")
            .ok_or_else(|| anyhow!("unexpected first line {line:?}"))?;
        self.url = url.to_owned();
        Ok(())
    }

    /// Where `account taskwarrior` keeps the server key of this server.
    fn taskwarrior_key(&self) -> std::path::PathBuf {
        self._dir.path().join("taskwarrior.key")
    }

    /// `--taskwarrior-key-file` once a link made the key.
    fn taskwarrior_key_args(&self) -> Vec<String> {
        let key = self.taskwarrior_key();
        if key.exists() {
            vec!["--taskwarrior-key-file".into(), key.display().to_string()]
        } else {
            Vec::new()
        }
    }

    /// Links `account` to Taskwarrior (`account taskwarrior`): its client id and secret. The
    /// server picks the key up at its next start.
    pub fn link_taskwarrior(&self, account: &Account) -> Result<(uuid::Uuid, String)> {
        let v = run_json(
            Command::new(server_bin())
                .args(["account", "taskwarrior"])
                .args(&self.store)
                .args([
                    "--account",
                    &account.id.to_string(),
                    "--taskwarrior-key-file",
                ])
                .arg(self.taskwarrior_key()),
        )?;
        let client = v["client_id"]
            .as_str()
            .and_then(|c| uuid::Uuid::parse_str(c).ok())
            .ok_or_else(|| anyhow!("no client_id in {v}"))?;
        let secret = v["encryption_secret"]
            .as_str()
            .ok_or_else(|| anyhow!("no encryption_secret in {v}"))?
            .to_owned();
        Ok((client, secret))
    }

    /// Another node on the same database, started (PostgreSQL only: a data dir takes one
    /// process). It has the Taskwarrior key this one has.
    pub fn node(&self) -> Result<TestServer> {
        let dir = tempfile::tempdir()?;
        if self.taskwarrior_key().exists() {
            std::fs::copy(self.taskwarrior_key(), dir.path().join("taskwarrior.key"))?;
        }
        let mut s = TestServer {
            _dir: dir,
            url: String::new(),
            store: self.store.clone(),
            child: None,
        };
        s.serve(0)?;
        Ok(s)
    }

    /// Points this server at another PostgreSQL (`postgres://…`): a failover, as an admin
    /// repoints the nodes at the promoted standby. Takes effect at the next [`Self::serve`]
    /// (and for the admin commands at once); the running process, if any, is not touched.
    pub fn use_database(&mut self, database: &str) -> Result<()> {
        if self.is_sqlite() {
            bail!("use_database: this server keeps its data in a SQLite data dir");
        }
        self.store[1] = database.to_owned();
        Ok(())
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }

    /// Whether the server process has exited (e.g. aborted by fault injection).
    pub fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_none_or(|c| matches!(c.try_wait(), Ok(Some(_))))
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Creates a project in the account through the API.
pub fn create_project(url: &str, token: &str, prefix: &str) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = callsign_sync::client::Client::new(url, callsign_sync::Token::new(token))?;
        client
            .create_project(prefix, prefix, false)
            .await
            .map_err(|e| anyhow!("{}", e.error))?;
        Ok(())
    })
}

/// Every task the server has for the account, read through its change feed (latest state per
/// UUID), in feed order.
pub fn server_tasks(url: &str, token: &str) -> Result<Vec<callsign_core::dto::Task>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = callsign_sync::client::Client::new(url, callsign_sync::Token::new(token))?;
        let mut since: Option<String> = None;
        let mut seen = std::collections::HashMap::new();
        let mut order = Vec::new();
        loop {
            let page = client
                .changes(since.as_deref(), 1000)
                .await
                .map_err(|e| anyhow!("{}", e.error))?;
            for t in page.changes {
                if seen.insert(t.uuid, t.clone()).is_none() {
                    order.push(t.uuid);
                }
                seen.insert(t.uuid, t);
            }
            since = Some(page.cursor);
            if !page.has_more {
                break;
            }
        }
        Ok(order.into_iter().filter_map(|u| seen.remove(&u)).collect())
    })
}

/// `GET url` as text (e.g. `/metrics`).
pub fn get_text(url: &str) -> Result<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async { Ok(reqwest::get(url).await?.text().await?) })
}
