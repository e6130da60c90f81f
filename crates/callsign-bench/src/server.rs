//! The real `callsign-server` (release build beside this binary) on 127.0.0.1 with a temp data
//! dir, killed on drop; plus the HTTP calls the benchmarks make.
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use callsign_core::dto::{Mutation, MutationOp, NewTask, SyncRequest, SyncResponse};
use uuid::Uuid;

pub const PREFIX: &str = "BEN";

/// `callsign-server` in this binary's profile dir, built there (without test features) if
/// missing.
pub fn server_bin() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().context("executable dir")?;
    let bin = dir.join("callsign-server");
    if !bin.exists() {
        let release = dir.ends_with("release");
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.args(["build", "--quiet", "-p", "callsign-server"]);
        if release {
            cmd.arg("--release");
        }
        if !cmd.status()?.success() {
            bail!("cargo build -p callsign-server failed");
        }
    }
    Ok(bin)
}

pub struct Server {
    pub url: String,
    pub token: String,
    pub dir: tempfile::TempDir,
    child: Child,
}

impl Server {
    /// A fresh data dir with one account (project `BEN`), served on 127.0.0.1:0.
    pub fn start() -> Result<Server> {
        Server::start_with(&[])
    }

    /// As [`Server::start`], with more `serve` flags.
    pub fn start_with(flags: &[&str]) -> Result<Server> {
        let bin = server_bin()?;
        let dir = tempfile::Builder::new()
            .prefix("callsign-bench-")
            .tempdir()?;
        let out = Command::new(&bin)
            .args(["account", "create", "--data-dir"])
            .arg(dir.path())
            .args(["--name", "Bench", "--prefix", PREFIX])
            .output()?;
        if !out.status.success() {
            bail!("account create: {}", String::from_utf8_lossy(&out.stderr));
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        let token = v["token"].as_str().context("token")?.to_owned();
        let mut child = Command::new(&bin)
            .args(["serve", "--data-dir"])
            .arg(dir.path())
            .args(["--listen", "127.0.0.1:0"])
            .args(flags)
            .env("RUST_LOG", "error")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().context("stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        let url = line
            .trim()
            .strip_prefix("callsign-server listening on ")
            .ok_or_else(|| anyhow!("server did not start: {line:?}"))?
            .to_owned();
        Ok(Server {
            url,
            token,
            dir,
            child,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// VmRSS of a process, MiB.
pub fn rss_mib(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("VmRSS")?;
    Ok(kb / 1024.0)
}

/// Open file descriptors of a process (entries of `/proc/<pid>/fd`).
pub fn open_fds(pid: u32) -> Result<usize> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))?.count())
}

/// What a process has used so far: CPU seconds (`utime + stime` of `/proc/<pid>/stat`, all its
/// threads, also those that have exited) and what it handed to write calls (`wchar` and
/// `syscw` of `/proc/<pid>/io`: files, pipes and sockets alike; an `fsync` is neither).
#[derive(Clone, Copy)]
pub struct Usage {
    pub cpu_secs: f64,
    pub written_bytes: f64,
    pub write_calls: f64,
}

pub fn usage(pid: u32) -> Result<Usage> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    // The command name, in parentheses, may hold spaces: count fields after its last ')'.
    let rest: Vec<&str> = stat
        .rsplit_once(')')
        .context("/proc/<pid>/stat")?
        .1
        .split_whitespace()
        .collect();
    let stat_field = |n: usize| -> Result<f64> {
        rest.get(n)
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("field {n} after the name in /proc/{pid}/stat"))
    };
    let io = std::fs::read_to_string(format!("/proc/{pid}/io"))
        .with_context(|| format!("reading /proc/{pid}/io"))?;
    let io_field = |name: &str| -> Result<f64> {
        io.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .with_context(|| format!("{name} in /proc/{pid}/io"))
    };
    Ok(Usage {
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
        cpu_secs: (stat_field(11)? + stat_field(12)?) / clock_ticks()?,
        written_bytes: io_field("wchar:")?,
        write_calls: io_field("syscw:")?,
    })
}

impl Usage {
    fn zip(self, o: Usage, f: impl Fn(f64, f64) -> f64) -> Usage {
        Usage {
            cpu_secs: f(self.cpu_secs, o.cpu_secs),
            written_bytes: f(self.written_bytes, o.written_bytes),
            write_calls: f(self.write_calls, o.write_calls),
        }
    }

    /// Per one of `k` (creates, commits).
    pub fn per(self, k: f64) -> Usage {
        self.zip(self, |a, _| a / k)
    }
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(self, o: Usage) -> Usage {
        self.zip(o, |a, b| a + b)
    }
}

impl std::ops::Sub for Usage {
    type Output = Usage;
    fn sub(self, o: Usage) -> Usage {
        self.zip(o, |a, b| a - b)
    }
}

