//! `GET /v1/changes?since=C&wait=S` (issue 26): a request with nothing newer than its cursor is
//! held until a change commits in its account, on this node or (PostgreSQL) another, or until
//! `S` passes; held requests are bounded and end at once when the server stops.
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::json;
use uuid::Uuid;

use crate::common::{app_on, create_account_in, task, Client, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_request_answers_when_a_change_commits_or_the_wait_ends() {
    let app = app_on("sqlite", "SYN").await.unwrap();
    let token = app.account.token.clone();
    app.create_tasks("k", 1).await;
    let first = app.call(&token, "GET", "/v1/changes", None, None).await;
    let cursor = first.body["cursor"].as_str().unwrap().to_owned();

    // Nothing newer: held for the whole second, then the same cursor and no changes.
    let started = Instant::now();
    let path = format!("/v1/changes?since={cursor}&wait=1");
    let quiet = app.call(&token, "GET", &path, None, None).await;
    let took = started.elapsed();
    assert_eq!(quiet.status, StatusCode::OK);
    assert_eq!(quiet.body["changes"], json!([]));
    assert_eq!(quiet.body["cursor"], cursor.as_str());
    assert!(
        (Duration::from_millis(900)..Duration::from_secs(5)).contains(&took),
        "{took:?}"
    );

    // A create 300 ms in wakes it at once.
    let path = format!("/v1/changes?since={cursor}&wait=30");
    let started = Instant::now();
    let (held, ()) = tokio::join!(app.call(&token, "GET", &path, None, None), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let made = app.put(Uuid::new_v4(), "late", task("Late")).await;
        assert_eq!(made.status, StatusCode::CREATED);
    });
    let took = started.elapsed();
    assert_eq!(
        held.body["changes"][0]["description"], "Late",
        "{}",
        held.body
    );
    assert!(took < Duration::from_secs(5), "{took:?}");

    // Something newer already: no wait at all.
    let started = Instant::now();
    let path = format!("/v1/changes?since={cursor}&wait=30");
    let now = app.call(&token, "GET", &path, None, None).await;
    assert_eq!(now.body["changes"].as_array().unwrap().len(), 1);
    assert!(started.elapsed() < Duration::from_secs(2));

    for bad in ["61", "-1", "x", "1.5"] {
        let a = app
            .call(
                &token,
                "GET",
                &format!("/v1/changes?wait={bad}"),
                None,
                None,
            )
            .await;
        assert_eq!(
            (a.status, a.body["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_query")),
            "{bad}"
        );
    }
}

/// The real binary: a create on node A wakes a request held on node B (PostgreSQL), and a
/// server asked to stop answers its held requests at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_commit_on_one_node_wakes_a_request_held_on_another() {
    let Some(url) = crate::nodes::database("held").await else {
        return;
    };
    let database = ["--database", url.as_str()];
    let (_, token) = create_account_in(&database, "SYN");
    let a = TestServer::serve(&database, &[], &[]);
    let mut b = TestServer::serve(&database, &[], &[]);
    let (on_a, on_b) = (Client::new(&a.url, &token), Client::new(&b.url, &token));
    let (_, page) = on_b.get("/v1/changes").await.unwrap();
    let cursor = page["cursor"].as_str().unwrap().to_owned();
    let path = format!("/v1/changes?since={cursor}&wait=30");
    let started = Instant::now();
    let (held, ()) = tokio::join!(on_b.get(&path), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (status, _, _) = on_a
            .put(Uuid::new_v4(), "x1", &task("From A"))
            .await
            .unwrap();
        assert_eq!(status, 201);
    });
    let (status, body) = held.unwrap();
    let took = started.elapsed();
    assert_eq!(
        (status, body["changes"][0]["key"].as_str()),
        (200, Some("SYN-1")),
        "{body}"
    );
    assert!(
        took < Duration::from_secs(3),
        "woken across nodes in {took:?}"
    );

    // Shutdown: the held request answers at once and the node exits.
    let cursor = body["cursor"].as_str().unwrap().to_owned();
    let path = format!("/v1/changes?since={cursor}&wait=60");
    let pid = b.child.id();
    let started = Instant::now();
    let (held, ()) = tokio::join!(on_b.get(&path), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
    });
    let (status, body) = held.unwrap();
    assert_eq!(
        (status, body["changes"].as_array().map(Vec::len)),
        (200, Some(0)),
        "{body}"
    );
    assert!(b.wait_for_exit().success());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}
