//! The measurements of issue 6. Each returns one run's numbers; `main` repeats them and builds
//! the table. Every server is a fresh process and data dir (or PostgreSQL schema) on 127.0.0.1.
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use callsign_sync::{Engine, Event, NewTaskInput, TaskFilter, Token};
use rand::Rng;

use crate::metrics::{self, PerCreate};
use crate::server::{self, Backend, Server, PREFIX};
use crate::stats::percentile;
use crate::{load, proc};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn input(i: usize) -> NewTaskInput {
    NewTaskInput {
        description: format!("bench task {i}"),
        project: Some(PREFIX.into()),
        ..NewTaskInput::default()
    }
}

/// (drain seconds, sequential-PUT baseline seconds per PUT) for `n` tasks on `backend`; the
/// baseline is `puts` sequential PUTs to a fresh server.
pub async fn drain(backend: &Backend, n: usize, puts: usize) -> Result<(f64, f64)> {
    let drain = drain_on(&Server::start_on(backend, &[])?, n).await?;
    Ok((drain, sequential_puts(backend, puts).await?))
}

/// Seconds for one sync of an engine holding `n` offline tasks into `s`; every task keyed.
pub async fn drain_on(s: &Server, n: usize) -> Result<f64> {
    let home = tempfile::tempdir()?;
    let engine = Engine::open(home.path())?;
    engine.create_many((0..n).map(input).collect())?;
    engine
        .login(&s.url, Token::new(&s.token), Some("bench".into()))
        .await?;
    let t = Instant::now();
    engine.sync_until_drained(Duration::from_secs(600)).await?;
    let drain = t.elapsed().as_secs_f64();
    let keyed = engine
        .list(TaskFilter { all: true })?
        .iter()
        .filter(|t| t.key.is_some())
        .count();
    if keyed != n {
        bail!("after the drain {keyed} of {n} tasks have keys");
    }
    Ok(drain)
}

/// Seconds per create over `puts` sequential `PUT`s to a fresh server on `backend`.
pub async fn sequential_puts(backend: &Backend, puts: usize) -> Result<f64> {
    let base = Server::start_on(backend, &[])?;
    let http = reqwest::Client::new();
    let t = Instant::now();
    for i in 0..puts {
        server::put_create(&http, &base, format!("baseline {i}")).await?;
    }
    Ok(t.elapsed().as_secs_f64() / puts.max(1) as f64)
}

pub struct Throughput {
    pub creates_per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub server_rss_mib: f64,
    pub raw_commits_per_s: f64,
    /// What the server's `/metrics` counted over the run, per create.
    pub per_create: PerCreate,
    /// What the server used from the first client's start until it settled after the run (so
    /// the key writes and checkpoints of the run's creates count), per create.
    pub server_per_create: proc::Usage,
    /// What this process (the load generator) used while its clients ran, per create.
    pub clients_per_create: proc::Usage,
    /// What the raw baseline used per commit (mean of its two measurements).
    pub raw_per_commit: proc::Usage,
}

