//! Issue 27, item 1: the replicas as a bounded pool, against the real binary run under an
//! open-file limit (`ulimit -n`).
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use callsign_core::Prefix;
use callsign_storage_sqlite::alloc::accounts;
use serde_json::json;
use uuid::Uuid;

use crate::common::{eventually, listening_url, metric, rss_mib, TestServer, BIN};

/// `n` accounts made with the library, in one transaction, before the server starts (the
/// binary's `account create` is one process and one fsync per account). Their tokens, in
/// account order.
async fn make_accounts(data_dir: &Path, n: usize) -> Vec<String> {
    let db = callsign_storage_sqlite::datadir::open_allocation_db(data_dir, None).unwrap();
    let prefix = Prefix::parse("SYN").unwrap();
    db.write(move |c| {
        (0..n)
            .map(|i| {
                let owner = crate::common::owner();
                accounts::create_account(c, &format!("a{i}"), &prefix, "Project", &owner)
                    .map(|a| a.token)
            })
            .collect()
    })
    .await
    .unwrap()
}

/// The server's log so far (stderr), read by a thread.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<String>>);

impl Log {
    fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
}

/// `callsign-server serve` under an open-file limit of `nofile` (soft and hard, as a systemd
/// service with `LimitNOFILE=` would have it).
fn start_limited(data_dir: &Path, nofile: u64, extra: &[&str]) -> (TestServer, Log) {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n {nofile} && exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(["serve", "--data-dir"])
        .arg(data_dir)
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .env_remove("CALLSIGN_CRASH_AT")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn callsign-server");
    let log = Log::default();
    let stderr = child.stderr.take().unwrap();
    let into = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
            let mut l = into.0.lock().unwrap();
            l.push_str(&line);
            l.push('\n');
        }
    });
    let url = listening_url(&mut child);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id())).unwrap();
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .unwrap();
    assert_eq!(soft, nofile.to_string(), "the server's soft limit");
    (TestServer { child, url }, log)
}

/// Descriptors the process `pid` has open (entries of `/proc/<pid>/fd`).
fn open_files(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count() as u64)
        .unwrap_or(0)
}

/// Of those, how many are replica files (`taskchampion.sqlite3` and its `-wal`, `-shm`).
fn replica_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|p| p.to_string_lossy().contains("taskchampion.sqlite3"))
        .count()
}

async fn create(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    (uuid, idem): (Uuid, &str),
) -> reqwest::Result<reqwest::Response> {
    http.put(format!("{url}/v1/tasks/{uuid}"))
        .bearer_auth(token)
        .header("idempotency-key", idem)
        .json(&json!({"project": "syn", "description": "one task"}))
        .send()
        .await
}

