//! End-to-end crash recovery: the real binary, built with `fault-injection`, aborts at each
//! `CALLSIGN_CRASH_AT` point; after a restart the retry gets the same single key, the reaper
//! settles what was left, and no number is skipped. `structure.rs` does the same for subtask
//! creates and moves.
mod structure;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::{create_account, eventually, numbers_in_db, store_task, Client, TestServer};

fn body(d: &str) -> Value {
    json!({"project": "SYN", "description": d})
}

/// A request the crash tests send under an idempotency key: a create, or an update of the task
/// a UUID or key names.
enum Req {
    Put(Uuid, Value),
    Patch(&'static str, Value),
}

impl Req {
    async fn send(&self, client: &Client, idem: &str) -> reqwest::Result<(u16, bool, Value)> {
        match self {
            Req::Put(u, body) => client.put(*u, idem, body).await,
            Req::Patch(task, body) => client.patch(task, idem, body).await,
        }
    }

    /// Sends until the answer is not `409 request_in_progress` (on PostgreSQL, a dead node's
    /// claim until its lease lapses), for at most 10 s.
    async fn send_through_leases(&self, client: &Client, idem: &str) -> (u16, bool, Value) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let r = self.send(client, idem).await.unwrap();
            if r.0 != 409 || std::time::Instant::now() > deadline {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The state of the slot of `idem`; `None` once it is purged (or was never made).
fn slot_state(dir: &Path, idem: &str) -> Option<String> {
    let c = rusqlite::Connection::open(dir.join("callsign.sqlite3")).unwrap();
    c.query_row("SELECT state FROM slots WHERE idem_key = ?1", [idem], |r| {
        r.get(0)
    })
    .ok()
}

fn key_in_taskchampion(dir: &Path, uuid: Uuid) -> Option<String> {
    store_task(dir, uuid)?["key"].as_str().map(str::to_owned)
}

/// Sends `req` to a server on the data dir `dir` that is set to crash at `point`; the request
/// fails with the connection.
async fn crash_during(dir: &Path, point: &str, req: &Req, idem: &str, token: &str) {
    let dir = dir.to_str().expect("a UTF-8 temp path");
    crash_on(&["--data-dir", dir], &[], point, req, idem, token).await;
}

/// [`crash_during`] on `database` (`--data-dir DIR` or `--database URL`), with `extra`
/// arguments.
async fn crash_on(
    database: &[&str],
    extra: &[&str],
    point: &str,
    req: &Req,
    idem: &str,
    token: &str,
) {
    let mut server = TestServer::serve(database, extra, &[("CALLSIGN_CRASH_AT", point)]);
    let client = Client::new(&server.url, token);
    let res = req.send(&client, idem).await;
    assert!(
        res.is_err(),
        "the server should have died at {point}, got {res:?}"
    );
    let status = server.wait_for_exit();
    assert!(!status.success(), "aborted, not a clean exit");
}

/// Where a server keeps its data: a SQLite data dir, or a PostgreSQL schema (whose nodes let a
/// dead node's claims lapse after `--claim-lease 1s`).
enum Db {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Db {
    /// `--data-dir DIR` or `--database URL`.
    fn database(&self) -> [&str; 2] {
        match self {
            Db::Sqlite(dir) => ["--data-dir", dir.to_str().expect("a UTF-8 temp path")],
            Db::Postgres(url) => ["--database", url],
        }
    }

    /// `extra` and, on PostgreSQL, the claim lease.
    fn args<'a>(&self, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = extra.to_vec();
        if let Db::Postgres(_) = self {
            args.extend(["--claim-lease", "1s"]);
        }
        args
    }

    fn serve(&self, extra: &[&str], env: &[(&str, &str)]) -> TestServer {
        TestServer::serve(&self.database(), &self.args(extra), env)
    }

    /// The first column of each row `sql` (`$1` is `param`) reads in the allocation database,
    /// as text.
    async fn texts(&self, sql: &str, param: &str) -> Vec<String> {
        match self {
            Db::Sqlite(dir) => {
                let c = rusqlite::Connection::open(dir.join("callsign.sqlite3")).unwrap();
                let mut st = c.prepare(sql).unwrap();
                let params = rusqlite::params_from_iter(sql.contains("$1").then_some(param));
                let rows = st.query_map(params, |r| r.get(0)).unwrap();
                rows.map(Result::unwrap).collect()
            }
            Db::Postgres(url) => {
                let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(conn);
                let param: &(dyn tokio_postgres::types::ToSql + Sync) = &param;
                let params: &[_] = if sql.contains("$1") { &[param] } else { &[] };
                let rows = c.query(sql, params).await.unwrap();
                rows.iter().map(|r| r.get(0)).collect()
            }
        }
    }

    async fn slot_state(&self, idem: &str) -> Option<String> {
        let sql = "SELECT state FROM slots WHERE idem_key = $1";
        self.texts(sql, idem).await.pop()
    }
}

/// Starts a server whose reaper dies while settling the slot of `idem`, which stays pending.
async fn reaper_dies_settling(db: &Db, idem: &str) {
    let mut reaping = db.serve(
        &["--reaper-interval", "100ms"],
        &[("CALLSIGN_CRASH_AT", "reaper.after_task_check")],
    );
    assert!(!reaping.wait_for_exit().success());
    assert_eq!(db.slot_state(idem).await.as_deref(), Some("pending"));
}

async fn after_restart_retry_gets_key_one(point: &str, reaper_first: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "SYN");
    let u = Uuid::new_v4();
    let req = Req::Put(u, body("Crash me"));
    crash_during(dir.path(), point, &req, "crash-key", &token).await;

    let server = TestServer::start(dir.path(), &["--reaper-interval", "200ms"], &[]);
    let client = Client::new(&server.url, &token);
    if reaper_first {
        let d = dir.path().to_owned();
        eventually(10, "reaper commits the stranded slot", || {
            slot_state(&d, "crash-key").as_deref() == Some("committed")
        })
        .await;
    }
    let (status, replayed, task) = req.send(&client, "crash-key").await.unwrap();
    assert_eq!(status, 201, "{point}: {task}");
    assert_eq!(task["key"], "SYN-1", "{point}");
    assert_eq!(
        replayed,
        reaper_first || point == "phase2.after_commit",
        "{point}"
    );
    let (_, _, next) = client
        .put(Uuid::new_v4(), "next", &body("Next"))
        .await
        .unwrap();
    assert_eq!(next["key"], "SYN-2", "{point}: no number skipped");
    assert_eq!(numbers_in_db(dir.path()), vec![1, 2]);
    let d = dir.path().to_owned();
    eventually(10, "key written onto the TaskChampion task", || {
        key_in_taskchampion(&d, u).is_some()
    })
    .await;
}

#[tokio::test]
async fn crash_after_phase1_slot() {
    after_restart_retry_gets_key_one("phase1.after_slot", false).await;
}

#[tokio::test]
async fn crash_after_task_write_is_committed_by_the_reaper() {
    after_restart_retry_gets_key_one("phase2.after_task_write", true).await;
}

#[tokio::test]
async fn crash_after_task_write_then_retry() {
    after_restart_retry_gets_key_one("phase2.after_task_write", false).await;
}

#[tokio::test]
async fn crash_after_commit_replays_and_reaper_writes_the_key() {
    after_restart_retry_gets_key_one("phase2.after_commit", false).await;
}

#[tokio::test]
async fn crash_inside_the_reaper_then_the_next_reaper_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "SYN");
    let u = Uuid::new_v4();
    let req = Req::Put(u, body("Crash me"));
    crash_during(dir.path(), "phase2.after_task_write", &req, "k", &token).await;
    reaper_dies_settling(&Db::Sqlite(dir.path().to_owned()), "k").await;
    let server = TestServer::start(dir.path(), &["--reaper-interval", "100ms"], &[]);
    let d = dir.path().to_owned();
    eventually(10, "reaper commits", || {
        slot_state(&d, "k").as_deref() == Some("committed")
    })
    .await;
    let client = Client::new(&server.url, &token);
    let (_, replayed, task) = req.send(&client, "k").await.unwrap();
    assert!(replayed);
    assert_eq!(task["key"], "SYN-1");
    assert_eq!(numbers_in_db(dir.path()), vec![1]);
}