/// `clients` concurrent PUT creates into one project for `secs`; numbers checked 1..N.
pub async fn throughput(clients: usize, secs: f64) -> Result<Throughput> {
    let s = Server::start()?;
    // The disk's commit rate is measured just before the run and again just after it, once the
    // server has settled; the baseline is their mean, so a shift in the machine's speed during
    // the run weighs on both sides.
    let raw_secs = secs.min(3.0) / 2.0;
    let raw_before = raw_commits(s.data_dir()?, raw_secs)?;
    let http = reqwest::Client::new();
    let mut conns = Vec::with_capacity(clients);
    for _ in 0..clients {
        conns.push(load::Client::connect(&s).await?);
    }
    // The clock starts before the first client does: every number in the database is counted
    // against it.
    let before = metrics::metrics(&http, &s.url).await?;
    let me = std::process::id();
    let (server_before, clients_before) = (proc::usage(s.pid())?, proc::usage(me)?);
    let run = load::run(conns, secs).await?;
    let clients = proc::usage(me)? - clients_before;
    let per_create = PerCreate::between(&before, &metrics::metrics(&http, &s.url).await?)?;
    let n = check_numbers(&s, run.latencies_ms.len()).await?;
    let server_rss_mib = proc::rss_mib(s.pid())?;
    metrics::settle(&http, &s).await?;
    let server_used = proc::usage(s.pid())? - server_before;
    let raw_after = raw_commits(s.data_dir()?, raw_secs)?;
    let lat = &run.latencies_ms;
    Ok(Throughput {
        creates_per_s: n as f64 / run.elapsed_s,
        p50_ms: percentile(lat, 50.0),
        p99_ms: percentile(lat, 99.0),
        server_rss_mib,
        raw_commits_per_s: (raw_before.per_s + raw_after.per_s) / 2.0,
        per_create,
        server_per_create: server_used.per(n as f64),
        clients_per_create: clients.per(n as f64),
        raw_per_commit: (raw_before.per_commit + raw_after.per_commit).per(2.0),
    })
}

/// The project's numbers are exactly 1..`answered`; returns how many there are.
pub async fn check_numbers(s: &Server, answered: usize) -> Result<usize> {
    let ns = server::numbers(s).await?;
    let n = ns.len();
    if n != answered || ns.iter().enumerate().any(|(i, x)| *x != i as i64 + 1) {
        bail!("numbers are not exactly 1..{answered}: {n} numbers");
    }
    Ok(n)
}

/// One measurement of the raw commit rate.
pub struct RawCommits {
    pub per_s: f64,
    /// What this process used per commit meanwhile (nothing else of it works then: no client
    /// runs).
    pub per_commit: proc::Usage,
}

/// Single-row inserts, one transaction each, WAL with `synchronous = FULL` (the server's
/// setting), on the same filesystem as the server's data dir: this disk's durable commit rate.
pub fn raw_commits(dir: &std::path::Path, secs: f64) -> Result<RawCommits> {
    let path = dir.join("raw-commit-baseline.sqlite3");
    let c = rusqlite::Connection::open(&path)?;
    c.pragma_update(None, "journal_mode", "WAL")?;
    c.pragma_update(None, "synchronous", "FULL")?;
    c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")?;
    let me = std::process::id();
    let before = proc::usage(me)?;
    let t = Instant::now();
    let mut n = 0u64;
    while t.elapsed().as_secs_f64() < secs {
        c.execute("INSERT INTO t (v) VALUES (?1)", [format!("row {n}")])?;
        n += 1;
    }
    let per_s = n as f64 / t.elapsed().as_secs_f64();
    let used = proc::usage(me)? - before;
    drop(c);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(RawCommits {
        per_s,
        per_commit: used.per(n.max(1) as f64),
    })
}

/// From `Engine::create` returning to the key stored locally, with the sync loop running:
/// (p50, p99) ms over `n` creates, one at a time, on `backend`.
pub async fn create_to_key(backend: &Backend, n: usize) -> Result<(f64, f64)> {
    let s = Server::start_on(backend, &[])?;
    let home = tempfile::tempdir()?;
    let engine = Engine::open(home.path())?;
    engine
        .login(&s.url, Token::new(&s.token), Some("bench".into()))
        .await?;
    engine.start();
    let mut events = engine.subscribe();
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        let task = engine.create(input(i))?;
        let t = Instant::now();
        let deadline = t + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, events.recv()).await {
                Err(_) => bail!("no key for task {i} within 10 s"),
                Ok(Ok(Event::TaskChanged { uuid })) if uuid == task.uuid => {
                    if engine.get(&uuid.to_string())?.key.is_some() {
                        break;
                    }
                }
                Ok(Ok(_)) => {}
                Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {
                    if engine.get(&task.uuid.to_string())?.key.is_some() {
                        break;
                    }
                }
                Ok(Err(e)) => bail!("event channel: {e}"),
            }
        }
        lat.push(ms(t.elapsed()));
    }
    engine.stop().await;
    Ok((percentile(&lat, 50.0), percentile(&lat, 99.0)))
}