/// Peak of `open_files(pid)`, sampled every 10 ms until dropped.
struct PeakFiles {
    peak: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PeakFiles {
    fn start(pid: u32) -> PeakFiles {
        let peak = Arc::new(AtomicU64::new(open_files(pid)));
        let done = Arc::new(AtomicBool::new(false));
        let (p, d) = (peak.clone(), done.clone());
        let thread = std::thread::spawn(move || {
            while !d.load(Ordering::Relaxed) {
                p.fetch_max(open_files(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        PeakFiles {
            peak,
            done,
            thread: Some(thread),
        }
    }

    fn stop(mut self) -> u64 {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        self.peak.load(Ordering::Relaxed)
    }
}

/// 5,000 accounts each create their first task against a server whose open-file limit is
/// 1024 (systemd's default soft limit for a service): every create is `201`, the server's open
/// files stay under the limit throughout, and the replicas open stay within the pool the
/// server sized from that limit. Before the pool, the 215th account's create answered `503`.
/// The time, the peak of open files and the RSS are printed (`--nocapture`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_accounts_create_under_an_open_file_limit_of_1024() {
    const ACCOUNTS: usize = 5_000;
    const LIMIT: u64 = 1024;
    const CLIENTS: usize = 32;
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let tokens = Arc::new(make_accounts(dir.path(), ACCOUNTS).await);
    let made = started.elapsed();
    let (server, log) = start_limited(dir.path(), LIMIT, &[]);
    let pid = server.child.id();
    // (1024 - 64 - 512 connections) / 5 descriptors a replica.
    assert!(
        log.text().contains("at most 89 replicas open"),
        "{}",
        log.text()
    );
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(CLIENTS)
        .build()
        .unwrap();

    let peak = PeakFiles::start(pid);
    let started = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (http, url, tokens, next) = (
                http.clone(),
                server.url.clone(),
                tokens.clone(),
                next.clone(),
            );
            tokio::spawn(async move {
                let mut failed = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= tokens.len() {
                        return failed;
                    }
                    let res = create(&http, &url, &tokens[i], (Uuid::new_v4(), "first"))
                        .await
                        .unwrap();
                    if res.status() != 201 {
                        failed.push((i, res.status().as_u16()));
                    }
                }
            })
        })
        .collect();
    let mut failed = Vec::new();
    for w in workers {
        failed.extend(w.await.unwrap());
    }
    let took = started.elapsed();
    let peak = peak.stop();
    let rss = rss_mib(pid);
    let open_now = open_files(pid);
    let replicas = metric(&http, &server.url, "callsign_open_replicas").await;
    let lru = metric(
        &http,
        &server.url,
        "callsign_replicas_closed_total{reason=\"lru\"}",
    )
    .await;
    let reported = metric(&http, &server.url, "callsign_open_files").await;
    println!(
        "{ACCOUNTS} accounts made in {made:.1?}; their first creates (ulimit -n {LIMIT}, \
         {CLIENTS} clients) in {took:.1?} ({:.0}/s): open files peak {peak}, {open_now} after \
         (/metrics: {reported}); replicas open {replicas}, closed to make room {lru}; \
         RSS {rss} MiB",
        ACCOUNTS as f64 / took.as_secs_f64()
    );
    assert!(
        failed.is_empty(),
        "{} creates failed, first {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    assert!(peak < LIMIT, "open files peaked at {peak}");
    assert!(replicas <= 89.0, "{replicas} replicas open");
    assert!(lru >= (ACCOUNTS - 89) as f64, "{lru} closed to make room");
    assert!(reported > 0.0 && (reported as u64) < LIMIT);
}

/// A replica unused for `--replica-idle-close` is closed, with its files (the log, the
/// checkpoint connection): a server at rest holds no replica open. The next create opens it
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_replicas_are_closed_and_reopened_by_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = make_accounts(dir.path(), 3).await;
    let (server, _log) = start_limited(dir.path(), 1024, &["--replica-idle-close", "1s"]);
    let pid = server.child.id();
    let http = reqwest::Client::new();
    for t in &tokens {
        let res = create(&http, &server.url, t, (Uuid::new_v4(), "a"))
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
    }
    assert!(
        replica_files(pid) >= 3,
        "{} replica files",
        replica_files(pid)
    );
    eventually(10, "every replica closed", || replica_files(pid) == 0).await;
    assert_eq!(
        metric(&http, &server.url, "callsign_open_replicas").await,
        0.0
    );
    assert_eq!(
        metric(
            &http,
            &server.url,
            "callsign_replicas_closed_total{reason=\"idle\"}"
        )
        .await,
        3.0
    );
    // No WAL is left beside a closed replica.
    for a in 1..=3 {
        let wal = dir
            .path()
            .join(format!("accounts/{a}/taskchampion.sqlite3-wal"));
        assert!(!wal.exists(), "{}", wal.display());
    }
    let res = create(&http, &server.url, &tokens[0], (Uuid::new_v4(), "b"))
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    assert_eq!(
        metric(&http, &server.url, "callsign_open_replicas").await,
        1.0
    );
}

/// When the process runs out of descriptors (here: idle client connections fill a limit of
/// 128), a create that needs a replica opened is answered `503 unavailable` with
/// `Retry-After`, and the log says why in plain words. Once the connections close, the same
/// request succeeds, with no restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_files_answers_503_with_retry_after_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = make_accounts(dir.path(), 2).await;
    let (server, log) = start_limited(dir.path(), 128, &[]);
    let pid = server.child.id();
    // One keep-alive connection, authenticated once (so the allocation database has a reader
    // open), used for every request below.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    let res = http
        .get(format!("{}/v1/projects", server.url))
        .bearer_auth(&tokens[0])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);

    // Idle connections until the server cannot take another descriptor.
    let addr = server.url.strip_prefix("http://").unwrap().to_owned();
    let mut hogs = Vec::new();
    for _ in 0..200 {
        hogs.push(std::net::TcpStream::connect(&addr).unwrap());
    }
    eventually(10, "the server at its limit", || open_files(pid) >= 127).await;

