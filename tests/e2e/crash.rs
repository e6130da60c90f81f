//! A client SIGKILLed in the middle of a sync (a request in flight), then restarted: the stale
//! lock is taken over, the dead process's `in_progress` rows are resent under the same keys, and
//! every task ends up with exactly one key: nothing lost, nothing duplicated.
use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use callsign_sync::lock::SyncLock;
use callsign_sync::{Engine, NewTaskInput};

use crate::fixture::{keyed, server_tasks, Cli, TestServer};

const TASKS: usize = 3000;

#[test]
fn client_killed_mid_sync_resumes_without_loss_or_duplicates() -> Result<()> {
    let (server, account) = TestServer::start("CRA")?;
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&server.url, &account.token)?;
    let engine = Engine::open(home.path())?;
    for i in 0..TASKS {
        engine.create(NewTaskInput {
            description: format!("task {i}"),
            ..NewTaskInput::default()
        })?;
    }

    let mut child = cli
        .command(&["sync"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        if engine.status()?.in_flight > 0 {
            child.kill()?; // SIGKILL: no cleanup, lock file and in_progress rows stay behind
            child.wait()?;
            break;
        }
        if child.try_wait()?.is_some() || Instant::now() > end {
            bail!("the sync finished (or hung) before a request was seen in flight");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let stale = SyncLock::holder(home.path()).expect("the dead process's lock line");
    assert_eq!(stale.pid, child.id());
    assert!(
        engine.status()?.in_flight > 0,
        "rows left in_progress by the dead process"
    );

    let out = cli.output(&["sync"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "restarted sync failed: {err}");
    assert!(err.contains("took over the sync lock"), "{err}");
    assert!(SyncLock::holder(home.path()).is_none(), "released cleanly");

    let local: BTreeMap<String, String> = keyed(&cli.list()?)?.into_iter().collect();
    let distinct: BTreeSet<&String> = local.values().collect();
    assert_eq!((local.len(), distinct.len()), (TASKS, TASKS));
    let remote = server_tasks(&server.url, &account.token)?;
    assert_eq!(remote.len(), TASKS, "no task created twice");
    let numbers: BTreeSet<u64> = remote.iter().filter_map(|t| t.number).collect();
    assert_eq!(
        numbers,
        (1..=TASKS as u64).collect::<BTreeSet<_>>(),
        "no gaps, no second numbers"
    );
    for t in &remote {
        assert_eq!(
            local.get(&t.uuid.to_string()),
            t.key.as_ref(),
            "device and server agree"
        );
    }
    Ok(())
}
