//! Two devices on one account, each with a running sync loop (`callsign watch`) while a second
//! process (the CLI) queues into its data dir: 200 distinct keys 1..200, and both devices end up
//! with the same key for every UUID.
use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Stdio};
use std::time::Duration;

use anyhow::Result;

use crate::fixture::{keyed, server_tasks, wait_for, Cli, TestServer};

/// A `callsign watch` process, stopped with SIGTERM (then SIGKILL) on drop.
pub struct Watcher(Child);

impl Watcher {
    pub fn start(cli: &Cli) -> Result<Watcher> {
        let child = cli
            .command(&["watch"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        Ok(Watcher(child))
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        for _ in 0..100 {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn two_devices_create_concurrently_and_agree_on_every_key() -> Result<()> {
    let (server, account) = TestServer::start("DUO")?;
    let homes = [tempfile::tempdir()?, tempfile::tempdir()?];
    let clis = [Cli::new(homes[0].path()), Cli::new(homes[1].path())];
    clis[0].login(&server.url, &account.token)?;
    clis[1].login(&server.url, &server.token(&account, "second")?)?;
    let watchers = [Watcher::start(&clis[0])?, Watcher::start(&clis[1])?];

    std::thread::scope(|s| -> Result<()> {
        let handles: Vec<_> = clis
            .iter()
            .enumerate()
            .map(|(d, cli)| {
                s.spawn(move || -> Result<()> {
                    for i in 1..=100 {
                        cli.add(&format!("device {d} task {i}"), &[])?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().expect("adder thread")?;
        }
        Ok(())
    })?;

    // The running loops pick up the CLI's rows by themselves (no `sync` command).
    for cli in &clis {
        wait_for(
            Duration::from_secs(60),
            "the loop to drain the outbox",
            || {
                let s = cli.json(&["status"])?;
                Ok(s["pending"] == 0 && s["in_flight"] == 0)
            },
        )?;
    }
    // Beside a running loop, `callsign sync` does not send: it waits for that loop's drain.
    let out = clis[0].output(&["sync"])?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(watchers);
    for cli in &clis {
        cli.ok(&["sync"])?; // a final pull
    }

    let server_side = server_tasks(&server.url, &account.token)?;
    let numbers: BTreeSet<u64> = server_side.iter().filter_map(|t| t.number).collect();
    assert_eq!(server_side.len(), 200);
    assert_eq!(numbers, (1..=200).collect::<BTreeSet<_>>());
    let views: Vec<BTreeMap<String, String>> = clis
        .iter()
        .map(|c| Ok(keyed(&c.list()?)?.into_iter().collect()))
        .collect::<Result<_>>()?;
    assert_eq!(views[0].len(), 200);
    assert_eq!(
        views[0], views[1],
        "both devices list the same key for each UUID"
    );
    let expected: BTreeMap<String, String> = server_side
        .iter()
        .map(|t| (t.uuid.to_string(), t.key.clone().unwrap_or_default()))
        .collect();
    assert_eq!(views[0], expected, "and the server agrees");
    Ok(())
}
