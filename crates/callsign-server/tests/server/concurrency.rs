//! End-to-end: concurrent creates against the real binary get exactly 1..N.
use serde_json::json;
use uuid::Uuid;

use crate::common::{create_account, numbers_in_db, Client, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn sixty_four_concurrent_creates_get_exactly_one_to_sixty_four() {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "SYN");
    let server = TestServer::start(dir.path(), &[], &[]);
    let client = Client::new(&server.url, &token);
    let mut handles = Vec::new();
    for worker in 0..8 {
        let client = client.clone();
        handles.push(tokio::spawn(async move {
            let mut numbers = Vec::new();
            for i in 0..8 {
                let body = json!({"project": "SYN", "description": format!("w{worker} t{i}")});
                let (status, _, task) = client
                    .put(Uuid::new_v4(), &format!("w{worker}-{i}"), &body)
                    .await
                    .unwrap();
                assert_eq!(status, 201, "{task}");
                numbers.push(task["number"].as_i64().unwrap());
            }
            numbers
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap());
    }
    all.sort_unstable();
    assert_eq!(
        all,
        (1..=64).collect::<Vec<i64>>(),
        "no duplicates, no gaps"
    );
    assert_eq!(numbers_in_db(dir.path()), (1..=64).collect::<Vec<i64>>());
}

/// 64 subtasks created at once under one parent, through the real binary: `SYN-1.1`..`.64`.
#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn sixty_four_concurrent_subtasks_get_exactly_one_to_sixty_four_under_their_parent() {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "SYN");
    let server = TestServer::start(dir.path(), &[], &[]);
    let client = Client::new(&server.url, &token);
    let parent = Uuid::new_v4();
    let (status, _, task) = client
        .put(
            parent,
            "parent",
            &json!({"project": "SYN", "description": "parent"}),
        )
        .await
        .unwrap();
    assert_eq!((status, task["key"].as_str()), (201, Some("SYN-1")));
    let mut handles = Vec::new();
    for worker in 0..8 {
        let client = client.clone();
        handles.push(tokio::spawn(async move {
            let mut keys = Vec::new();
            for i in 0..8 {
                let body = json!({"project": "SYN", "description": format!("w{worker} t{i}"),
                                  "parent": parent.to_string()});
                let (status, _, task) = client
                    .put(Uuid::new_v4(), &format!("w{worker}-{i}"), &body)
                    .await
                    .unwrap();
                assert_eq!(status, 201, "{task}");
                keys.push(task["key"].as_str().unwrap().to_owned());
            }
            keys
        }));
    }
    let mut numbers = Vec::new();
    for h in handles {
        for k in h.await.unwrap() {
            let n = k.strip_prefix("SYN-1.").unwrap_or_else(|| panic!("{k}"));
            numbers.push(n.parse::<i64>().unwrap());
        }
    }
    numbers.sort_unstable();
    assert_eq!(
        numbers,
        (1..=64).collect::<Vec<i64>>(),
        "no duplicates, no gaps"
    );
    let (status, _, next) = client
        .put(
            Uuid::new_v4(),
            "next",
            &json!({"project": "SYN", "description": "next"}),
        )
        .await
        .unwrap();
    assert_eq!((status, next["key"].as_str()), (201, Some("SYN-2")));
}

#[test]
fn a_second_server_on_the_same_data_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = TestServer::start(dir.path(), &[], &[]);
    let out = std::process::Command::new(crate::common::BIN)
        .args(["serve", "--data-dir"])
        .arg(dir.path())
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already serving"), "{err}");
}
