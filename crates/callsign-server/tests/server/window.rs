//! The idempotency window follows what clients do (issue 28), against the real binary: retries
//! of one key over ~5 s raise the window in force above 5 s, it survives a restart, and a fixed
//! window stays fixed.
use std::time::{Duration, Instant};

use serde_json::json;
use uuid::Uuid;

use crate::common::{create_account, Client, TestServer};

async fn scrape(url: &str) -> Option<String> {
    reqwest::get(format!("{url}/metrics"))
        .await
        .ok()?
        .text()
        .await
        .ok()
}

async fn metric(url: &str, name: &str) -> Option<f64> {
    let text = scrape(url).await?;
    text.lines()
        .find(|l| l.split([' ', '{']).next() == Some(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn basis(url: &str) -> Option<String> {
    let text = scrape(url).await?;
    text.lines()
        .filter(|l| l.starts_with("callsign_idempotency_window_basis{"))
        .find(|l| l.ends_with(" 1"))
        .and_then(|l| l.split('"').nth(1).map(str::to_owned))
}

async fn p99_at_least(url: &str, secs: f64) -> bool {
    metric(url, "callsign_idempotency_window_observed_p99_seconds")
        .await
        .is_some_and(|w| w >= secs)
}

#[tokio::test]
async fn retries_over_5s_raise_the_window_above_5s_and_it_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "WIN");
    let args = [
        "--idempotency-window-min",
        "2s",
        "--idempotency-window-max",
        "1h",
        "--reaper-interval",
        "200ms",
    ];
    let server = TestServer::start(dir.path(), &args, &[]);
    let url = server.url.clone();
    assert_eq!(
        metric(&url, "callsign_idempotency_window_seconds").await,
        Some(2.0)
    );
    assert_eq!(basis(&url).await.as_deref(), Some("min"));

    // One client retries the same create for about 5 s.
    let client = Client::new(&url, &token);
    let uuid = Uuid::new_v4();
    let body = json!({"project": "WIN", "description": "retried"});
    let start = Instant::now();
    let (status, _, _) = client.put(uuid, "k-retried", &body).await.unwrap();
    assert_eq!(status, 201);
    while start.elapsed() < Duration::from_millis(5_200) {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let (status, replayed, _) = client.put(uuid, "k-retried", &body).await.unwrap();
        assert_eq!((status, replayed), (201, true));
    }
    let mut seen = None;
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        // Once a reaper pass has seen the last retry.
        if p99_at_least(&url, 5.0).await {
            seen = metric(&url, "callsign_idempotency_window_seconds").await;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let w = seen.expect("a reaper pass saw the 5 s of retries within 15 s");
    let p99 = metric(&url, "callsign_idempotency_window_observed_p99_seconds").await;
    println!("window {w} s (p99 {p99:?}, basis {:?})", basis(&url).await);
    assert!(p99.is_some_and(|p| p >= 5.0), "{p99:?}");
    assert!(w >= 10.0, "p99 ×2: {w}");

    // A restart keeps the window (it is stored), before any reaper pass has run.
    drop(server);
    let server = TestServer::start(
        dir.path(),
        &[
            "--idempotency-window-min",
            "2s",
            "--idempotency-window-max",
            "1h",
        ],
        &[],
    );
    let after = metric(&server.url, "callsign_idempotency_window_seconds").await;
    assert!(
        after.is_some_and(|a| a >= 10.0),
        "after a restart: {after:?}"
    );
}

#[tokio::test]
async fn a_fixed_window_stays_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "FIX");
    let server = TestServer::start(
        dir.path(),
        &["--idempotency-window", "10m", "--reaper-interval", "200ms"],
        &[],
    );
    let client = Client::new(&server.url, &token);
    let uuid = Uuid::new_v4();
    let body = json!({"project": "FIX", "description": "retried"});
    for _ in 0..5 {
        client.put(uuid, "k", &body).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let url = server.url.clone();
    // Several reaper passes, each with the retries as evidence.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        metric(&url, "callsign_idempotency_window_seconds").await,
        Some(600.0)
    );
    assert_eq!(basis(&url).await.as_deref(), Some("fixed"));
}

#[test]
fn auto_is_the_default_and_a_bad_value_is_refused() {
    let out = std::process::Command::new(crate::common::BIN)
        .args([
            "serve",
            "--data-dir",
            "/nonexistent",
            "--idempotency-window",
            "soon",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("expected `auto` or a duration"), "{err}");
    let help = std::process::Command::new(crate::common::BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("[default: auto]"), "{help}");
}

fn count(dir: &std::path::Path, sql: &str, idem: &str) -> i64 {
    let c = rusqlite::Connection::open(dir.join("callsign.sqlite3")).unwrap();
    c.query_row(sql, [idem], |r| r.get(0)).unwrap()
}

#[tokio::test]
async fn slots_past_the_window_are_purged_and_a_late_retry_keeps_its_key_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "PUR");
    let server = TestServer::start(
        dir.path(),
        &[
            "--idempotency-window-min",
            "2s",
            "--idempotency-window-max",
            "1h",
            "--reaper-interval",
            "200ms",
        ],
        &[],
    );
    let client = Client::new(&server.url, &token);
    let uuid = Uuid::new_v4();
    let body = json!({"project": "PUR", "description": "purged"});
    let (status, replayed, first) = client.put(uuid, "k-purged", &body).await.unwrap();
    assert_eq!(
        (status, replayed, first["key"].as_str()),
        (201, false, Some("PUR-1"))
    );
    // Inside the window: a replay from the stored slot.
    let (status, replayed, _) = client.put(uuid, "k-purged", &body).await.unwrap();
    assert_eq!((status, replayed), (201, true));

    // Past the window (2 s): the reaper purges the slot and leaves a tombstone.
    let d = dir.path().to_owned();
    let slot = "SELECT COUNT(*) FROM slots WHERE idem_key = ?1";
    let tomb = "SELECT COUNT(*) FROM purged_slots WHERE idem_key = ?1";
    let deadline = Instant::now() + Duration::from_secs(15);
    while count(&d, slot, "k-purged") > 0 {
        assert!(
            Instant::now() < deadline,
            "the slot was not purged within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(count(&d, tomb, "k-purged"), 1);

    // A late retry is a new request: the task's UUID keeps its key, no number is spent, and
    // the retry counts as evidence that the window is too short.
    let (status, replayed, again) = client.put(uuid, "k-purged", &body).await.unwrap();
    assert_eq!((status, replayed), (200, false), "the task exists: {again}");
    assert_eq!(again["key"], "PUR-1");
    assert_eq!(crate::common::numbers_in_db(&d).len(), 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let late = metric(
            &server.url,
            "callsign_idempotency_window_late_retry_seconds",
        )
        .await;
        if late.is_some_and(|l| l >= 2.0) {
            let w = metric(&server.url, "callsign_idempotency_window_seconds").await;
            assert!(w.is_some_and(|w| w >= 4.0), "{w:?}");
            break;
        }
        assert!(Instant::now() < deadline, "late retry not seen: {late:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let purged = scrape(&server.url).await.unwrap_or_default();
    assert!(
        purged.contains("callsign_reaper_settled_total{outcome=\"purged\"} "),
        "{purged}"
    );
}
