//! Reconnect: while the server cannot be reached the loop probes `/healthz` and syncs the moment
//! it answers, instead of waiting out its backoff. The test holds the loop to a long backoff
//! and checks the keys arrive long before it ends; the measurement (ignored, prints a table)
//! times server-back → every key visible with the probe and without it.
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use callsign_sync::backoff::Backoff;
use callsign_sync::{Engine, NewTaskInput, Options};
use uuid::Uuid;

use crate::fixture::{free_port, Cli, TestServer};

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Waits (bounded) until the loop has failed to reach the server with tasks queued.
async fn until_offline(engine: &Engine) -> Result<()> {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let s = engine.status()?;
        if s.online == Some(false) && s.pending > 0 && s.next_attempt_at.is_some() {
            return Ok(());
        }
        if Instant::now() > end {
            bail!("the loop did not report offline within 20 s: {s:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls (every 5 ms, bounded) until every task has a key; returns when.
async fn until_keyed(engine: &Engine, uuids: &[Uuid], limit: Duration) -> Result<Instant> {
    let end = Instant::now() + limit;
    loop {
        let mut all = true;
        for u in uuids {
            all &= engine.get(&u.to_string())?.key.is_some();
        }
        if all {
            return Ok(Instant::now());
        }
        if Instant::now() > end {
            bail!("not every task had its key within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// One outage: the loop runs with the server down, `n` tasks are captured, the loop fails
/// `failures` times or more, then the server starts. Returns server-listening → all keys, and
/// how long the backoff still had to run when the server came back.
async fn outage(
    server: &mut TestServer,
    port: u16,
    engine: &Engine,
    n: usize,
    offline_for: Duration,
) -> Result<(Duration, Duration)> {
    let mut uuids = Vec::new();
    for i in 0..n {
        let t = engine.create(NewTaskInput {
            description: format!("captured offline {i}"),
            project: Some("REC".into()),
            ..Default::default()
        })?;
        uuids.push(t.uuid);
    }
    until_offline(engine).await?;
    tokio::time::sleep(offline_for).await;
    let next = engine.status()?.next_attempt_at;
    server.serve(port)?;
    let back = Instant::now();
    let backoff_left = next
        .map(|t| (t - chrono::Utc::now()).to_std().unwrap_or_default())
        .unwrap_or_default();
    let keyed = until_keyed(engine, &uuids, Duration::from_secs(90)).await?;
    Ok((keyed - back, backoff_left))
}

fn logged_in_engine(
    home: &std::path::Path,
    url: &str,
    token: &str,
    opts: Options,
) -> Result<Engine> {
    Cli::new(home).login(url, token)?;
    Ok(Engine::open_with(home, opts)?)
}

#[test]
fn keys_arrive_when_the_server_returns_not_when_the_backoff_ends() -> Result<()> {
    let (mut server, account) = TestServer::prepare("REC")?;
    let port = free_port();
    let home = tempfile::tempdir()?;
    // A backoff of 20-40 s after the first failure: only the probe can sync sooner.
    let opts = Options {
        backoff: Backoff {
            base: Duration::from_secs(40),
            ..Backoff::default()
        },
        ..Options::default()
    };
    let url = format!("http://127.0.0.1:{port}");
    let engine = logged_in_engine(home.path(), &url, &account.token, opts)?;
    runtime()?.block_on(async {
        engine.start();
        let (took, backoff_left) =
            outage(&mut server, port, &engine, 3, Duration::from_millis(300)).await?;
        assert!(
            backoff_left > Duration::from_secs(15),
            "the loop was backing off ({backoff_left:?} left)"
        );
        assert!(
            took < backoff_left,
            "keys came {took:?} after the server returned, but the backoff had {backoff_left:?} \
             left: the probe did not find the server"
        );
        let s = engine.status()?;
        assert_eq!((s.pending, s.in_flight, s.online), (0, 0, Some(true)));
        engine.stop().await;
        anyhow::Ok(())
    })
}

/// "median (min .. max)" in ms.
fn summary(mut v: Vec<Duration>) -> String {
    v.sort();
    let ms = |d: Duration| d.as_millis();
    format!(
        "{} ({} .. {})",
        ms(v[v.len() / 2]),
        ms(v[0]),
        ms(v[v.len() - 1])
    )
}

#[test]
#[ignore = "measurement; run with --ignored --nocapture"]
fn measure_reconnect_server_back_to_all_keys() -> Result<()> {
    const RUNS: usize = 5;
    const TASKS: usize = 10;
    let rt = runtime()?;
    let mut rows = Vec::new();
    for (name, probe_every) in [
        (
            "probe every 500 ms (default)",
            Options::default().probe_every,
        ),
        ("no probe (backoff only: baseline)", None),
    ] {
        let (mut server, account) = TestServer::prepare("REC")?;
        let port = free_port();
        let home = tempfile::tempdir()?;
        let url = format!("http://127.0.0.1:{port}");
        let opts = Options {
            probe_every,
            ..Options::default()
        };
        let engine = logged_in_engine(home.path(), &url, &account.token, opts)?;
        let times = rt.block_on(async {
            engine.start();
            let mut times = Vec::new();
            for _ in 0..RUNS {
                server.stop();
                // Down long enough for the backoff to grow (0.5, 1, 2, 4 s ...), as in a real
                // outage of a quarter of a minute.
                let (took, _) =
                    outage(&mut server, port, &engine, TASKS, Duration::from_secs(15)).await?;
                times.push(took);
            }
            engine.stop().await;
            anyhow::Ok(times)
        })?;
        rows.push((name, summary(times)));
    }
    println!("\nserver back -> all {TASKS} keys visible, {RUNS} outages of ~15 s, ms: median (min .. max)");
    println!("| loop | server back -> keys |\n|---|---|");
    for (name, s) in rows {
        println!("| {name} | {s} |");
    }
    Ok(())
}
