//! Renaming a project's prefix (`PATCH /v1/projects/{prefix}`, `callsign-server project
//! rename`): route tests through `router(state)` in the style of `routes.rs`, and the admin
//! command against the real binary, whose keys the reaper writes onto the tasks.
use std::process::Command;
use std::time::Duration;

use axum::http::StatusCode;
use callsign_core::Prefix;
use callsign_server::reaper;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::{
    add_account, create_account, store_task, task, Client, TestApp, TestServer, BIN,
};

fn code(a: &crate::common::Answer) -> &str {
    a.body["code"].as_str().unwrap_or("")
}

impl TestApp {
    async fn rename(&self, prefix: &str, body: Value) -> crate::common::Answer {
        let token = self.account.token.clone();
        self.call(
            &token,
            "PATCH",
            &format!("/v1/projects/{prefix}"),
            None,
            Some(body),
        )
        .await
    }

    /// The `key` and `project` properties of a task in the TaskChampion store.
    async fn in_store(&self, uuid: Uuid) -> (Option<String>, Option<String>) {
        let account = self.account.account_id;
        let snap = self.state.tasks.get(account, vec![uuid]).await.unwrap();
        let snap = snap[0].as_ref().expect("in the store");
        (snap.key.clone(), snap.project.clone())
    }

