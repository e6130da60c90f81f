//! Fixtures: an in-process app for route tests and a real server process for end-to-end tests.
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use callsign_core::Prefix;
use callsign_server::{router, AppState, Config};
use callsign_storage_sqlite::alloc::NewAccount;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;
use uuid::Uuid;

/// An in-process server state on a temp dir, with one account.
pub struct TestApp {
    pub state: AppState,
    pub account: NewAccount,
    pub _dir: tempfile::TempDir,
}

pub struct Answer {
    pub status: StatusCode,
    pub replayed: bool,
    pub content_type: String,
    pub body: Value,
}

impl TestApp {
    pub async fn new(prefix: &str) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let state = AppState::open(Config::new(dir.path())).await.unwrap();
        let account = add_account(&state, "a", prefix).await;
        TestApp {
            state,
            account,
            _dir: dir,
        }
    }

    pub async fn call(
        &self,
        token: &str,
        method: &str,
        path: &str,
        idem: Option<&str>,
        body: Option<Value>,
    ) -> Answer {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {token}"));
        if let Some(k) = idem {
            req = req.header("idempotency-key", k);
        }
        let body = match body {
            Some(b) => {
                req = req.header("content-type", "application/json");
                Body::from(b.to_string())
            }
            None => Body::empty(),
        };
        let res = router(self.state.clone())
            .oneshot(req.body(body).unwrap())
            .await
            .unwrap();
        let status = res.status();
        let replayed = res.headers().get("idempotent-replayed").is_some();
        let content_type = res
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Answer {
            status,
            replayed,
            content_type,
            body,
        }
    }

    pub async fn put(&self, uuid: Uuid, idem: &str, body: Value) -> Answer {
        let token = self.account.token.clone();
        self.call(
            &token,
            "PUT",
            &format!("/v1/tasks/{uuid}"),
            Some(idem),
            Some(body),
        )
        .await
    }

    /// Creates `n` tasks `t0..` with idempotency keys `{idem}0..`; each must be numbered.
    pub async fn create_tasks(&self, idem: &str, n: usize) {
        for i in 0..n {
            let a = self
                .put(
                    Uuid::new_v4(),
                    &format!("{idem}{i}"),
                    task(&format!("t{i}")),
                )
                .await;
            assert_eq!(a.status, StatusCode::CREATED);
        }
    }

    pub async fn get(&self, r: &str) -> Answer {
        let token = self.account.token.clone();
        self.call(
            &token,
            "GET",
            &format!("/v1/tasks/{}", r.replace(' ', "%20")),
            None,
            None,
        )
        .await
    }
}

/// An app on `backend` ("sqlite" or "postgres") whose account's project is `prefix`; `None`
/// when there is no PostgreSQL here (outside CI).
pub async fn app_on(backend: &str, prefix: &str) -> Option<TestApp> {
    let dir = tempfile::tempdir().unwrap();
    let database = match backend {
        "sqlite" => callsign_storage::Database::Sqlite(dir.path().to_owned()),
        _ => {
            let pg = callsign_pgtest::shared()?;
            let label = format!("app_{}", prefix.to_ascii_lowercase());
            callsign_storage::Database::Postgres(pg.fresh_schema(&label).await.unwrap())
        }
    };
    let state = AppState::open(Config::with_database(database))
        .await
        .unwrap();
    let account = add_account(&state, "a", prefix).await;
    Some(TestApp {
        state,
        account,
        _dir: dir,
    })
}

pub async fn add_account(state: &AppState, name: &str, prefix: &str) -> NewAccount {
    let prefix = Prefix::parse(prefix).unwrap();
    state
        .alloc
        .create_account(name, &prefix, "Project", &owner())
        .await
        .unwrap()
}

/// The member `account create` makes when it is not told a name.
pub fn owner() -> callsign_core::MemberName {
    callsign_core::MemberName::parse("owner").unwrap()
}

pub fn task(description: &str) -> Value {
    json!({"project": "syn", "description": description})
}

/// A real `callsign-server serve` process on 127.0.0.1:0; killed on drop.
pub struct TestServer {
    pub child: Child,
    pub url: String,
}

pub const BIN: &str = env!("CARGO_BIN_EXE_callsign-server");

