//! The server dies (fault injection: `abort()`, like a power cut) in the middle of a client's
//! batch, at each point of its create protocol. After a restart, the client's retry — same
//! idempotency keys, same bodies — ends with every task numbered exactly once, `1..N`, no gaps.
use std::collections::BTreeSet;

use anyhow::Result;

use crate::fixture::{keyed, server_tasks, Cli, TestServer};

const TASKS: usize = 20;

fn crash_during_sync_then_recover(point: &str) -> Result<()> {
    let (mut server, account) = TestServer::start("CRS")?;
    let port = server.port();
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&server.url, &account.token)?;
    let uuids: Vec<String> = (1..=TASKS)
        .map(|i| cli.add(&format!("task {i}"), &[]))
        .collect::<Result<_>>()?;

    server.serve_crashing(port, Some(point))?;
    let out = cli.output(&["sync"])?;
    assert!(
        !out.status.success(),
        "{point}: the server died, the sync must fail"
    );
    assert!(server.exited(), "{point}: fault injection did not fire");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("stay queued"), "{point}: {err}");

    server.serve(port)?;
    cli.ok(&["sync"])?;
    let local: std::collections::HashMap<String, String> =
        keyed(&cli.list()?)?.into_iter().collect();
    let keys: BTreeSet<&String> = local.values().collect();
    assert_eq!((local.len(), keys.len()), (TASKS, TASKS), "{point}");
    for u in &uuids {
        assert!(local.contains_key(u), "{point}: task {u} lost");
    }
    let remote = server_tasks(&server.url, &account.token)?;
    let numbers: BTreeSet<u64> = remote.iter().filter_map(|t| t.number).collect();
    assert_eq!(remote.len(), TASKS, "{point}: no duplicates on the server");
    assert_eq!(
        numbers,
        (1..=TASKS as u64).collect::<BTreeSet<_>>(),
        "{point}: 1..N, no gaps"
    );
    for t in &remote {
        assert_eq!(
            local.get(&t.uuid.to_string()),
            t.key.as_ref(),
            "{point}: device agrees"
        );
    }
    Ok(())
}

#[test]
fn server_crash_after_slot() -> Result<()> {
    crash_during_sync_then_recover("phase1.after_slot")
}

#[test]
fn server_crash_after_task_write_before_number() -> Result<()> {
    crash_during_sync_then_recover("phase2.after_task_write")
}

#[test]
fn server_crash_after_commit_before_answer() -> Result<()> {
    crash_during_sync_then_recover("phase2.after_commit")
}
