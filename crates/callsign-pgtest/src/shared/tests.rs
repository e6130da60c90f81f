use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::*;

/// What the child prints before its cluster's port and dir.
const CHILD_LINE: &str = "pgtest-child";

/// The shared cluster lives in a `static`, which is never dropped: this runs a child test
/// process that starts it and exits, then checks that the watchdog stopped the server and
/// removed its dir.
#[test]
fn the_shared_cluster_stops_when_the_process_ends() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "shared::tests::child_starts_the_shared_cluster"])
        .args(["--ignored", "--nocapture", "--test-threads=1"])
        .env_remove(PG_URL_ENV)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    if stderr.contains("postgres tests skipped") {
        return;
    }
    // The harness prints `test <name> ... ` before the test's own output, on the same line.
    let (_, line) = stdout
        .split_once(CHILD_LINE)
        .unwrap_or_else(|| panic!("no `{CHILD_LINE}` line:\n{stdout}\n{stderr}"));
    let line = line.lines().next().unwrap_or_default();
    let (port, dir) = line.trim().split_once(' ').unwrap();
    let (port, dir): (u16, PathBuf) = (port.parse().unwrap(), dir.into());

    let began = Instant::now();
    let addr = ([127, 0, 0, 1], port).into();
    let stopped =
        || TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err() && !dir.exists();
    while !stopped() {
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "30 s after the process ended, port {port} accepts or {} exists",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("stopped {:?} after the child exited", began.elapsed());
}

/// The child of `the_shared_cluster_stops_when_the_process_ends`.
#[test]
#[ignore = "run in a child process by the_shared_cluster_stops_when_the_process_ends"]
fn child_starts_the_shared_cluster() {
    if let Some(cluster) = shared_cluster() {
        let url = cluster.url().to_owned();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client.batch_execute("SELECT 1").await.unwrap();
        });
        println!(
            "{CHILD_LINE} {} {}",
            cluster.port(),
            cluster.dir().display()
        );
    }
}

#[test]
fn reasons_fit_on_one_line() {
    let why = "initdb failed (exit status: 1): line one\n\n  line two  \nserver log:\n";
    assert_eq!(
        one_line(why),
        "initdb failed (exit status: 1): line one | line two | server log:"
    );
}
