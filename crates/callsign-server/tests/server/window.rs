//! The idempotency window follows what clients do (issue 28), against the real binary: retries
//! of one key over ~5 s raise the window in force above 5 s, it survives a restart, and a fixed
//! window stays fixed.
use std::time::{Duration, Instant};

use serde_json::json;
use uuid::Uuid;

use crate::common::{create_account, Client, TestServer};

async fn metric(url: &str, name: &str) -> Option<f64> {
    let text = reqwest::get(format!("{url}/metrics"))
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find(|l| l.split([' ', '{']).next() == Some(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn basis(url: &str) -> Option<String> {
    let text = reqwest::get(format!("{url}/metrics"))
        .await
        .ok()?
        .text()
        .await
        .ok()?;
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
