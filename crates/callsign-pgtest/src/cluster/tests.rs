use std::net::TcpStream;
use std::time::Duration;

use super::*;
use crate::testing::{connect, start_or_skip, text};

#[tokio::test]
async fn test_settings_reach_the_server_and_drop_stops_it() {
    let Some(cluster) = start_or_skip(Options::default()) else {
        return;
    };
    let Timings { initdb, start } = cluster.timings();
    println!("initdb {initdb:?}, pg_ctl start {start:?}");
    let url = cluster.url().to_owned();
    assert_eq!(
        url,
        format!("postgres://postgres@127.0.0.1:{}/postgres", cluster.port())
    );
    assert_eq!(text(&url, "SHOW fsync").await, "off");
    assert_eq!(text(&url, "SHOW max_connections").await, "200");
    assert_eq!(text(&url, "SHOW listen_addresses").await, "127.0.0.1");

    let (port, dir) = (cluster.port(), cluster.dir().to_owned());
    assert!(dir.join("data/PG_VERSION").is_file());
    let began = Instant::now();
    drop(cluster);
    println!("drop (pg_ctl stop, rm -rf) {:?}", began.elapsed());
    let refused =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(2));
    assert!(
        refused.is_err(),
        "port {port} still accepts connections after drop"
    );
    assert!(!dir.exists(), "{} is left after drop", dir.display());
}

#[tokio::test]
async fn benchmark_options_keep_fsync_on() {
    let options = Options {
        max_connections: 40,
        ..Options::benchmark()
    };
    let Some(cluster) = start_or_skip(options) else {
        return;
    };
    assert_eq!(text(cluster.url(), "SHOW fsync").await, "on");
    assert_eq!(text(cluster.url(), "SHOW max_connections").await, "40");
}

#[test]
fn settings_quote_the_socket_dir() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("postgresql.conf");
    std::fs::write(&conf, "# initdb's\n").unwrap();
    append_settings(&conf, Path::new("/tmp/it's"), &Options::benchmark()).unwrap();
    let written = std::fs::read_to_string(&conf).unwrap();
    assert!(written.starts_with("# initdb's\n"));
    assert!(written.contains("unix_socket_directories = '/tmp/it''s'\n"));
    assert!(written.contains("max_connections = 200\n"));
    assert!(!written.contains("fsync"), "fsync=off only when asked");
}

#[tokio::test]
async fn a_standby_replays_stops_behind_and_is_promoted() {
    let Some(primary) = start_or_skip(Options::primary()) else {
        return;
    };
    let standby = Cluster::standby_of(&primary, Options::default()).expect("standby");
    assert_ne!(standby.port(), primary.port());
    assert_eq!(
        text(standby.url(), "SELECT pg_is_in_recovery()::text").await,
        "true"
    );
    let c = connect(primary.url()).await;
    c.batch_execute("CREATE TABLE t (n int); INSERT INTO t VALUES (1)")
        .await
        .unwrap();
    standby
        .wait_replayed(&primary, Duration::from_secs(20))
        .expect("replayed");
    assert_eq!(
        text(standby.url(), "SELECT count(*)::text FROM t").await,
        "1"
    );

    // Behind: a row the standby never sees, then the primary dies and the standby takes over.
    standby.stop().unwrap();
    c.batch_execute("INSERT INTO t VALUES (2)").await.unwrap();
    drop(c);
    primary.kill().unwrap();
    standby.start_again().unwrap();
    standby.promote().unwrap();
    assert_eq!(
        text(standby.url(), "SELECT pg_is_in_recovery()::text").await,
        "false"
    );
    let c = connect(standby.url()).await;
    c.batch_execute("INSERT INTO t VALUES (3)").await.unwrap();
    assert_eq!(
        text(
            standby.url(),
            "SELECT string_agg(n::text, ',' ORDER BY n) FROM t"
        )
        .await,
        "1,3"
    );
    let dirs = (primary.dir().to_owned(), standby.dir().to_owned());
    drop((primary, standby));
    assert!(!dirs.0.exists() && !dirs.1.exists(), "dirs left after drop");
}
