//! What the server refuses at start, and the replica binding (issue 20, item 11).
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::json;
use uuid::Uuid;

use crate::common::{create_account, task, Client, TestApp, TestServer, BIN};

/// Runs the server binary with `args`; it must exit by itself within 30 s. Its exit status and
/// stderr.
pub fn run_to_exit(args: &[&str], data_dir: &Path) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`callsign-server {}` did not exit", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status, err)
}

fn remove_db(dir: &Path) {
    for f in [
        "callsign.sqlite3",
        "callsign.sqlite3-wal",
        "callsign.sqlite3-shm",
    ] {
        let _ = std::fs::remove_file(dir.join(f));
    }
}

/// Every command that opens the data dir refuses, naming the files, and creates nothing.
fn assert_every_command_refuses(dir: &Path) {
    let serve = ["serve", "--listen", "127.0.0.1:0"];
    let account = ["account", "create", "--name", "n", "--prefix", "NEW"];
    let token = ["token", "create", "--account", "1", "--device", "d"];
    for args in [&serve[..], &account[..], &token[..]] {
        let (status, err) = run_to_exit(args, dir);
        assert!(!status.success(), "{args:?} succeeded");
        assert!(
            err.contains("callsign.sqlite3") && err.contains("accounts"),
            "{args:?}: {err}"
        );
    }
}

/// A data dir whose allocation database was deleted, then emptied, while `accounts/` stays:
/// nothing starts, so no new account 1 adopts the old account 1's tasks.
#[tokio::test]
async fn a_lost_or_emptied_allocation_database_is_refused_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "SYN");
    let server = TestServer::start(dir.path(), &[], &[]);
    let client = Client::new(&server.url, &token);
    let (status, _, _) = client
        .put(Uuid::new_v4(), "k1", &task("old text"))
        .await
        .unwrap();
    assert_eq!(status, 201);
    drop(server);

    remove_db(dir.path());
    assert_every_command_refuses(dir.path());
    assert!(
        !dir.path().join("callsign.sqlite3").exists(),
        "a refusal creates no fresh database"
    );

    std::fs::write(dir.path().join("callsign.sqlite3"), b"").unwrap();
    assert_every_command_refuses(dir.path());
}

/// An allocation database that does not know every account under `accounts/` (an older
/// backup) is refused too: its next account would take the id of one that has data.
#[test]
fn an_allocation_database_older_than_the_replicas_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    create_account(dir.path(), "SYN");
    std::fs::create_dir_all(dir.path().join("accounts/2")).unwrap();
    std::fs::write(dir.path().join("accounts/2/taskchampion.sqlite3"), b"").unwrap();
    let (status, err) = run_to_exit(&["serve", "--listen", "127.0.0.1:0"], dir.path());
    assert!(!status.success());
    assert!(
        err.contains("account(s) 2") && err.contains("does not know"),
        "{err}"
    );
}

/// A replica copied from another data dir (another allocation database) under the same
/// account id is never served: a PUT for a UUID it holds answers 503, never the old text
/// under a new key.
#[tokio::test]
async fn a_replica_of_another_allocation_database_is_never_served() {
    let old = TestApp::new("SYN").await;
    let uuid = Uuid::new_v4();
    let a = old.put(uuid, "k1", task("old text")).await;
    assert_eq!(a.status, StatusCode::CREATED);

    let new = TestApp::new("SYN").await;
    assert_eq!(new.account.account_id, old.account.account_id);
    let target = new._dir.path().join("accounts/1");
    std::fs::create_dir_all(&target).unwrap();
    let source =
        rusqlite::Connection::open(old._dir.path().join("accounts/1/taskchampion.sqlite3"))
            .unwrap();
    source
        .execute(
            "VACUUM INTO ?1",
            [target.join("taskchampion.sqlite3").to_str().unwrap()],
        )
        .unwrap();

    let b = new
        .put(
            uuid,
            "k2",
            json!({"project": "syn", "description": "new text"}),
        )
        .await;
    assert_eq!(b.status, StatusCode::SERVICE_UNAVAILABLE, "{:?}", b.body);
    assert_eq!(b.body["code"], "unavailable");
    assert!(!b.body.to_string().contains("old text"));
    let other = new.put(Uuid::new_v4(), "k3", task("another")).await;
    assert_eq!(other.status, StatusCode::SERVICE_UNAVAILABLE);
}

/// Overwrites the middle 40% of `file` (whole 4 KiB pages) with garbage.
fn corrupt_middle_pages(file: &Path) {
    use std::io::{Seek, SeekFrom, Write};
    let len = std::fs::metadata(file).unwrap().len();
    let page = 4096;
    let (from, to) = (len * 3 / 10 / page * page, len * 7 / 10 / page * page);
    assert!(to - from >= 4 * page, "{len} bytes is too small to corrupt");
    let mut f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    f.seek(SeekFrom::Start(from)).unwrap();
    f.write_all(&vec![0x5a; (to - from) as usize]).unwrap();
    f.sync_all().unwrap();
}

/// A stopped server's allocation database has pages overwritten in the middle of the file: the
/// next start refuses, naming the file and the check, instead of serving from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allocation_database_with_corrupted_pages_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "SYN");
    let server = TestServer::start(dir.path(), &[], &[]);
    let client = Client::new(&server.url, &token);
    let mutations: Vec<serde_json::Value> = (0..1000)
        .map(|i| {
            json!({"idempotency_key": format!("k-{i}"), "op": "create", "uuid": Uuid::new_v4(),
                   "fields": {"project": "syn", "description": format!("task {i}")}})
        })
        .collect();
    let (status, _) = client
        .post("/v1/sync", &json!({"mutations": mutations}))
        .await
        .unwrap();
    assert_eq!(status, 200);
    drop(server);
    let db = dir.path().join("callsign.sqlite3");
    // Move every committed page into the file itself, as a server at rest has.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    corrupt_middle_pages(&db);

    let (status, err) = run_to_exit(&["serve", "--listen", "127.0.0.1:0"], dir.path());
    assert!(!status.success());
    assert!(
        err.contains("callsign.sqlite3") && err.contains("quick_check"),
        "{err}"
    );
}