#[tokio::test]
async fn taskless_slot_fails_after_the_window_and_consumes_no_number() {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "SYN");
    let u = Uuid::new_v4();
    let req = Req::Put(u, body("Crash me"));
    crash_during(dir.path(), "phase1.after_slot", &req, "k", &token).await;
    let server = TestServer::start(
        dir.path(),
        &["--reaper-interval", "200ms", "--idempotency-window", "1s"],
        &[],
    );
    let d = dir.path().to_owned();
    // Failed, then purged past the window (both within a pass or two).
    eventually(10, "reaper fails the slot", || {
        slot_state(&d, "k").as_deref().is_none_or(|s| s == "failed")
    })
    .await;
    assert!(numbers_in_db(dir.path()).is_empty());
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The expired key is treated as new; the UUID is still free.
    let client = Client::new(&server.url, &token);
    let (status, replayed, task) = req.send(&client, "k").await.unwrap();
    assert_eq!((status, replayed), (201, false));
    assert_eq!(task["key"], "SYN-1");
}

/// The same crash points on PostgreSQL, where another node (a fresh process on the same
/// database) takes over: the retry gets the one key once the dead node's lease lapses
/// (`--claim-lease 1s`), the reaper settles a slot whose task was written, and no number is
/// skipped.
mod postgres {
    use super::*;
    use crate::common::create_account_in;

