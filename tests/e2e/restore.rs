//! The worst day, as an admin lives it (issue 41): `callsign-server backup` while the server
//! serves and devices capture, `restore` with the server stopped (SQLite), or `recovery start`
//! after a database was put back by other means (PostgreSQL); then every project numbers
//! nothing until its recovery ends, while devices keep capturing.
use std::time::Duration;

use anyhow::{anyhow, Result};

use crate::cli::{wait_for, Cli};
use crate::fixture::{get_text, server_tasks, TestServer};

#[test]
fn after_a_restore_nothing_is_numbered_until_recovery_ends() -> Result<()> {
    let dirs = [
        tempfile::tempdir()?,
        tempfile::tempdir()?,
        tempfile::tempdir()?,
    ];
    let (mut server, account) = TestServer::start("SYN")?;
    let port = server.port();
    let a = Cli::new(dirs[0].path());
    a.login(&server.url, &account.token)?;
    let mut before = Vec::new();
    for i in 1..=3 {
        before.push(a.add(&format!("captured before the backup {i}"), &[])?);
    }
    a.ok(&["sync"])?;

    let backup = dirs[2].path().join("last-night");
    if server.is_sqlite() {
        // While the server serves.
        let made = server.run(&["backup", "--to", &backup.display().to_string()])?;
        assert_eq!(made["accounts"], serde_json::json!([account.id]), "{made}");
    }
    for i in 4..=5 {
        a.add(&format!("captured after the backup {i}"), &[])?;
    }
    a.ok(&["sync"])?;
    // A device set up after the backup was taken.
    let d_dir = tempfile::tempdir()?;
    let d = Cli::new(d_dir.path());
    d.login(&server.url, &server.token(&account, "laptop-d")?)?;
    let d_task = d.add("captured on the new laptop", &[])?;
    d.ok(&["sync"])?;

    server.stop();
    if server.is_sqlite() {
        let restored = server.run(&["restore", "--from", &backup.display().to_string()])?;
        let recovering = &restored["recovering"];
        assert_eq!(recovering[0]["prefix"], "SYN", "{restored}");
        assert_eq!(recovering[0]["last"], 3, "the backup's counter: {restored}");
        // A second restore over a running server is refused, and nothing is replaced.
        server.serve(port)?;
        let refused = server.run_failing(&["restore", "--from", &backup.display().to_string()])?;
        assert!(refused.contains("stop it before restoring"), "{refused}");
    } else {
        let declared = server.run(&["recovery", "start"])?;
        assert_eq!(declared[0]["reason"], "declared", "{declared}");
        server.serve(port)?;
    }
    let status = server.run(&["recovery", "status"])?;
    assert_eq!(status[0]["prefix"], "SYN", "{status}");
    if server.is_sqlite() {
        // The backup never knew device D's token: it is told why, and keeps its task.
        let out = d.output(&["sync"])?;
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{said}");
        assert!(
            said.contains("restored on") && said.contains("from a backup taken"),
            "{said}"
        );
        assert!(
            said.contains("Your tasks are kept on this device"),
            "{said}"
        );
        assert_eq!(
            d.json(&["show", &d_task])?["description"],
            "captured on the new laptop"
        );
    }
    // The counter as it stands: 3 after the restore; 6 where nothing was rolled back.
    let last = status[0]["last"].clone();
    assert_eq!(last, if server.is_sqlite() { 3 } else { 6 }, "{status}");

    // Every key of the backup still names its task.
    let on_server = server_tasks(&server.url, &account.token)?;
    for (i, uuid) in before.iter().enumerate() {
        let t = on_server
            .iter()
            .find(|t| t.uuid.to_string() == *uuid)
            .ok_or_else(|| anyhow!("{uuid} lost"))?;
        assert_eq!(t.key.as_deref(), Some(format!("SYN-{}", i + 1).as_str()));
    }

    let metrics = format!("{}/metrics", server.url);
    let gauge = |n: u32| {
        let line = format!("callsign_recovering_projects {n}");
        let metrics = metrics.clone();
        move || Ok(get_text(&metrics)?.lines().any(|l| l == line))
    };
    wait_for(Duration::from_secs(10), "the gauge at 1", gauge(1))?;

    // Another device captures while the project recovers: kept, provisional.
    let b = Cli::new(dirs[1].path());
    b.login(&server.url, &account.token)?;
    let during = b.add("captured while the server recovers", &[])?;
    let started = std::time::Instant::now();
    let out = b.output(&["sync"])?;
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "not synced: {said}");
    assert!(
        said.contains("recovering from a backup") && said.contains("keeps its place"),
        "says why, in plain words: {said}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "answers at once, not after waiting to retry: {:?}",
        started.elapsed()
    );
    let shown = b.json(&["show", &during])?;
    assert_eq!(shown["key"], serde_json::Value::Null, "{shown}");
    let waiting = shown["waiting"].as_str().unwrap_or_default();
    assert!(
        waiting.starts_with("waiting for its key: the server is recovering from a backup"),
        "the task says why it waits: {shown}"
    );
    let status = server.run(&["recovery", "status"])?;
    assert_eq!(
        status[0]["last"], last,
        "nothing numbered while recovering: {status}"
    );

    // The admin ends it: the capture gets the next number on the device's next sync.
    let ended = server.run(&["recovery", "end", "--account", &account.id.to_string()])?;
    assert_eq!(ended[0]["prefix"], "SYN", "{ended}");
    assert_eq!(server.run(&["recovery", "status"])?, serde_json::json!([]));
    wait_for(Duration::from_secs(10), "the gauge at 0", gauge(0))?;
    b.ok(&["sync"])?;
    let key = b.json(&["show", &during])?["key"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("no key after recovery ended"))?;
    let n: u64 = key.strip_prefix("SYN-").unwrap_or("0").parse()?;
    assert_eq!(
        Some(n - 1),
        last.as_u64(),
        "the next number after the counter: {key}"
    );
    Ok(())
}
