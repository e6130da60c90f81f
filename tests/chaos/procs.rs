//! The real processes of a campaign: one `callsign-server` on a fixed loopback port (so it can
//! be killed and restarted behind the proxy) and `callsign` sync processes per device. Killing
//! is SIGKILL: no cleanup, like a power cut. Every wait is bounded.
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;

use crate::bins::{cli_bin, server_bin};

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

/// How a server process ended, as far as a campaign counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Running,
    /// Exited by itself (a `CALLSIGN_CRASH_AT` point aborts).
    Aborted,
}

pub struct Server {
    pub dir: PathBuf,
    pub port: u16,
    pub reaper_interval: Duration,
    pub window: Duration,
    child: Option<Child>,
}

impl Server {
    /// Creates an account (prefix `prefix`) in `dir`; returns the server (not started), the
    /// account id and its first token.
    pub fn prepare(dir: &Path, prefix: &str) -> Result<(Server, i64, String)> {
        let v = run_json(
            Command::new(server_bin())
                .args(["account", "create", "--data-dir"])
                .arg(dir)
                .args(["--name", "Chaos", "--prefix", prefix]),
        )?;
        let id = v["account_id"]
            .as_i64()
            .ok_or_else(|| anyhow!("no account_id in {v}"))?;
        let token = v["token"]
            .as_str()
            .ok_or_else(|| anyhow!("no token in {v}"))?
            .to_owned();
        let server = Server {
            dir: dir.to_owned(),
            port: free_port()?,
            reaper_interval: Duration::from_millis(500),
            window: Duration::from_secs(3),
            child: None,
        };
        Ok((server, id, token))
    }

    pub fn token(&self, account: i64, device: &str) -> Result<String> {
        let v = run_json(
            Command::new(server_bin())
                .args(["token", "create", "--data-dir"])
                .arg(&self.dir)
                .args(["--account", &account.to_string(), "--device", device]),
        )?;
        Ok(v["token"]
            .as_str()
            .ok_or_else(|| anyhow!("no token in {v}"))?
            .to_owned())
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Starts `serve` (optionally armed with `CALLSIGN_CRASH_AT=crash_at`) and waits, bounded,
    /// for its listening line. A port still held by the killed process is retried briefly.
    pub fn start(&mut self, crash_at: Option<&str>) -> Result<()> {
        self.kill();
        let mut last = None;
        for _ in 0..50 {
            match self.try_start(crash_at) {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(last.unwrap_or_else(|| anyhow!("server did not start")))
    }

    fn try_start(&mut self, crash_at: Option<&str>) -> Result<()> {
        let mut cmd = Command::new(server_bin());
        match crash_at {
            Some(point) => cmd.env("CALLSIGN_CRASH_AT", point),
            None => cmd.env_remove("CALLSIGN_CRASH_AT"),
        };
        let mut child = cmd
            .args(["serve", "--data-dir"])
            .arg(&self.dir)
            .args(["--listen", &format!("127.0.0.1:{}", self.port)])
            .arg("--reaper-interval")
            .arg(format!("{}ms", self.reaper_interval.as_millis()))
            .arg("--idempotency-window")
            .arg(format!("{}ms", self.window.as_millis()))
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
            bail!("server did not start: {line:?}");
        }
        self.child = Some(child);
        Ok(())
    }

    /// SIGKILL (no-op when not running).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Whether the process ended by itself since the last look.
    pub fn poll(&mut self) -> Ended {
        let gone = self
            .child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))));
        if gone {
            self.child = None;
            Ended::Aborted
        } else {
            Ended::Running
        }
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The `callsign` CLI on one device's data dir.
pub struct Device {
    pub name: String,
    pub dir: PathBuf,
    proc: Option<(Child, &'static str)>,
}

impl Device {
    pub fn new(name: &str, dir: &Path) -> Device {
        Device {
            name: name.to_owned(),
            dir: dir.to_owned(),
            proc: None,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(cli_bin());
        c.args(args)
            .env("CALLSIGN_DATA_DIR", &self.dir)
            .env_remove("CALLSIGN_LOG")
            .stdin(Stdio::null());
        c
    }

    /// Runs a command to its end (bounded by the CLI's own `--timeout` where it has one).
    pub fn run(&self, args: &[&str]) -> Result<ExitStatus> {
        let out = self.command(args).output()?;
        Ok(out.status)
    }

    pub fn login(&self, url: &str, token: &str) -> Result<()> {
        let out = self
            .command(&["login", "--server", url, "--token", token])
            .output()?;
        if !out.status.success() {
            bail!("login failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(())
    }

    /// Starts a background sync process: `watch` (the app's loop) or a one-shot `sync`.
    pub fn spawn(&mut self, watch: bool) -> Result<()> {
        self.reap();
        if self.proc.is_some() {
            return Ok(());
        }
        let (args, kind): (&[&str], _) = if watch {
            (&["watch"], "watch")
        } else {
            (&["sync", "--timeout", "5"], "sync")
        };
        let child = self
            .command(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        self.proc = Some((child, kind));
        Ok(())
    }

    /// Forgets a process that has ended by itself.
    pub fn reap(&mut self) {
        if let Some((c, _)) = self.proc.as_mut() {
            if matches!(c.try_wait(), Ok(Some(_))) {
                self.proc = None;
            }
        }
    }

    pub fn busy(&mut self) -> bool {
        self.reap();
        self.proc.is_some()
    }

    /// SIGKILLs the sync process; returns its kind if one was running.
    pub fn kill(&mut self) -> Option<&'static str> {
        self.reap();
        let (mut c, kind) = self.proc.take()?;
        let _ = c.kill();
        let _ = c.wait();
        Some(kind)
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        self.kill();
    }
}