impl TestServer {
    pub fn start(data_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> TestServer {
        let data_dir = data_dir.to_str().expect("a UTF-8 temp path");
        TestServer::serve(&["--data-dir", data_dir], extra, env)
    }

    /// `serve` with `database` (`--data-dir DIR` or `--database URL`) and `extra` arguments.
    pub fn serve(database: &[&str], extra: &[&str], env: &[(&str, &str)]) -> TestServer {
        let mut cmd = Command::new(BIN);
        cmd.arg("serve")
            .args(database)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .env_remove("CALLSIGN_CRASH_AT")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn callsign-server");
        let url = listening_url(&mut child);
        TestServer { child, url }
    }

    /// Waits for the process to end by itself (an injected crash); panics after 10 s.
    #[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
    pub fn wait_for_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(Instant::now() < deadline, "server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The URL of the `listening on` line a starting server prints first on stdout.
pub fn listening_url(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    line.trim()
        .strip_prefix("callsign-server listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned()
}

/// The process's resident set, in MiB (`VmRSS` in `/proc/<pid>/status`).
pub fn rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024
}

/// `callsign-server account create`, through the binary.
pub fn create_account(data_dir: &Path, prefix: &str) -> (i64, String) {
    let data_dir = data_dir.to_str().expect("a UTF-8 temp path");
    create_account_in(&["--data-dir", data_dir], prefix)
}

/// `callsign-server account create` in `database` (`--data-dir DIR` or `--database URL`).
pub fn create_account_in(database: &[&str], prefix: &str) -> (i64, String) {
    let out = Command::new(BIN)
        .args(["account", "create"])
        .args(database)
        .args(["--name", "test", "--prefix", prefix])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["account_id"].as_i64().unwrap(),
        v["token"].as_str().unwrap().to_owned(),
    )
}

/// A small HTTP client for one token.
#[derive(Clone)]
pub struct Client {
    pub http: reqwest::Client,
    pub url: String,
    pub token: String,
}

impl Client {
    pub fn new(url: &str, token: &str) -> Client {
        Client {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            url: url.to_owned(),
            token: token.to_owned(),
        }
    }

    pub async fn put(
        &self,
        uuid: Uuid,
        idem: &str,
        body: &Value,
    ) -> reqwest::Result<(u16, bool, Value)> {
        let req = self.http.put(format!("{}/v1/tasks/{uuid}", self.url));
        self.idempotent(req, idem, body).await
    }

    /// `PATCH /v1/tasks/{task}` (a UUID or a key) under an idempotency key.
    #[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
    pub async fn patch(
        &self,
        task: &str,
        idem: &str,
        body: &Value,
    ) -> reqwest::Result<(u16, bool, Value)> {
        let req = self.http.patch(format!("{}/v1/tasks/{task}", self.url));
        self.idempotent(req, idem, body).await
    }

    /// Sends `req` with `body` under `idem`: the status, whether it was a replay, the body.
    async fn idempotent(
        &self,
        req: reqwest::RequestBuilder,
        idem: &str,
        body: &Value,
    ) -> reqwest::Result<(u16, bool, Value)> {
        let res = req
            .bearer_auth(&self.token)
            .header("idempotency-key", idem)
            .json(body)
            .send()
            .await?;
        let status = res.status().as_u16();
        let replayed = res.headers().get("idempotent-replayed").is_some();
        Ok((status, replayed, res.json().await.unwrap_or(Value::Null)))
    }

    pub async fn get(&self, path: &str) -> reqwest::Result<(u16, Value)> {
        let res = self
            .http
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .send()
            .await?;
        Ok((
            res.status().as_u16(),
            res.json().await.unwrap_or(Value::Null),
        ))
    }

    pub async fn post(&self, path: &str, body: &Value) -> reqwest::Result<(u16, Value)> {
        let res = self
            .http
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await?;
        Ok((
            res.status().as_u16(),
            res.json().await.unwrap_or(Value::Null),
        ))
    }
}

/// Every number in use in project 1 of the allocation database, sorted.
pub fn numbers_in_db(data_dir: &Path) -> Vec<i64> {
    let c = rusqlite::Connection::open(data_dir.join("callsign.sqlite3")).unwrap();
    let mut st = c
        .prepare("SELECT number FROM keys WHERE project_id = 1 ORDER BY number")
        .unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The task's properties in account 1's TaskChampion replica (the crash tests', which
/// need `fault-injection`, read it).
#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
pub fn store_task(dir: &Path, uuid: Uuid) -> Option<Value> {
    let c = rusqlite::Connection::open(dir.join("accounts/1/taskchampion.sqlite3")).unwrap();
    let data: String = c
        .query_row(
            "SELECT data FROM tasks WHERE uuid = ?1",
            [uuid.to_string()],
            |r| r.get(0),
        )
        .ok()?;
    serde_json::from_str(&data).ok()
}

/// Polls `f` every 50 ms until it is true; panics after `secs`.
pub async fn eventually(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    eventually_async(secs, what, || std::future::ready(f())).await;
}

/// [`eventually`] for a check that awaits.
pub async fn eventually_async<F: std::future::Future<Output = bool>>(
    secs: u64,
    what: &str,
    mut f: impl FnMut() -> F,
) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A series' value in a `/metrics` scrape of the server at `url`, or `None` when absent.
pub async fn metric_opt(http: &reqwest::Client, url: &str, series: &str) -> Option<f64> {
    let text = http
        .get(format!("{url}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.trim().parse().unwrap())
}

/// A series' value in a `/metrics` scrape (0 when absent).
pub async fn metric(http: &reqwest::Client, url: &str, series: &str) -> f64 {
    metric_opt(http, url, series).await.unwrap_or(0.0)
}
