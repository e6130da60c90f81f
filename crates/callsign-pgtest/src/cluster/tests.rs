use std::net::TcpStream;
use std::time::Duration;

use super::*;
use crate::testing::{start_or_skip, text};

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