    let first = (Uuid::new_v4(), "k");
    let res = create(&http, &server.url, &tokens[0], first).await.unwrap();
    assert_eq!(res.status(), 503);
    assert_eq!(
        res.headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap()),
        Some("1")
    );
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body["code"], "unavailable");
    // The log reaches us through a pipe, read on another thread: it may trail the answer.
    eventually(10, "the log says the server is out of open files", || {
        log.text().contains("out of open files")
    })
    .await;
    assert!(!log.text().contains("cs_"), "no token in the log");

    drop(hogs);
    eventually(10, "connections closed", || open_files(pid) < 100).await;
    // The same request again (its slot waits, pending), and another account's first.
    let res = create(&http, &server.url, &tokens[0], first).await.unwrap();
    assert_eq!(res.status(), 201);
    let res = create(&http, &server.url, &tokens[1], (Uuid::new_v4(), "k"))
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
}

/// The replica's file once its WAL has been emptied (the server does that after 1 s at rest).
async fn replica_size_at_rest(data_dir: &Path, account: i64) -> u64 {
    let db = data_dir.join(format!("accounts/{account}/taskchampion.sqlite3"));
    let wal = data_dir.join(format!("accounts/{account}/taskchampion.sqlite3-wal"));
    eventually(20, "the replica's WAL emptied", || {
        std::fs::metadata(&wal).map_or(true, |m| m.len() == 0)
    })
    .await;
    std::fs::metadata(&db).unwrap().len()
}

/// 10,000 edits of the tasks in `uuids`: ten `POST /v1/sync` batches of 1,000.
async fn edit(http: &reqwest::Client, url: &str, token: &str, uuids: &[Uuid], round: &str) {
    for batch in 0..10 {
        let mutations: Vec<serde_json::Value> = (0..1000)
            .map(|i| {
                json!({"idempotency_key": format!("{round}-{batch}-{i}"), "op": "update",
                       "uuid": uuids[i % uuids.len()],
                       "fields": {"description": format!("{round} {batch} {i}")}})
            })
            .collect();
        let res: serde_json::Value = http
            .post(format!("{url}/v1/sync"))
            .bearer_auth(token)
            .json(&json!({ "mutations": mutations }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let results = res["results"].as_array().unwrap();
        assert!(
            results.iter().all(|r| r["status"] == 200),
            "{round} {batch}"
        );
    }
}

/// Issue 27, item 2 for the replicas: 200 tasks edited 10,000 times grow the account's
/// replica by the operations log; once those edits are older than `--history-retention`
/// their operations are trimmed, and 10,000 more edits grow the file by at most a third of
/// what the first ones added (the freed pages are reused). The figures are printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operations_log_is_trimmed_past_the_history_retention() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = make_accounts(dir.path(), 1).await;
    let (server, _log) = start_limited(dir.path(), 1024, &["--history-retention", "3s"]);
    let http = reqwest::Client::new();
    let uuids: Vec<Uuid> = (0..200).map(|_| Uuid::new_v4()).collect();
    let creates: Vec<serde_json::Value> = uuids
        .iter()
        .enumerate()
        .map(|(i, u)| {
            json!({"idempotency_key": format!("c{i}"), "op": "create", "uuid": u,
                   "fields": {"project": "SYN", "description": format!("task {i}")}})
        })
        .collect();
    let res = http
        .post(format!("{}/v1/sync", server.url))
        .bearer_auth(&tokens[0])
        .json(&json!({ "mutations": creates }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let created = replica_size_at_rest(dir.path(), 1).await;
    let started = Instant::now();
    edit(&http, &server.url, &tokens[0], &uuids, "r1").await;
    let first = replica_size_at_rest(dir.path(), 1).await;
    let first_took = started.elapsed();
    let trimmed = "callsign_replica_operations_trimmed_total";
    // Each edit writes `modified` and `description`: 20,000 operations to trim.
    let mut waited = 0;
    while metric(&http, &server.url, trimmed).await < 20_000.0 {
        assert!(
            waited < 200,
            "trimmed {}",
            metric(&http, &server.url, trimmed).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += 1;
    }
    edit(&http, &server.url, &tokens[0], &uuids, "r2").await;
    let second = replica_size_at_rest(dir.path(), 1).await;
    println!(
        "replica: {created} bytes after 200 creates, {first} after 10,000 edits ({first_took:.1?}), \
         {second} after 10,000 more once the first were past the 3 s history"
    );
    assert!(
        first > created + 1_000_000,
        "the first edits' log: {first} bytes"
    );
    assert!(
        second - first <= (first - created) / 3,
        "grew {} bytes, the first round {}",
        second - first,
        first - created
    );
}