    async fn query_one_text(url: &str, sql: &str) -> Option<String> {
        let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        c.query_opt(sql, &[]).await.unwrap().map(|r| r.get(0))
    }

    async fn numbers(url: &str) -> Vec<i64> {
        let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        c.query("SELECT number FROM keys ORDER BY number", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    }

    async fn crash_then_another_node(point: &str, reaper_first: bool) {
        let Some(pg) = callsign_pgtest::shared() else {
            return;
        };
        let url = pg.fresh_schema("crash").await.unwrap();
        let db = ["--database", url.as_str()];
        let (_, token) = create_account_in(&db, "SYN");
        let u = Uuid::new_v4();
        let req = Req::Put(u, body("Crash me"));
        crash_on(
            &db,
            &["--claim-lease", "1s"],
            point,
            &req,
            "crash-key",
            &token,
        )
        .await;

        let node = TestServer::serve(
            &db,
            &["--claim-lease", "1s", "--reaper-interval", "200ms"],
            &[],
        );
        let client = Client::new(&node.url, &token);
        if reaper_first {
            let state = "SELECT state FROM slots WHERE idem_key = 'crash-key'";
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while query_one_text(&url, state).await.as_deref() != Some("committed") {
                assert!(std::time::Instant::now() < deadline, "{point}: reaper");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        let (status, replayed, task) = req.send_through_leases(&client, "crash-key").await;
        assert_eq!(status, 201, "{point}: {task}");
        assert_eq!(task["key"], "SYN-1", "{point}");
        // After the task write, the dead node's lease lapses for the retry and the reaper at
        // once: whichever takes it first commits, the other replays; one key either way.
        if point != "phase2.after_task_write" || reaper_first {
            assert_eq!(
                replayed,
                reaper_first || point == "phase2.after_commit",
                "{point}"
            );
        }
        let (_, _, next) = client
            .put(Uuid::new_v4(), "next", &body("Next"))
            .await
            .unwrap();
        assert_eq!(next["key"], "SYN-2", "{point}: no number skipped");
        assert_eq!(numbers(&url).await, vec![1, 2], "{point}");
        // The key reaches the task store (written after the commit, or by the reaper).
        let in_store =
            format!("SELECT in_store::text FROM keys WHERE task_uuid = '{u}' AND in_store");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while query_one_text(&url, &in_store).await.is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "{point}: key in store"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    #[tokio::test]
    async fn crash_after_phase1_slot() {
        crash_then_another_node("phase1.after_slot", false).await;
    }

    #[tokio::test]
    async fn crash_after_task_write_is_committed_by_the_reaper() {
        crash_then_another_node("phase2.after_task_write", true).await;
    }

    #[tokio::test]
    async fn crash_after_task_write_then_retry() {
        crash_then_another_node("phase2.after_task_write", false).await;
    }

    #[tokio::test]
    async fn crash_after_commit_replays_and_the_key_reaches_the_store() {
        crash_then_another_node("phase2.after_commit", false).await;
    }
}
