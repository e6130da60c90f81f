//! The measurements issue 3 asks for, as ignored tests that print a table (speed is measured,
//! not asserted): `cargo test -p callsign-e2e -- --ignored --nocapture measure`.
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use callsign_sync::{Engine, Event, NewTaskInput, TaskFilter};

use crate::devices::Watcher;
use crate::fixture::{Cli, TestServer};

/// "median (min .. max)".
fn summary(mut v: Vec<Duration>) -> String {
    v.sort();
    format!(
        "{:.1?} ({:.1?} .. {:.1?})",
        v[v.len() / 2],
        v[0],
        v[v.len() - 1]
    )
}

fn wait_key(engine: &Engine, uuid: &str) -> Result<()> {
    let end = Instant::now() + Duration::from_secs(30);
    while engine.get(uuid)?.key.is_none() {
        if Instant::now() > end {
            bail!("no key for {uuid} within 30 s");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

#[test]
#[ignore = "measurement; run with --ignored --nocapture"]
fn measure_add_to_key_visible() -> Result<()> {
    let (server, account) = TestServer::start("LAT")?;
    // 1. The CLI beside a running loop in another process (`callsign watch`, like the app).
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&server.url, &account.token)?;
    let watcher = Watcher::start(&cli)?;
    let reader = Engine::open(home.path())?;
    let mut cli_times = Vec::new();
    for i in 0..50 {
        // Back-to-back adds would phase-lock to the loop's 250 ms poll; spread the start times.
        std::thread::sleep(Duration::from_millis((i * 37 % 250) as u64));
        let t0 = Instant::now();
        let uuid = cli.add(&format!("cli {i}"), &[])?;
        wait_key(&reader, &uuid)?;
        cli_times.push(t0.elapsed());
    }
    drop(watcher);

    // 2. The engine's own loop in-process (the desktop app's path): create, then the event.
    let home2 = tempfile::tempdir()?;
    Cli::new(home2.path()).login(&server.url, &account.token)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let app_times = rt.block_on(async {
        let engine = Engine::open(home2.path())?;
        let mut events = engine.subscribe();
        engine.start();
        let mut times = Vec::new();
        for i in 0..50 {
            let t0 = Instant::now();
            let t = engine.create(NewTaskInput {
                description: format!("app {i}"),
                ..Default::default()
            })?;
            loop {
                match tokio::time::timeout(Duration::from_secs(30), events.recv()).await?? {
                    Event::TaskChanged { uuid }
                        if uuid == t.uuid && engine.get(&uuid.to_string())?.key.is_some() =>
                    {
                        break
                    }
                    _ => {}
                }
            }
            times.push(t0.elapsed());
        }
        engine.stop().await;
        anyhow::Ok(times)
    })?;
    println!("\n| path (loopback, 50 tasks) | median add -> key visible (min .. max) |");
    println!("|---|---|");
    println!(
        "| `callsign add` beside `callsign watch` (other process, 250 ms poll) | {} |",
        summary(cli_times)
    );
    println!(
        "| engine create with its own loop (desktop app path) | {} |",
        summary(app_times)
    );
    Ok(())
}

#[test]
#[ignore = "measurement; run with --ignored --nocapture"]
fn measure_sync_10000_offline_tasks() -> Result<()> {
    let (server, account) = TestServer::start("BIG")?;
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&server.url, &account.token)?;
    let engine = Engine::open(home.path())?;
    let t0 = Instant::now();
    for i in 0..10_000 {
        engine.create(NewTaskInput {
            description: format!("offline {i}"),
            ..Default::default()
        })?;
    }
    let capture = t0.elapsed();
    let t1 = Instant::now();
    cli.ok(&["sync", "--timeout", "600"])?;
    let sync = t1.elapsed();
    let list = engine.list(TaskFilter::default())?;
    let keyed = list.iter().filter(|t| t.key.is_some()).count();
    assert_eq!(keyed, 10_000);
    println!("\n| 10,000 offline tasks | time |");
    println!("|---|---|");
    println!("| capture (engine create, one transaction each) | {capture:?} |");
    println!("| one `callsign sync` until every task has its key | {sync:?} |");
    Ok(())
}
