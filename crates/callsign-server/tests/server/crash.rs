//! End-to-end crash recovery: the real binary, built with `fault-injection`, aborts at each
//! `CALLSIGN_CRASH_AT` point; after a restart the retry gets the same single key, the reaper
//! settles what was left, and no number is skipped.
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::{create_account, eventually, numbers_in_db, Client, TestServer};

fn body(d: &str) -> Value {
    json!({"project": "SYN", "description": d})
}

fn slot_state(dir: &Path, idem: &str) -> String {
    let c = rusqlite::Connection::open(dir.join("callsign.sqlite3")).unwrap();
    c.query_row("SELECT state FROM slots WHERE idem_key = ?1", [idem], |r| {
        r.get(0)
    })
    .unwrap()
}

fn key_in_taskchampion(dir: &Path, uuid: Uuid) -> Option<String> {
    let c = rusqlite::Connection::open(dir.join("accounts/1/taskchampion.sqlite3")).unwrap();
    let data: Option<String> = c
        .query_row(
            "SELECT data FROM tasks WHERE uuid = ?1",
            [uuid.to_string()],
            |r| r.get(0),
        )
        .ok();
    let v: Value = serde_json::from_str(&data?).ok()?;
    v["key"].as_str().map(str::to_owned)
}

/// Sends one create to a server that is set to crash; the request fails with the connection.
async fn crash_during(dir: &Path, point: &str, u: Uuid, idem: &str, token: &str) {
    let mut server = TestServer::start(dir, &[], &[("CALLSIGN_CRASH_AT", point)]);
    let client = Client::new(&server.url, token);
    let res = client.put(u, idem, &body("Crash me")).await;
    assert!(
        res.is_err(),
        "the server should have died at {point}, got {res:?}"
    );
    let status = server.wait_for_exit();
    assert!(!status.success(), "aborted, not a clean exit");
}

async fn after_restart_retry_gets_key_one(point: &str, reaper_first: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "SYN");
    let u = Uuid::new_v4();
    crash_during(dir.path(), point, u, "crash-key", &token).await;

    let server = TestServer::start(dir.path(), &["--reaper-interval", "200ms"], &[]);
    let client = Client::new(&server.url, &token);
    if reaper_first {
        let d = dir.path().to_owned();
        eventually(10, "reaper commits the stranded slot", || {
            slot_state(&d, "crash-key") == "committed"
        })
        .await;
    }
    let (status, replayed, task) = client.put(u, "crash-key", &body("Crash me")).await.unwrap();
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
    crash_during(dir.path(), "phase2.after_task_write", u, "k", &token).await;
    let mut reaping = TestServer::start(
        dir.path(),
        &["--reaper-interval", "100ms"],
        &[("CALLSIGN_CRASH_AT", "reaper.after_task_check")],
    );
    assert!(!reaping.wait_for_exit().success());
    assert_eq!(slot_state(dir.path(), "k"), "pending");
    let server = TestServer::start(dir.path(), &["--reaper-interval", "100ms"], &[]);
    let d = dir.path().to_owned();
    eventually(10, "reaper commits", || slot_state(&d, "k") == "committed").await;
    let client = Client::new(&server.url, &token);
    let (_, replayed, task) = client.put(u, "k", &body("Crash me")).await.unwrap();
    assert!(replayed);
    assert_eq!(task["key"], "SYN-1");
    assert_eq!(numbers_in_db(dir.path()), vec![1]);
}

#[tokio::test]
async fn taskless_slot_fails_after_the_window_and_consumes_no_number() {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "SYN");
    let u = Uuid::new_v4();
    crash_during(dir.path(), "phase1.after_slot", u, "k", &token).await;
    let server = TestServer::start(
        dir.path(),
        &["--reaper-interval", "200ms", "--idempotency-window", "1s"],
        &[],
    );
    let d = dir.path().to_owned();
    // Failed, then purged past the window (both within a pass or two).
    eventually(10, "reaper fails the slot", || {
        let c = rusqlite::Connection::open(d.join("callsign.sqlite3")).unwrap();
        let state: Option<String> = c
            .query_row("SELECT state FROM slots WHERE idem_key = 'k'", [], |r| {
                r.get(0)
            })
            .ok();
        state.as_deref().is_none_or(|s| s == "failed")
    })
    .await;
    assert!(numbers_in_db(dir.path()).is_empty());
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The expired key is treated as new; the UUID is still free.
    let client = Client::new(&server.url, &token);
    let (status, replayed, task) = client.put(u, "k", &body("Crash me")).await.unwrap();
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

    /// PUT until the answer is not `409 request_in_progress` (a dead node's lease), at most 10 s.
    async fn put_through_leases(client: &Client, u: Uuid, idem: &str) -> (u16, bool, Value) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let r = client.put(u, idem, &body("Crash me")).await.unwrap();
            if r.0 != 409 || std::time::Instant::now() > deadline {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn crash_then_another_node(point: &str, reaper_first: bool) {
        let Some(pg) = callsign_pgtest::shared() else {
            return;
        };
        let url = pg.fresh_schema("crash").await.unwrap();
        let db = ["--database", url.as_str()];
        let (_, token) = create_account_in(&db, "SYN");
        let u = Uuid::new_v4();
        let mut dying = TestServer::serve(
            &db,
            &["--claim-lease", "1s"],
            &[("CALLSIGN_CRASH_AT", point)],
        );
        let res = Client::new(&dying.url, &token)
            .put(u, "crash-key", &body("Crash me"))
            .await;
        assert!(
            res.is_err(),
            "the node should have died at {point}: {res:?}"
        );
        assert!(!dying.wait_for_exit().success());

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
        let (status, replayed, task) = put_through_leases(&client, u, "crash-key").await;
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
