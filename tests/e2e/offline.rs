//! Captured offline, synced in one go: keys follow capture order; `add` never waits for the
//! network.
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::fixture::{free_port, keyed, server_tasks, Cli, TestServer};

#[test]
fn two_hundred_offline_tasks_get_keys_in_capture_order_in_one_sync() -> Result<()> {
    let (mut server, account) = TestServer::prepare("PFX")?;
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&url, &account.token)?; // server down: the login is saved, projects come later
    let mut uuids = Vec::new();
    for i in 1..=200 {
        uuids.push(cli.add(&format!("offline task {i}"), &["--project", "PFX"])?);
    }
    let listed = cli.list()?;
    assert_eq!(listed.len(), 200);
    for t in &listed {
        assert_eq!(t["sync_state"], "provisional", "{t}");
        assert!(t["key"].is_null(), "{t}");
    }
    let text = cli.ok(&["list"])?;
    assert_eq!(
        text.lines().filter(|l| l.starts_with('~')).count(),
        200,
        "{text}"
    );

    server.serve(port)?;
    cli.ok(&["sync"])?;

    let pairs = keyed(&cli.list()?)?;
    let by_uuid: std::collections::HashMap<_, _> = pairs.into_iter().collect();
    for (i, u) in uuids.iter().enumerate() {
        assert_eq!(by_uuid[u], format!("PFX-{}", i + 1), "task {i} (uuid {u})");
    }
    let status = cli.json(&["status"])?;
    assert_eq!(
        (status["pending"].as_u64(), status["failed"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(server_tasks(&server.url, &account.token)?.len(), 200);
    Ok(())
}

#[test]
fn add_with_the_server_unreachable_returns_at_once_and_sync_says_why() -> Result<()> {
    // A listener that never accepts: a client that tried to talk to it would hang, not fail fast.
    let silent = std::net::TcpListener::bind("127.0.0.1:0")?;
    let silent_url = format!("http://{}", silent.local_addr()?);
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&silent_url, "cs_whatever")?;
    let started = Instant::now();
    let out = cli.output(&["add", "captured on a plane", "--project", "PFX"])?;
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < Duration::from_secs(2), "add took {took:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("captured on a plane"));

    // Nothing listens here at all: `sync` fails at once with a plain message.
    let closed = format!("http://127.0.0.1:{}", free_port());
    cli.login(&closed, "cs_whatever")?;
    let out = cli.output(&["sync"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("cannot reach the server") && err.contains("stay queued"),
        "{err}"
    );
    assert!(
        !err.contains("Error {") && !err.contains("kind:"),
        "a Debug dump: {err}"
    );
    let listed = cli.list()?;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["sync_state"], "provisional");
    assert!(
        listed[0]["waiting"]
            .as_str()
            .unwrap_or_default()
            .contains("offline"),
        "{}",
        listed[0]
    );
    Ok(())
}