/// `Engine::create` alone (task + outbox row, one durable transaction): (p50, p99) ms.
pub fn local_create(n: usize) -> Result<(f64, f64)> {
    let home = tempfile::tempdir()?;
    let engine = Engine::open(home.path())?;
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        engine.create(input(i))?;
        lat.push(ms(t.elapsed()));
    }
    Ok((percentile(&lat, 50.0), percentile(&lat, 99.0)))
}

pub struct Lookup {
    pub by_key: (f64, f64),
    pub by_uuid: (f64, f64),
}

/// `GET /v1/tasks/BEN-n` and `GET /v1/tasks/{uuid}`, `n` random each, `runs` times, at each
/// of `sizes` tasks in the project (one server filled up step by step).
pub async fn lookups(sizes: &[usize], n: usize, runs: usize) -> Result<Vec<(usize, Vec<Lookup>)>> {
    let s = Server::start()?;
    let http = reqwest::Client::new();
    let mut uuids = Vec::new();
    let mut out = Vec::new();
    for &size in sizes {
        uuids.extend(server::fill(&http, &s, size - uuids.len()).await?);
        // A lookup at this size, not one racing the fill's key writes still under way.
        metrics::settle(&http, &s).await?;
        let mut per_run = Vec::with_capacity(runs);
        for _ in 0..runs {
            let mut by_key = Vec::with_capacity(n);
            let mut by_uuid = Vec::with_capacity(n);
            for _ in 0..n {
                let (k, u) = {
                    let mut rng = rand::thread_rng();
                    (
                        rng.gen_range(1..=size),
                        uuids[rng.gen_range(0..uuids.len())],
                    )
                };
                by_key.push(get(&http, &s, &format!("{PREFIX}-{k}")).await?);
                by_uuid.push(get(&http, &s, &u.to_string()).await?);
            }
            per_run.push(Lookup {
                by_key: (percentile(&by_key, 50.0), percentile(&by_key, 99.0)),
                by_uuid: (percentile(&by_uuid, 50.0), percentile(&by_uuid, 99.0)),
            });
        }
        out.push((size, per_run));
    }
    Ok(out)
}

async fn get(http: &reqwest::Client, s: &Server, id: &str) -> Result<f64> {
    let t = Instant::now();
    let resp = http
        .get(format!("{}/v1/tasks/{id}", s.url))
        .bearer_auth(&s.token)
        .send()
        .await?;
    let status = resp.status();
    resp.bytes().await?;
    let took = ms(t.elapsed());
    if !status.is_success() {
        bail!("GET /v1/tasks/{id}: {status}");
    }
    Ok(took)
}

/// Fills a store with `n` tasks (no server) for [`hold`] to open.
pub fn seed_store(dir: &std::path::Path, n: usize) -> Result<()> {
    let engine = Engine::open(dir)?;
    let all: Vec<usize> = (0..n).collect();
    for chunk in all.chunks(10_000) {
        engine.create_many(chunk.iter().map(|i| input(*i)).collect())?;
    }
    Ok(())
}

/// In a fresh process: opens the engine on `dir` and lists every task (what the app does at
/// start); returns (RSS before opening, RSS holding the list) in MiB.
pub fn hold(dir: &std::path::Path) -> Result<(f64, f64)> {
    let before = proc::rss_mib(std::process::id())?;
    let engine = Engine::open(dir)?;
    let all = engine.list(TaskFilter { all: true })?;
    let after = proc::rss_mib(std::process::id()).context("own RSS")?;
    drop(all);
    Ok((before, after))
}