    /// Waits (5 s at most) for the store to hold `key` and its prefix as the project.
    async fn store_follows(&self, uuid: Uuid, key: &str) {
        let want = (
            Some(key.to_owned()),
            key.split('-').next().map(str::to_owned),
        );
        for _ in 0..100 {
            if self.in_store(uuid).await == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(
            self.in_store(uuid).await,
            want,
            "the store follows the rename"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_moves_every_key_to_the_new_prefix_and_old_keys_keep_resolving() {
    let app = TestApp::new("SYN").await;
    let [t1, s1] = [Uuid::new_v4(), Uuid::new_v4()];
    assert_eq!(
        app.put(t1, "t1", task("Release")).await.body["key"],
        "SYN-1"
    );
    let sub = json!({"project": "SYN", "description": "Build", "parent": "SYN-1"});
    assert_eq!(app.put(s1, "s1", sub).await.body["key"], "SYN-1.1");
    let before = app
        .call(&app.account.token, "GET", "/v1/changes", None, None)
        .await;
    let cursor = before.body["cursor"].as_str().unwrap().to_owned();

    let r = app.rename("syn", json!({"prefix": "syx"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        r.body,
        json!({"id": app.account.project.id, "name": "Project", "prefix": "SYX",
               "previous_prefixes": ["SYN"]})
    );
    // Every key the tasks had still finds them, answering the current key.
    for (r, uuid, key, previous) in [
        ("SYN-1", t1, "SYX-1", "SYN-1"),
        ("syx1", t1, "SYX-1", "SYN-1"),
        ("syn 1.1", s1, "SYX-1.1", "SYN-1.1"),
        ("SYX-1.1", s1, "SYX-1.1", "SYN-1.1"),
    ] {
        let got = app.get(r).await;
        assert_eq!(
            (
                got.body["uuid"].as_str(),
                got.body["key"].as_str(),
                got.body["project"].as_str(),
                got.body["previous_keys"].clone()
            ),
            (
                Some(uuid.to_string().as_str()),
                Some(key),
                Some("SYX"),
                json!([previous])
            ),
            "{r}"
        );
    }
    // Clients learn the new keys from the feed.
    let feed = app
        .call(
            &app.account.token,
            "GET",
            &format!("/v1/changes?since={cursor}"),
            None,
            None,
        )
        .await;
    let mut fed: Vec<&str> = feed.body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    fed.sort();
    assert_eq!(fed, ["SYX-1", "SYX-1.1"]);
    // The TaskChampion store's `key` and `project` follow.
    app.store_follows(t1, "SYX-1").await;
    app.store_follows(s1, "SYX-1.1").await;
    // The counter goes on; a create naming the old prefix lands in the project.
    assert_eq!(
        app.put(
            Uuid::new_v4(),
            "n1",
            json!({"project": "SYX", "description": "n"})
        )
        .await
        .body["key"],
        "SYX-2"
    );
    let old = app.put(Uuid::new_v4(), "n2", task("queued before")).await;
    assert_eq!(
        (old.body["key"].as_str(), old.status),
        (Some("SYX-3"), StatusCode::CREATED)
    );
    assert_eq!(
        code(&app.get("SYN-2").await),
        "task_not_found",
        "SYX-2 came after the rename: it never was SYN-2"
    );
    let list = app
        .call(&app.account.token, "GET", "/v1/projects", None, None)
        .await;
    assert_eq!(
        list.body["projects"],
        json!([{"id": 1, "name": "Project", "prefix": "SYX", "previous_prefixes": ["SYN"]}])
    );
}

#[tokio::test]
async fn renames_are_refused_as_creations_are() {
    let app = TestApp::new("SYN").await;
    let token = app.account.token.clone();
    let made = app
        .call(
            &token,
            "POST",
            "/v1/projects",
            None,
            Some(json!({"name": "Ops", "prefix": "OPS"})),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED);
    assert_eq!(
        app.rename("SYN", json!({"prefix": "SYX"})).await.status,
        StatusCode::OK
    );
    for (path, body, status, want) in [
        ("OPS", json!({"prefix": "syx"}), 409, "prefix_taken"),
        ("OPS", json!({"prefix": "SYN"}), 409, "prefix_taken"),
        ("OPS", json!({"prefix": "inbox"}), 422, "invalid_prefix"),
        ("OPS", json!({"prefix": "1x"}), 422, "invalid_prefix"),
        (
            "OPS",
            json!({"prefix": "ABCDEFGHIJK"}),
            422,
            "invalid_prefix",
        ),
        ("OPS", json!({}), 422, "invalid_body"),
        (
            "OPS",
            json!({"prefix": "ABC", "color": "red"}),
            422,
            "invalid_body",
        ),
        ("OPS", json!({"name": " "}), 422, "invalid_body"),
        ("NOPE", json!({"prefix": "ABC"}), 404, "project_not_found"),
        ("1x", json!({"prefix": "ABC"}), 404, "project_not_found"),
        ("SYN", json!({"prefix": "ABC"}), 404, "project_not_found"),
    ] {
        let a = app.rename(path, body.clone()).await;
        assert_eq!(
            (a.status.as_u16(), code(&a)),
            (status, want),
            "{path} {body}: {}",
            a.body
        );
        assert_eq!(a.content_type, "application/problem+json");
    }
    let gone = app.rename("SYN", json!({"prefix": "ABC"})).await;
    assert!(
        gone.body["detail"].as_str().unwrap().contains("SYX"),
        "says where the project went: {}",
        gone.body
    );
    // Creating a project with a prefix one had is refused too (its keys name its tasks).
    let again = app
        .call(
            &token,
            "POST",
            "/v1/projects",
            None,
            Some(json!({"name": "Sync again", "prefix": "syn"})),
        )
        .await;
    assert_eq!((again.status.as_u16(), code(&again)), (409, "prefix_taken"));
    // Another account's project is not found; the same prefix is its own to use.
    let other = add_account(&app.state, "b", "ZZZ").await;
    let a = app
        .call(
            &other.token,
            "PATCH",
            "/v1/projects/SYX",
            None,
            Some(json!({"prefix": "ABC"})),
        )
        .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    let a = app
        .call(
            &other.token,
            "PATCH",
            "/v1/projects/ZZZ",
            None,
            Some(json!({"prefix": "SYN"})),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    // The same project takes its own earlier prefix back; a name changes alone.
    let back = app
        .rename("syx", json!({"prefix": "syn", "name": "Sync"}))
        .await;
    assert_eq!(
        back.body,
        json!({"id": 1, "name": "Sync", "prefix": "SYN", "previous_prefixes": ["SYX"]})
    );
    let named = app.rename("SYN", json!({"name": "Synced"})).await;
    assert_eq!(
        (named.status, named.body["name"].clone()),
        (StatusCode::OK, json!("Synced"))
    );
    let missing = app.call(
        "wrong",
        "PATCH",
        "/v1/projects/SYN",
        None,
        Some(json!({"name": "x"})),
    );
    assert_eq!(missing.await.status, StatusCode::UNAUTHORIZED);
}

/// A rename is one transaction in the allocation store; writing the new keys onto the tasks
/// comes after. If that never happens (a crash), the reaper writes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_a_crash_left_unwritten_after_a_rename_are_written_by_the_reaper() {
    let app = TestApp::new("SYN").await;
    let u = Uuid::new_v4();
    app.put(u, "t", task("t")).await;
    app.store_follows(u, "SYN-1").await;
    // The allocation store alone, as if the process died before the key writes.
    let account = app.account.account_id;
    let p = |s: &str| Prefix::parse(s).unwrap();
    app.state
        .alloc
        .update_project(account, &p("SYN"), Some(&p("SYX")), None, 0)
        .await
        .unwrap();
    assert_eq!(app.in_store(u).await.0.as_deref(), Some("SYN-1"));
    // The reaper leaves keys assigned within the last second to the request that made them.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let report = reaper::run_once(&app.state).await.unwrap();
    assert!(report.keys_repaired >= 1, "{report:?}");
    app.store_follows(u, "SYX-1").await;
}

/// `callsign-server project rename` on a stopped server's data dir; the server started again
/// answers the new keys, and its reaper writes them onto the tasks.
#[tokio::test]
async fn the_admin_command_renames_and_the_server_writes_the_keys_later() {
    let dir = tempfile::tempdir().unwrap();
    let (account, token) = create_account(dir.path(), "SYN");
    let u = Uuid::new_v4();
    {
        let server = TestServer::start(dir.path(), &[], &[]);
        let c = Client::new(&server.url, &token);
        let (status, _, _) = c
            .put(u, "k", &json!({"project": "SYN", "description": "d"}))
            .await
            .unwrap();
        assert_eq!(status, 201);
    }
    let rename = |from: &str, to: &str| {
        Command::new(BIN)
            .args(["project", "rename", "--data-dir"])
            .arg(dir.path())
            .args([
                "--account",
                &account.to_string(),
                "--from",
                from,
                "--to",
                to,
            ])
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    };
    let out = rename("syn", "syx");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (made["prefix"].as_str(), made["previous_prefixes"].clone()),
        (Some("SYX"), json!(["SYN"]))
    );
    let out = rename("SYN", "ABC");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("the project is SYX now"));

    let server = TestServer::start(dir.path(), &["--reaper-interval", "100ms"], &[]);
    let c = Client::new(&server.url, &token);
    let (status, got) = c.get("/v1/tasks/SYN-1").await.unwrap();
    assert_eq!((status, got["key"].as_str()), (200, Some("SYX-1")));
    let mut written = None;
    for _ in 0..100 {
        written = store_task(dir.path(), u).and_then(|t| t["key"].as_str().map(str::to_owned));
        if written.as_deref() == Some("SYX-1") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        written.as_deref(),
        Some("SYX-1"),
        "the reaper wrote the new key"
    );
}