/// The kernel's clock ticks per second (`AT_CLKTCK` of this process's auxiliary vector), read
/// once.
fn clock_ticks() -> Result<f64> {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    if let Some(t) = TICKS.get() {
        return Ok(*t);
    }
    const AT_CLKTCK: u64 = 17;
    let auxv = std::fs::read("/proc/self/auxv").context("reading /proc/self/auxv")?;
    let ticks = auxv
        .chunks_exact(16)
        .map(|kv| {
            let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().expect("8 bytes"));
            (word(&kv[..8]), word(&kv[8..]))
        })
        .find(|(k, _)| *k == AT_CLKTCK)
        .map(|(_, v)| v as f64)
        .context("no AT_CLKTCK in /proc/self/auxv")?;
    Ok(*TICKS.get_or_init(|| ticks))
}

pub fn new_task(description: String) -> NewTask {
    NewTask {
        project: PREFIX.into(),
        description,
        notes: String::new(),
        status: None,
        tags: Vec::new(),
        created_at: None,
    }
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

/// The current numbers of project `BEN`, read from the server's allocation database.
pub fn numbers(s: &Server) -> Result<Vec<i64>> {
    let c = rusqlite::Connection::open_with_flags(
        s.data_dir().join("callsign.sqlite3"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )?;
    let mut st = c.prepare(
        "SELECT k.number FROM keys k JOIN projects p ON p.id = k.project_id
         WHERE p.prefix = ?1 AND k.current = 1 ORDER BY k.number",
    )?;
    let ns = st
        .query_map([PREFIX], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(ns)
}

/// The server's `/metrics` samples: `name{labels}` to value (buckets left out).
pub async fn metrics(http: &reqwest::Client, s: &Server) -> Result<HashMap<String, f64>> {
    let text = http
        .get(format!("{}/metrics", s.url))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    Ok(parse_metrics(&text))
}

/// Waits until the server has finished writing in the background (the keys of the tasks it
/// has answered for, and their `in_store` marks) and emptied its WALs: until neither writer's
/// commit counter has moved for 1.5 s. Fails after a minute of commits.
pub async fn settle(http: &reqwest::Client, s: &Server) -> Result<()> {
    const QUIET: Duration = Duration::from_millis(1500);
    const POLL: Duration = Duration::from_millis(250);
    const MAX: Duration = Duration::from_secs(60);
    let commits = |m: HashMap<String, f64>| {
        [
            "callsign_alloc_db_group_commits_total",
            "callsign_task_store_group_commits_total",
        ]
        .map(|k| m.get(k).copied().unwrap_or(0.0))
    };
    let start = Instant::now();
    let mut last = commits(metrics(http, s).await?);
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < QUIET {
        if start.elapsed() > MAX {
            bail!("the server kept committing for {MAX:?} after its last request");
        }
        tokio::time::sleep(POLL).await;
        let now = commits(metrics(http, s).await?);
        if now != last {
            last = now;
            quiet_since = Instant::now();
        }
    }
    Ok(())
}

fn parse_metrics(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.contains("_bucket{"))
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_owned(), value.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn metrics_text_is_read_by_name_and_labels() {
        let m = super::parse_metrics(
            "# HELP x y\ncallsign_alloc_db_group_commits_total 12\n\
             callsign_create_stage_seconds_sum{stage=\"phase1\"} 0.5\n\
             callsign_create_stage_seconds_bucket{le=\"0.1\",stage=\"phase1\"} 3\n# EOF\n",
        );
        assert_eq!(m["callsign_alloc_db_group_commits_total"], 12.0);
        assert_eq!(
            m["callsign_create_stage_seconds_sum{stage=\"phase1\"}"],
            0.5
        );
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn what_a_process_writes_is_counted_in_bytes_and_calls() {
        let me = std::process::id();
        let dir = tempfile::tempdir().unwrap();
        let before = super::usage(me).unwrap();
        for i in 0..10u8 {
            std::fs::write(dir.path().join(i.to_string()), [i; 10_000]).unwrap();
        }
        let d = super::usage(me).unwrap() - before;
        // Other test threads may write too, so at least what this one wrote.
        assert!(d.written_bytes >= 100_000.0, "{} bytes", d.written_bytes);
        assert!(d.write_calls >= 10.0, "{} calls", d.write_calls);
        let each = d.per(10.0);
        assert!(each.written_bytes >= 10_000.0 && each.write_calls >= 1.0);
    }

    #[test]
    fn cpu_time_grows_with_work_done_and_never_beyond_the_wall_clock() {
        let me = std::process::id();
        let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
        let before = super::usage(me).unwrap().cpu_secs;
        let t = std::time::Instant::now();
        let mut x = 0u64;
        // Spin until the process has used 0.1 s more, however busy the machine is.
        let used = loop {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            let used = super::usage(me).unwrap().cpu_secs - before;
            if used >= 0.1 {
                break used;
            }
            assert!(
                t.elapsed().as_secs() < 20,
                "CPU time did not grow: {used} s"
            );
        };
        // In seconds, not ticks: no more than every core for the whole wait (+ a tick each).
        let wall = t.elapsed().as_secs_f64();
        assert!(used <= (wall + 0.02) * cores, "{used} s used in {wall} s");
    }
}
