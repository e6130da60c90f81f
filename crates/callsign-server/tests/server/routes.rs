//! Route tests through `router(state)`: idempotency, resolver, errors, isolation, reaper.
use axum::http::StatusCode;
use callsign_core::dto::NewTask;
use callsign_server::{protocol, reaper};
use callsign_storage_sqlite::alloc::{now_ms, slots};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::{add_account, task, TestApp};

fn code(a: &crate::common::Answer) -> &str {
    a.body["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn same_create_five_times_sequentially_is_one_task_one_number() {
    let app = TestApp::new("SYN").await;
    let u = Uuid::new_v4();
    let first = app.put(u, "k-1", task("Buy milk")).await;
    assert_eq!(first.status, StatusCode::CREATED);
    assert!(!first.replayed);
    assert_eq!(first.body["key"], "SYN-1");
    for _ in 0..4 {
        let again = app.put(u, "k-1", task("Buy milk")).await;
        assert_eq!(again.status, StatusCode::CREATED);
        assert!(again.replayed, "a replay carries Idempotent-Replayed");
        assert_eq!(again.body, first.body, "identical bodies");
    }
    let next = app.put(Uuid::new_v4(), "k-2", task("Next")).await;
    assert_eq!(next.body["key"], "SYN-2", "the replays consumed no number");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn same_create_five_times_concurrently_is_one_task_one_number() {
    let app = std::sync::Arc::new(TestApp::new("SYN").await);
    let u = Uuid::new_v4();
    let mut handles = Vec::new();
    for _ in 0..5 {
        let app = app.clone();
        handles.push(tokio::spawn(async move {
            loop {
                let a = app.put(u, "same", task("Once")).await;
                if a.status == StatusCode::CONFLICT {
                    assert_eq!(a.body["code"], "request_in_progress");
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    continue;
                }
                return a;
            }
        }));
    }
    let mut bodies = Vec::new();
    let mut fresh = 0;
    for h in handles {
        let a = h.await.unwrap();
        assert_eq!(a.status, StatusCode::CREATED);
        fresh += usize::from(!a.replayed);
        bodies.push(a.body);
    }
    assert_eq!(fresh, 1, "exactly one request ran phase 2");
    assert!(bodies.iter().all(|b| *b == bodies[0]));
    assert_eq!(bodies[0]["key"], "SYN-1");
    let next = app.put(Uuid::new_v4(), "other", task("Next")).await;
    assert_eq!(next.body["key"], "SYN-2");
}

#[tokio::test]
async fn due_and_priority_are_set_replayed_cleared_and_checked() {
    let app = TestApp::new("SYN").await;
    let u = Uuid::new_v4();
    let body = json!({"project": "syn", "description": "Pay rent",
                      "due": "2026-12-01T09:30:00Z", "priority": "H"});
    let a = app.put(u, "due-1", body.clone()).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    assert_eq!(a.body["due"], "2026-12-01T09:30:00Z");
    assert_eq!(a.body["priority"], "H");
    let again = app.put(u, "due-1", body).await;
    assert!(again.replayed);
    assert_eq!(again.body, a.body);
    let token = app.account.token.clone();
    let path = format!("/v1/tasks/{u}");
    let patch = |idem: &'static str, b: Value| {
        let (token, path) = (token.clone(), path.clone());
        let app = &app;
        async move { app.call(&token, "PATCH", &path, Some(idem), Some(b)).await }
    };
    let p = patch("due-2", json!({"due": null, "priority": "L"})).await;
    assert_eq!(p.status, StatusCode::OK, "{}", p.body);
    assert_eq!(
        (p.body["due"].clone(), p.body["priority"].clone()),
        (Value::Null, json!("L"))
    );
    let p = patch("due-3", json!({"description": "Pay the rent"})).await;
    assert_eq!(p.body["priority"], "L", "absent leaves it");
    for (idem, bad) in [
        ("bad-1", json!({"priority": "urgent"})),
        ("bad-2", json!({"due": "tomorrow"})),
        ("bad-3", json!({"due": "1960-01-01T00:00:00Z"})),
    ] {
        let p = patch(idem, bad.clone()).await;
        assert_eq!(
            p.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}: {}",
            p.body
        );
        assert_eq!(p.content_type, "application/problem+json");
    }
    let got = app.get("SYN-1").await;
    assert_eq!(got.body["description"], "Pay the rent");
    assert_eq!(
        (got.body["due"].clone(), got.body["priority"].clone()),
        (Value::Null, json!("L"))
    );
}

#[tokio::test]
async fn subtasks_take_their_parents_key_and_block_its_completion() {
    let app = TestApp::new("SYN").await;
    let token = app.account.token.clone();
    let parent = Uuid::new_v4();
    assert_eq!(
        app.put(parent, "p", task("Release")).await.body["key"],
        "SYN-1"
    );
    let child =
        |d: &str, parent: &str| json!({"project": "SYN", "description": d, "parent": parent});
    // The parent by key (any case) or UUID.
    let c1 = Uuid::new_v4();
    let a = app.put(c1, "c1", child("Build", "syn 1")).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    assert_eq!(
        (a.body["key"].clone(), a.body["number"].clone()),
        (json!("SYN-1.1"), json!(1))
    );
    assert_eq!(a.body["parent"], parent.to_string());
    let c2 = Uuid::new_v4();
    let a = app.put(c2, "c2", child("Ship", &parent.to_string())).await;
    assert_eq!(a.body["key"], "SYN-1.2");
    let g = app.put(Uuid::new_v4(), "g", child("Tag", "SYN-1.1")).await;
    assert_eq!(g.body["key"], "SYN-1.1.1");
    assert_eq!(
        app.put(Uuid::new_v4(), "n", task("Next")).await.body["key"],
        "SYN-2"
    );
    // Dotted keys resolve in the lenient forms; a bare `.1` is not a reference.
    for r in ["SYN-1.2", "syn 1.2", "syn1.2"] {
        assert_eq!(app.get(r).await.body["uuid"], c2.to_string(), "{r}");
    }
    assert_eq!(code(&app.get(".1").await), "invalid_ref");
    assert_eq!(code(&app.get("SYN-1.9").await), "task_not_found");
    // Bad parents store nothing.
    for (idem, parent, want) in [
        ("b1", "SYN-99", "invalid_parent"),
        ("b2", "nonsense", "invalid_parent"),
        ("b3", "ZZZ-1", "invalid_parent"),
    ] {
        let a = app.put(Uuid::new_v4(), idem, child("Bad", parent)).await;
        assert_eq!(
            (a.status, code(&a)),
            (StatusCode::UNPROCESSABLE_ENTITY, want),
            "{parent}"
        );
    }
    let own = Uuid::new_v4();
    let a = app.put(own, "b4", child("Self", &own.to_string())).await;
    assert_eq!(code(&a), "invalid_parent");
    // The parent cannot be completed while a subtask is open; the refusal names them.
    let done = json!({"status": "completed"});
    let path = format!("/v1/tasks/{parent}");
    let a = app
        .call(&token, "PATCH", &path, Some("done-1"), Some(done.clone()))
        .await;
    assert_eq!(
        (a.status, code(&a)),
        (StatusCode::CONFLICT, "task_blocked"),
        "{}",
        a.body
    );
    let detail = a.body["detail"].as_str().unwrap();
    assert!(
        detail.contains("SYN-1.1") && detail.contains("SYN-1.2"),
        "{detail}"
    );
    for (i, r) in ["SYN-1.1.1", "SYN-1.1", "SYN-1.2"].iter().enumerate() {
        let p = format!("/v1/tasks/{r}");
        let a = app
            .call(
                &token,
                "PATCH",
                &p,
                Some(&format!("d{i}")),
                Some(done.clone()),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{r}: {}", a.body);
    }
    // The same request again is decided anew (the refused attempt stored no answer).
    let a = app
        .call(&token, "PATCH", &path, Some("done-1"), Some(done))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["status"], "completed");
}

/// Two devices edit one task offline, each with the base it saw: different fields both land; the
/// same field keeps the later `PATCH` and the task answers the replaced value in `conflicts`,
/// also to a replay and a `GET`; `resolve` settles it; a base of the wrong shape is `422`.
/// After a rollback the server may lack a parent or a task a device still holds; until
/// recovery ends a device may bring it back, so a subtask or an update waits
/// (`503 recovering`) instead of being refused. Once recovery has ended, the same request is
/// decided anew: a task still missing is `422 invalid_parent`, `404 task_not_found`.
#[tokio::test]
async fn changes_needing_a_task_the_server_lacks_wait_while_it_recovers() {
    use callsign_storage::RecoveryReason;
    let app = TestApp::new("SYN").await;
    let account = app.account.account_id;
    let alloc = &app.state.alloc;
    alloc
        .start_recovery(Some(account), RecoveryReason::Restore, now_ms())
        .await
        .unwrap();
    let child = |parent: &str| json!({"project": "SYN", "description": "Sub", "parent": parent});
    let lost = Uuid::new_v4().to_string();
    let (by_uuid, by_key) = (Uuid::new_v4(), Uuid::new_v4());
    for (uuid, idem, parent) in [(by_uuid, "u", lost.as_str()), (by_key, "k", "SYN-7")] {
        let a = app.put(uuid, idem, child(parent)).await;
        assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{}", a.body);
        assert_eq!(code(&a), "recovering", "{}", a.body);
        assert!(
            a.body["detail"].as_str().unwrap().contains(parent),
            "{}",
            a.body
        );
    }
    let token = app.account.token.clone();
    let update = || {
        json!({"mutations": [{"idempotency_key": "upd", "op": "update", "uuid": lost,
            "fields": {"status": "completed"}}]})
    };
    let sync = |body: Value| app.call(&token, "POST", "/v1/sync", None, Some(body));
    let a = sync(update()).await;
    let r = &a.body["results"][0];
    assert_eq!(
        (r["status"].as_u64(), r["error"]["code"].as_str()),
        (Some(503), Some("recovering")),
        "{}",
        a.body
    );
    alloc.end_recovery(Some(account), None).await.unwrap();
    for (uuid, idem, parent) in [(by_uuid, "u", lost.as_str()), (by_key, "k", "SYN-7")] {
        let a = app.put(uuid, idem, child(parent)).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
        assert_eq!(code(&a), "invalid_parent", "{}", a.body);
    }
    let a = sync(update()).await;
    let r = &a.body["results"][0];
    assert_eq!(
        (r["status"].as_u64(), r["error"]["code"].as_str()),
        (Some(404), Some("task_not_found")),
        "{}",
        a.body
    );
}

#[tokio::test]
async fn concurrent_edits_merge_and_the_replaced_value_is_a_conflict() {
    let app = TestApp::new("SYN").await;
    let u = Uuid::new_v4();
    app.put(u, "c", task("Fix login")).await;
    let token = app.account.token.clone();
    let patch = |idem: &'static str, b: Value| {
        let token = token.clone();
        let app = &app;
        async move {
            app.call(&token, "PATCH", "/v1/tasks/syn-1", Some(idem), Some(b))
                .await
        }
    };
    let a = patch(
        "a",
        json!({"description": "Fix login redirect", "base": {"description": "Fix login"}}),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert!(a.body.get("conflicts").is_none(), "none yet: {}", a.body);
    let b_body = json!({"description": "Fix login on Safari", "notes": "seen on iOS",
        "base": {"description": "Fix login", "notes": ""}});
    let b = patch("b", b_body.clone()).await;
    assert_eq!(b.status, StatusCode::OK, "{}", b.body);
    assert_eq!(
        (b.body["description"].clone(), b.body["notes"].clone()),
        (json!("Fix login on Safari"), json!("seen on iOS"))
    );
    let conflicts = b.body["conflicts"].clone();
    assert_eq!(conflicts.as_array().map(Vec::len), Some(1), "{}", b.body);
    assert_eq!(
        (conflicts[0]["field"].clone(), conflicts[0]["value"].clone()),
        (json!("description"), json!("Fix login redirect"))
    );
    assert!(conflicts[0]["at"].is_string());
    let replay = patch("b", b_body).await;
    assert!(replay.replayed);
    assert_eq!(replay.body, b.body);
    assert_eq!(app.get("SYN-1").await.body["conflicts"], conflicts);

    let bad = patch(
        "bad",
        json!({"description": "x", "base": {"colour": "red"}}),
    )
    .await;
    assert_eq!(
        (bad.status, code(&bad)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body")
    );
    let only_base = patch("base", json!({"base": {"description": "x"}})).await;
    assert_eq!(
        only_base.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "a base alone changes nothing"
    );

    let kept = patch("keep", json!({"resolve": ["description"]})).await;
    assert_eq!(kept.status, StatusCode::OK, "{}", kept.body);
    assert!(kept.body.get("conflicts").is_none(), "{}", kept.body);
    assert_eq!(kept.body["description"], "Fix login on Safari");
}

/// `PATCH` with `commits` links git commits to a task: the answer, a replay, a `GET` and the
/// change feed carry them, oldest first; a link of the same hash replaces its link,
/// `unlink_commits` removes one, and a link of another commit leaves the others. A hash that is
/// not a full lower-case hash is `422 invalid_body` as problem+json.
#[tokio::test]
async fn commit_links_are_set_replaced_unlinked_and_checked() {
    let app = TestApp::new("SYN").await;
    app.put(Uuid::new_v4(), "c", task("Fix login")).await;
    let token = app.account.token.clone();
    let patch = |idem: &'static str, b: Value| {
        let token = token.clone();
        let app = &app;
        async move {
            app.call(&token, "PATCH", "/v1/tasks/syn-1", Some(idem), Some(b))
                .await
        }
    };
    let (a, b) = ("a".repeat(40), "b".repeat(64));
    let link = |hash: &str, at: &str, subject: &str| {
        json!({"hash": hash, "subject": subject, "author": "Ann <ann@example.com>",
               "at": at, "action": "refs"})
    };
    let mut closes = link(&a, "2026-03-02T10:00:00Z", "Fix the redirect");
    closes["action"] = json!("closes");
    closes["comment"] = json!("works on Safari too");
    let body = json!({"commits": [closes.clone(), link(&b, "2026-03-01T10:00:00Z", "Try")]});
    let p = patch("l1", body.clone()).await;
    assert_eq!(p.status, StatusCode::OK, "{}", p.body);
    assert_eq!(
        p.body["commits"],
        json!([link(&b, "2026-03-01T10:00:00Z", "Try"), closes])
    );
    assert!(p.body.get("conflicts").is_none(), "a link is no conflict");
    let replay = patch("l1", body).await;
    assert!(replay.replayed);
    assert_eq!(replay.body, p.body);
    assert_eq!(app.get("SYN-1").await.body["commits"], p.body["commits"]);

    // The amended commit `c` replaces `b`; `a` gets a new subject.
    let c = "c".repeat(40);
    let p = patch(
        "l2",
        json!({"commits": [link(&c, "2026-03-03T10:00:00Z", "Try again"),
                           link(&a, "2026-03-02T10:00:00Z", "Fix it")],
               "unlink_commits": [b]}),
    )
    .await;
    assert_eq!(p.status, StatusCode::OK, "{}", p.body);
    let got = app.get("SYN-1").await;
    assert_eq!(got.body["commits"], p.body["commits"]);
    assert_eq!(
        got.body["commits"],
        json!([
            link(&a, "2026-03-02T10:00:00Z", "Fix it"),
            link(&c, "2026-03-03T10:00:00Z", "Try again")
        ])
    );
    let feed = app.call(&token, "GET", "/v1/changes", None, None).await;
    assert_eq!(feed.body["changes"][0]["commits"], got.body["commits"]);

    for (idem, bad, why) in [
        (
            "bad-1",
            json!({"commits": [link("ABC123", "2026-03-01T10:00:00Z", "x")]}),
            "not a full hash",
        ),
        (
            "bad-2",
            json!({"commits": [link(&a.to_uppercase(), "2026-03-01T10:00:00Z", "x")]}),
            "not a full hash",
        ),
        (
            "bad-3",
            json!({"unlink_commits": ["abc"]}),
            "not a full hash",
        ),
        (
            "bad-4",
            json!({"commits": [link(&a, "2026-03-01T10:00:00Z", "")]}),
            "subject",
        ),
        ("bad-5", json!({"commits": [{"hash": a}]}), "missing field"),
    ] {
        let p = patch(idem, bad.clone()).await;
        assert_eq!(
            (p.status, code(&p)),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body"),
            "{bad}: {}",
            p.body
        );
        assert_eq!(p.content_type, "application/problem+json");
        assert!(
            p.body["detail"].as_str().unwrap().contains(why),
            "{}",
            p.body
        );
    }
    assert_eq!(app.get("SYN-1").await.body["commits"], got.body["commits"]);
    let doc = app.call("", "GET", "/openapi.json", None, None).await;
    let schemas = &doc.body["components"]["schemas"];
    assert!(
        schemas["CommitLink"]["properties"]["hash"].is_object(),
        "{schemas}"
    );
    assert_eq!(schemas["CommitAction"]["enum"], json!(["closes", "refs"]));
}

/// `PATCH` with another project moves a task: the next number there, its subtasks renumbered
/// under the new key, the old keys resolving to it with `previous_keys`; a replay answers the
/// same key; a subtask alone, an unknown project and the local inbox are refused plainly.
#[tokio::test]
async fn a_move_gives_the_next_key_there_and_old_keys_keep_resolving() {
    let app = TestApp::new("SYN").await;
    let token = app.account.token.clone();
    let made = app
        .call(
            &token,
            "POST",
            "/v1/projects",
            None,
            Some(json!({"name": "Ops", "prefix": "ops"})),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED);
    app.put(Uuid::new_v4(), "a", task("First")).await;
    let parent = Uuid::new_v4();
    assert_eq!(
        app.put(parent, "p", task("Release")).await.body["key"],
        "SYN-2"
    );
    let kid = Uuid::new_v4();
    let sub = json!({"project": "SYN", "description": "Build", "parent": "SYN-2"});
    assert_eq!(app.put(kid, "k", sub).await.body["key"], "SYN-2.1");

    let patch = |idem: &str, r: &str, body: Value| {
        let path = format!("/v1/tasks/{r}");
        let idem = idem.to_owned();
        let token = token.clone();
        let app = &app;
        async move {
            app.call(&token, "PATCH", &path, Some(&idem), Some(body))
                .await
        }
    };
    let a = patch("m1", "syn-2", json!({"project": "ops"})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(
        (
            a.body["key"].clone(),
            a.body["project"].clone(),
            a.body["previous_keys"].clone()
        ),
        (json!("OPS-1"), json!("OPS"), json!(["SYN-2"]))
    );
    let again = patch("m1", "syn-2", json!({"project": "ops"})).await;
    assert_eq!(again.body["key"], "OPS-1", "a replay answers the same key");
    // Old keys resolve, answering the current key.
    let old = app.get("SYN-2").await;
    assert_eq!(
        (old.body["uuid"].clone(), old.body["key"].clone()),
        (json!(parent.to_string()), json!("OPS-1"))
    );
    let old_kid = app.get("syn 2.1").await;
    assert_eq!(old_kid.body["key"], "OPS-1.1");
    assert_eq!(old_kid.body["previous_keys"], json!(["SYN-2.1"]));
    // The store's key and project follow.
    let kid_now = app.get(&kid.to_string()).await;
    assert_eq!(kid_now.body["project"], "OPS");

    for (idem, r, body, status, want) in [
        (
            "r1",
            "OPS-1.1",
            json!({"project": "SYN"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_parent",
        ),
        (
            "r2",
            "OPS-1",
            json!({"project": "NOPE"}),
            StatusCode::NOT_FOUND,
            "project_not_found",
        ),
        (
            "r3",
            "OPS-1",
            json!({"project": "INBOX"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
        ),
        (
            "r4",
            "OPS-1",
            json!({"project": "1x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
        ),
    ] {
        let a = patch(idem, r, body).await;
        assert_eq!((a.status, code(&a)), (status, want), "{idem}: {}", a.body);
    }
    assert_eq!(
        app.get("OPS-1").await.body["project"],
        "OPS",
        "a refused move changes nothing"
    );
    // The next SYN task takes SYN-3: the old number is not reused.
    assert_eq!(
        app.put(Uuid::new_v4(), "n", task("Next")).await.body["key"],
        "SYN-3"
    );
}

/// A subtask sent in the same sync batch as its parent waits for the parent's key (`409`,
/// retryable, nothing stored), then numbers under it; an unknown parent UUID is `422`.
#[tokio::test]
async fn a_subtask_in_its_parents_batch_is_retried_after_the_parent() {
    let app = TestApp::new("SYN").await;
    let token = app.account.token.clone();
    let (parent, kid) = (Uuid::new_v4(), Uuid::new_v4());
    let create = |idem: &str, u: Uuid, parent: Option<Uuid>| {
        let mut fields = json!({"project": "SYN", "description": idem});
        if let Some(p) = parent {
            fields["parent"] = json!(p.to_string());
        }
        json!({"idempotency_key": idem, "op": "create", "uuid": u, "fields": fields})
    };
    let sync = |mutations: Vec<Value>| {
        let token = token.clone();
        let app = &app;
        async move {
            let a = app
                .call(
                    &token,
                    "POST",
                    "/v1/sync",
                    None,
                    Some(json!({"mutations": mutations})),
                )
                .await;
            assert_eq!(a.status, StatusCode::OK, "{}", a.body);
            a.body["results"].as_array().unwrap().clone()
        }
    };
    let r = sync(vec![
        create("p", parent, None),
        create("k", kid, Some(parent)),
    ])
    .await;
    assert_eq!(r[0]["task"]["key"], "SYN-1");
    assert_eq!(
        (r[1]["status"].clone(), r[1]["error"]["code"].clone()),
        (json!(409), json!("task_not_committed"))
    );
    // The same request again is decided anew, and now numbers under the parent.
    let r = sync(vec![create("k", kid, Some(parent))]).await;
    assert_eq!(
        (r[0]["status"].clone(), r[0]["task"]["key"].clone()),
        (json!(201), json!("SYN-1.1"))
    );
    let r = sync(vec![create("x", Uuid::new_v4(), Some(Uuid::new_v4()))]).await;
    assert_eq!(r[0]["error"]["code"], "invalid_parent");
    // Nothing refused took a number.
    assert_eq!(
        app.put(Uuid::new_v4(), "n", task("Next")).await.body["key"],
        "SYN-2"
    );
}

#[tokio::test]
async fn reused_key_with_another_body_is_422_and_missing_key_is_400() {
    let app = TestApp::new("SYN").await;
    let u = Uuid::new_v4();
    app.put(u, "k", task("A")).await;
    let other = app.put(u, "k", task("B")).await;
    assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(code(&other), "idempotency_key_reused");
    assert_eq!(other.content_type, "application/problem+json");
    let token = app.account.token.clone();
    let missing = app
        .call(
            &token,
            "PUT",
            &format!("/v1/tasks/{}", Uuid::new_v4()),
            None,
            Some(task("C")),
        )
        .await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(code(&missing), "idempotency_key_missing");
}

#[tokio::test]
async fn uuid_guard_keeps_one_key_across_idempotency_keys() {
    let app = TestApp::new("SYN").await;
    let u = Uuid::new_v4();
    let first = app.put(u, "k1", task("A")).await;
    let retry = app.put(u, "k2", task("A")).await;
    assert_eq!(
        retry.status,
        StatusCode::OK,
        "same UUID, same body, new key: the existing task"
    );
    assert_eq!(retry.body["key"], first.body["key"]);
    let clash = app.put(u, "k3", task("Different")).await;
    assert_eq!(clash.status, StatusCode::CONFLICT);
    assert_eq!(code(&clash), "task_exists");
    assert_eq!(
        app.put(Uuid::new_v4(), "k4", task("B")).await.body["key"],
        "SYN-2"
    );
}

#[tokio::test]
async fn resolver_accepts_uuid_and_lenient_keys() {
    let app = TestApp::new("SYN").await;
    let mut seventh = Uuid::nil();
    for i in 1..=7 {
        let u = Uuid::new_v4();
        app.put(u, &format!("k{i}"), task(&format!("t{i}"))).await;
        seventh = u;
    }
    for r in [
        seventh.to_string(),
        "SYN-7".into(),
        "syn-7".into(),
        "syn 7".into(),
        "Syn7".into(),
    ] {
        let a = app.get(&r).await;
        assert_eq!(a.status, StatusCode::OK, "{r}");
        assert_eq!(a.body["uuid"], seventh.to_string(), "{r}");
        assert_eq!(a.body["key"], "SYN-7");
    }
    let a = app.get("ABC-1").await;
    assert_eq!(
        (a.status, code(&a)),
        (StatusCode::NOT_FOUND, "unknown_prefix")
    );
    let a = app.get("SYN-99").await;
    assert_eq!(
        (a.status, code(&a)),
        (StatusCode::NOT_FOUND, "task_not_found")
    );
    let a = app.get(&Uuid::new_v4().to_string()).await;
    assert_eq!(
        (a.status, code(&a)),
        (StatusCode::NOT_FOUND, "task_not_found")
    );
    let a = app.get("hello").await;
    assert_eq!(
        (a.status, code(&a)),
        (StatusCode::BAD_REQUEST, "invalid_ref")
    );
    assert!(
        a.body["detail"].as_str().unwrap().contains("SYN-42"),
        "names the accepted forms"
    );
}

#[tokio::test]
async fn another_account_sees_and_replays_nothing() {
    let app = TestApp::new("SYN").await;
    let b = add_account(&app.state, "b", "SYN").await;
    let u = Uuid::new_v4();
    app.put(u, "shared-key", task("A's secret")).await;
    let get = |r: String| {
        let token = b.token.clone();
        let app = &app;
        async move {
            app.call(&token, "GET", &format!("/v1/tasks/{r}"), None, None)
                .await
        }
    };
    assert_eq!(get(u.to_string()).await.status, StatusCode::NOT_FOUND);
    assert_eq!(code(&get("SYN-1".into()).await), "task_not_found");
    let patch = app
        .call(
            &b.token,
            "PATCH",
            &format!("/v1/tasks/{u}"),
            Some("p"),
            Some(json!({"description": "x"})),
        )
        .await;
    assert_eq!(patch.status, StatusCode::NOT_FOUND);
    // The same idempotency key in account B is a fresh request there, never A's stored answer.
    let mine = app
        .call(
            &b.token,
            "PUT",
            &format!("/v1/tasks/{}", Uuid::new_v4()),
            Some("shared-key"),
            Some(task("B's")),
        )
        .await;
    assert_eq!(mine.status, StatusCode::CREATED);
    assert!(!mine.replayed);
    assert_eq!(mine.body["description"], "B's");
    let changes = app.call(&b.token, "GET", "/v1/changes", None, None).await;
    assert_eq!(
        changes.body["changes"].as_array().unwrap().len(),
        1,
        "only B's own task"
    );
}

#[tokio::test]
async fn bad_requests_get_problem_json_and_store_nothing() {
    let app = TestApp::new("SYN").await;
    let t = app.account.token.clone();
    let cases: Vec<(Value, u16, &str)> = vec![
        (
            json!({"project": "syn", "description": "x", "colour": "red"}),
            422,
            "invalid_body",
        ),
        (
            json!({"project": "syn", "description": "   "}),
            422,
            "invalid_body",
        ),
        (
            json!({"project": "s", "description": "x"}),
            422,
            "invalid_body",
        ),
        (
            json!({"project": "nope", "description": "x"}),
            404,
            "project_not_found",
        ),
        (
            json!({"project": "syn", "description": "x", "tags": ["has space"]}),
            422,
            "invalid_body",
        ),
        (json!("not an object"), 422, "invalid_body"),
    ];
    for (i, (body, status, c)) in cases.into_iter().enumerate() {
        let a = app
            .put(Uuid::new_v4(), &format!("bad{i}"), body.clone())
            .await;
        assert_eq!((a.status.as_u16(), code(&a)), (status, c), "{body}");
        assert_eq!(a.content_type, "application/problem+json");
    }
    let huge = json!({"project": "syn", "description": "x", "notes": "n".repeat(2 * 1024 * 1024)});
    assert_eq!(
        app.put(Uuid::new_v4(), "huge", huge).await.status,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    let no_auth = app.call("wrong", "GET", "/v1/projects", None, None).await;
    assert_eq!(
        (no_auth.status, code(&no_auth)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    let bad_uuid = app
        .call(&t, "PUT", "/v1/tasks/SYN-1", Some("x"), Some(task("x")))
        .await;
    assert_eq!(code(&bad_uuid), "invalid_ref");
    let bad_cursor = app
        .call(&t, "GET", "/v1/changes?since=banana", None, None)
        .await;
    assert_eq!(code(&bad_cursor), "invalid_cursor");
    let nowhere = app.call(&t, "GET", "/v2/nothing", None, None).await;
    assert_eq!(
        (nowhere.status, code(&nowhere)),
        (StatusCode::NOT_FOUND, "not_found")
    );
    // None of it consumed a number.
    assert_eq!(
        app.put(Uuid::new_v4(), "good", task("ok")).await.body["key"],
        "SYN-1"
    );
}

#[tokio::test]
async fn projects_have_unique_upper_case_prefixes() {
    let app = TestApp::new("SYN").await;
    let t = app.account.token.clone();
    let made = app
        .call(
            &t,
            "POST",
            "/v1/projects",
            None,
            Some(json!({"name": "Ops", "prefix": "ops"})),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED);
    assert_eq!(made.body["prefix"], "OPS");
    let dup = app
        .call(
            &t,
            "POST",
            "/v1/projects",
            None,
            Some(json!({"name": "Again", "prefix": "Ops"})),
        )
        .await;
    assert_eq!(
        (dup.status, code(&dup)),
        (StatusCode::CONFLICT, "prefix_taken")
    );
    let bad = app
        .call(
            &t,
            "POST",
            "/v1/projects",
            None,
            Some(json!({"name": "Bad", "prefix": "1x"})),
        )
        .await;
    assert_eq!(
        (bad.status, code(&bad)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_prefix")
    );
    // The clients' local inbox is never a server project.
    let inbox = app
        .call(
            &t,
            "POST",
            "/v1/projects",
            None,
            Some(json!({"name": "Inbox", "prefix": "inbox"})),
        )
        .await;
    assert_eq!(
        (inbox.status, code(&inbox)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_prefix")
    );
    let list = app.call(&t, "GET", "/v1/projects", None, None).await;
    let prefixes: Vec<&str> = list.body["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["prefix"].as_str().unwrap())
        .collect();
    assert_eq!(prefixes, vec!["OPS", "SYN"]);
    // Each project numbers from 1.
    let ops = app
        .put(
            Uuid::new_v4(),
            "o1",
            json!({"project": "ops", "description": "x"}),
        )
        .await;
    assert_eq!(ops.body["key"], "OPS-1");
}

#[tokio::test]
async fn updates_are_idempotent_and_appear_in_the_change_feed() {
    let app = TestApp::new("SYN").await;
    let t = app.account.token.clone();
    let u = Uuid::new_v4();
    app.put(u, "c", task("Write report")).await;
    let feed = app.call(&t, "GET", "/v1/changes", None, None).await;
    let cursor = feed.body["cursor"].as_str().unwrap().to_owned();
    let patch = json!({"status": "completed", "notes": "sent"});
    let p1 = app
        .call(
            &t,
            "PATCH",
            "/v1/tasks/syn-1",
            Some("u1"),
            Some(patch.clone()),
        )
        .await;
    assert_eq!(p1.status, StatusCode::OK);
    assert_eq!(p1.body["status"], "completed");
    assert_eq!(p1.body["key"], "SYN-1");
    let p2 = app
        .call(&t, "PATCH", "/v1/tasks/syn-1", Some("u1"), Some(patch))
        .await;
    assert!(p2.replayed);
    assert_eq!(p2.body, p1.body);
    let later = app
        .call(
            &t,
            "GET",
            &format!("/v1/changes?since={cursor}"),
            None,
            None,
        )
        .await;
    let changes = later.body["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0]["notes"], "sent");
    let empty = app
        .call(
            &t,
            "GET",
            &format!(
                "/v1/changes?since={}",
                later.body["cursor"].as_str().unwrap()
            ),
            None,
            None,
        )
        .await;
    assert!(empty.body["changes"].as_array().unwrap().is_empty());
    let nothing = app
        .call(&t, "PATCH", "/v1/tasks/syn-1", Some("u2"), Some(json!({})))
        .await;
    assert_eq!(code(&nothing), "invalid_body");
}

#[tokio::test]
async fn health_openapi_and_retry_metrics() {
    let app = TestApp::new("SYN").await;
    let t = app.account.token.clone();
    assert_eq!(
        app.call("", "GET", "/healthz", None, None).await.status,
        StatusCode::OK
    );
    let doc = app.call("", "GET", "/openapi.json", None, None).await;
    assert!(doc.body["paths"]["/v1/tasks/{ref}"]["put"].is_object());
    assert!(doc.body["paths"]["/v1/sync"]["post"].is_object());
    let u = Uuid::new_v4();
    app.put(u, "r", task("x")).await;
    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    app.put(u, "r", task("x")).await;
    let res = tower::ServiceExt::oneshot(
        callsign_server::router(app.state.clone()),
        axum::http::Request::get("/metrics")
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await
    .unwrap();
    let bytes = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let p50 = text
        .lines()
        .find(|l| l.starts_with("callsign_client_retry_span_seconds{quantile=\"0.5\"}"))
        .unwrap();
    let secs: f64 = p50.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(secs >= 0.03, "{p50}");
    assert!(text.contains("callsign_replays_total 1"), "{text}");
    let _ = t;
}

/// Phase 1 and the task write happened, the commit did not (as after a crash): the reaper
/// commits it, twice-run and concurrent runs agree, and the client's retry replays that key.
/// Phase 2 reads the slot phase 1 made by the row id it was handed, but settles only that
/// slot: a row id that holds another slot is not trusted, and the slot of the request's own
/// idempotency key is found and committed instead; the other stays pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phase_two_settles_the_requests_own_slot_whatever_row_id_it_was_handed() {
    let app = TestApp::new("SYN").await;
    let account = app.account.account_id;
    let body = |d: &str| NewTask::new("SYN", d);
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let now = now_ms();
    let ids = app
        .state
        .sqlite
        .as_ref()
        .unwrap()
        .write(move |c| {
            let mut ids = Vec::new();
            for (u, idem) in [(a, "a"), (b, "b")] {
                slots::insert_task_row(c, account, u, 1, None, b"fp", now)?;
                ids.push(slots::insert_pending_slot(
                    c, account, idem, b"fp", "create", u, "{}", now,
                )?);
            }
            Ok(ids)
        })
        .await
        .unwrap();
    assert_ne!(ids[0], ids[1]);
    let snap = app
        .state
        .tasks
        .create(account, vec![(a, body("A"))])
        .await
        .unwrap()
        .pop()
        .unwrap();
    let render = callsign_server::protocol::render();
    let wrong = callsign_storage::Reserved {
        slot: ids[1],
        project: Some(1),
    };
    let reply = app
        .state
        .sqlite
        .as_ref()
        .unwrap()
        .write(move |c| {
            callsign_storage_sqlite::alloc::protocol::commit_create(
                c, account, "a", wrong, &snap, now, &render,
            )
        })
        .await
        .unwrap();
    let answered: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(reply.status, 201);
    assert_eq!(answered["uuid"], a.to_string());
    assert_eq!(answered["key"], "SYN-1");
    let (sa, sb) = app
        .state
        .sqlite
        .as_ref()
        .unwrap()
        .write(move |c| {
            Ok((
                slots::get_slot(c, account, "a")?,
                slots::get_slot(c, account, "b")?,
            ))
        })
        .await
        .unwrap();
    assert_eq!(sa.unwrap().state, slots::SlotState::Committed);
    let sb = sb.unwrap();
    assert_eq!(
        sb.state,
        slots::SlotState::Pending,
        "the other slot is untouched"
    );
    assert_eq!(sb.id, ids[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reaper_commits_a_stranded_task_once_and_fails_a_taskless_slot() {
    let app = TestApp::new("SYN").await;
    let account = app.account.account_id;
    let u = Uuid::new_v4();
    let body = NewTask::new("SYN", "Stranded");
    let fp = protocol::fingerprint("create", u, &body);
    let request = serde_json::to_string(&body).unwrap();
    let old = now_ms() - 10_000;
    let (fp2, req2) = (fp.clone(), request.clone());
    let ghost = Uuid::new_v4();
    app.state
        .sqlite
        .as_ref()
        .unwrap()
        .write(move |c| {
            slots::insert_task_row(c, account, u, 1, None, &fp2, old)?;
            slots::insert_pending_slot(c, account, "stranded", &fp2, "create", u, &req2, old)?;
            slots::insert_task_row(c, account, ghost, 1, None, b"x", old)?;
            slots::insert_pending_slot(c, account, "ghost", b"x", "create", ghost, "{}", old)?;
            Ok(())
        })
        .await
        .unwrap();
    app.state
        .tasks
        .create(account, vec![(u, body.clone())])
        .await
        .unwrap();

    // Window of 24 h: the taskless slot is left alone, the stranded one is committed.
    let (a, b) = tokio::join!(reaper::run_once(&app.state), reaper::run_once(&app.state));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(
        a.committed + b.committed,
        1,
        "committed exactly once: {a:?} {b:?}"
    );
    assert_eq!(a.failed + b.failed, 0);
    let again = reaper::run_once(&app.state).await.unwrap();
    assert_eq!(again.committed, 0);

    let retry = app
        .put(
            u,
            "stranded",
            json!({"project": "SYN", "description": "Stranded"}),
        )
        .await;
    assert!(retry.replayed);
    assert_eq!(retry.body["key"], "SYN-1");
    let stored = app.state.tasks.get(account, vec![u]).await.unwrap();
    assert_eq!(
        stored[0].as_ref().unwrap().key.as_deref(),
        Some("SYN-1"),
        "key written onto the task"
    );

    // The ghost slot is still pending; with a zero window it fails and consumes no number.
    let mut config = app.state.config.clone();
    config.idempotency_window = callsign_storage::window::Setting::Fixed(std::time::Duration::ZERO);
    let state0 = callsign_server::AppState::open(config).await.unwrap();
    let r = reaper::run_once(&state0).await.unwrap();
    assert_eq!(r.failed, 1);
    let next = app.put(Uuid::new_v4(), "n", task("Next")).await;
    assert_eq!(next.body["key"], "SYN-2");
}

#[tokio::test]
async fn a_sync_answer_leaves_out_only_the_changes_its_own_commits_made() {
    let app = TestApp::new("SYN").await;
    let t = app.account.token.clone();
    let sync = |since: &str, mutations: Value| {
        let body = json!({"since": since, "mutations": mutations});
        app.call(&t, "POST", "/v1/sync", None, Some(body))
    };
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    app.put(a, "other-device", task("made elsewhere")).await;
    let first = sync(
        "0",
        json!([
            {"idempotency_key": "c-b", "op": "create", "uuid": b, "fields": task("mine")},
            {"idempotency_key": "u-b", "op": "update", "uuid": b, "fields": {"notes": "n"}},
        ]),
    )
    .await;
    assert_eq!(first.status, StatusCode::OK);
    let result = &first.body["results"][1]["task"];
    assert_eq!(
        (result["key"].as_str(), result["notes"].as_str()),
        (Some("SYN-2"), Some("n"))
    );
    let uuids: Vec<&str> = first.body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uuid"].as_str().unwrap())
        .collect();
    assert_eq!(
        uuids,
        vec![a.to_string()],
        "another request's change is sent, ours is not"
    );
    let cursor = first.body["cursor"].as_str().unwrap().to_owned();
    let plain = app.call(&t, "GET", "/v1/changes", None, None).await;
    assert_eq!(plain.body["changes"].as_array().unwrap().len(), 2);
    assert_eq!(
        cursor, plain.body["cursor"],
        "past all three changes, the left-out ones too"
    );

    // A replay is an old answer: the task's latest state comes through the feed.
    app.call(
        &t,
        "PATCH",
        &format!("/v1/tasks/{b}"),
        Some("elsewhere"),
        Some(json!({"notes": "later"})),
    )
    .await;
    let replay = sync(
        &cursor,
        json!([{"idempotency_key": "u-b", "op": "update", "uuid": b, "fields": {"notes": "n"}}]),
    )
    .await;
    assert_eq!(replay.body["results"][0]["replayed"], true);
    let changes = replay.body["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(
        (changes[0]["uuid"].as_str(), changes[0]["notes"].as_str()),
        (Some(&*b.to_string()), Some("later"))
    );

    // `GET /v1/changes` leaves nothing out.
    let feed = app.call(&t, "GET", "/v1/changes?since=0", None, None).await;
    assert_eq!(
        feed.body["changes"].as_array().unwrap().len(),
        2,
        "the plain feed leaves nothing out"
    );
}

/// A server whose databases have been at rest since they were opened: the checkpoint thread
/// has had its look at each file it was told of at open, so what follows depends on the writers
/// handing it their commits.
async fn app_at_rest() -> TestApp {
    let app = TestApp::new("SYN").await;
    app.create_tasks("warm", 1).await;
    tokio::time::sleep(callsign_storage_sqlite::wal::AT_REST * 2).await;
    app
}

#[tokio::test]
async fn databases_at_rest_have_their_wal_checkpointed_away_and_keep_every_task() {
    let app = app_at_rest().await;
    app.create_tasks("k", 30).await;
    let replica = app
        ._dir
        .path()
        .join(format!("accounts/{}", app.account.account_id))
        .join("taskchampion.sqlite3-wal");
    let allocation = app._dir.path().join("callsign.sqlite3-wal");
    let len = |wal: &std::path::Path| std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0);
    assert!(
        len(&replica) > 0,
        "the creates were not in the replica's WAL"
    );
    assert!(
        len(&allocation) > 0,
        "the keys were not in the allocation DB's WAL"
    );
    crate::common::eventually(10, "the checkpoint at rest to empty both WALs", || {
        len(&replica) == 0 && len(&allocation) == 0
    })
    .await;
    for i in 0..31 {
        let a = app.get(&format!("SYN-{}", i + 1)).await;
        assert_eq!(a.status, StatusCode::OK);
        assert!(a.body["description"].as_str().unwrap().starts_with('t'));
        assert_eq!(a.body["key"], format!("SYN-{}", i + 1));
    }
}

/// The writers hand their commits to the background checkpoint thread: the allocation DB's
/// writer checkpoints by itself only at 10,000 WAL pages, yet a copy of its database file alone
/// (without the WAL) soon holds every key handed out.
#[tokio::test]
async fn committed_keys_reach_the_database_file_before_the_writers_own_checkpoint() {
    let app = std::sync::Arc::new(app_at_rest().await);
    app.create_tasks("c", 30).await;
    // Commits go on, so the files are never at rest: only the copying while they are written
    // can bring the keys into the file.
    let writing = {
        let app = app.clone();
        tokio::spawn(async move {
            for i in 0.. {
                app.create_tasks(&format!("more{i}-"), 1).await;
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        })
    };
    let db = app._dir.path().join("callsign.sqlite3");
    let copy_dir = tempfile::tempdir().unwrap();
    let copy = copy_dir.path().join("copy.sqlite3");
    let keys_in_file_alone = || {
        // A copy taken mid-checkpoint may be torn: that try counts as "not yet".
        std::fs::copy(&db, &copy).ok()?;
        let c = rusqlite::Connection::open(&copy).ok()?;
        c.query_row("SELECT COUNT(*) FROM keys WHERE number <= 31", [], |r| {
            r.get::<_, i64>(0)
        })
        .ok()
    };
    crate::common::eventually(10, "the keys to be checkpointed into the file", || {
        keys_in_file_alone() == Some(31)
    })
    .await;
    writing.abort();
}

/// `/readyz` follows the databases while `/healthz` stays a liveness answer: a write the
/// allocation database refuses (as with a full disk) and an account's unreadable task database
/// are each `503 not_ready`, and ready again once they work.
#[tokio::test]
async fn readyz_reflects_the_databases_and_healthz_stays_live() {
    let app = TestApp::new("SYN").await;
    let token = app.account.token.clone();
    let ready = app.call("", "GET", "/readyz", None, None).await;
    assert_eq!(ready.status, StatusCode::OK, "{:?}", ready.body);

    let db = rusqlite::Connection::open(app._dir.path().join("callsign.sqlite3")).unwrap();
    db.execute_batch(
        "CREATE TRIGGER full_disk BEFORE UPDATE ON server_meta
         BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END",
    )
    .unwrap();
    let not = app.call("", "GET", "/readyz", None, None).await;
    assert_eq!(not.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(not.content_type, "application/problem+json");
    assert_eq!(code(&not), "not_ready");
    assert!(not.body["detail"]
        .as_str()
        .unwrap()
        .contains("allocation database cannot be written"));
    let live = app.call("", "GET", "/healthz", None, None).await;
    assert_eq!(live.status, StatusCode::OK);
    db.execute_batch("DROP TRIGGER full_disk").unwrap();
    assert_eq!(
        app.call("", "GET", "/readyz", None, None).await.status,
        StatusCode::OK
    );

    // Account 1's replica is not a database (its first open is still to come).
    let replica = app._dir.path().join("accounts/1");
    std::fs::create_dir_all(&replica).unwrap();
    std::fs::write(replica.join("taskchampion.sqlite3"), vec![0x5a; 8192]).unwrap();
    let task = app.put(Uuid::new_v4(), "k", task("t")).await;
    assert_eq!(task.status, StatusCode::SERVICE_UNAVAILABLE);
    let not = app.call(&token, "GET", "/readyz", None, None).await;
    assert_eq!(not.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(code(&not), "not_ready");
    assert!(
        not.body["detail"]
            .as_str()
            .unwrap()
            .contains("1 account(s)"),
        "{:?}",
        not.body
    );
    assert_eq!(
        app.call("", "GET", "/healthz", None, None).await.status,
        StatusCode::OK
    );
}

/// Every error answer is problem+json with its code: methods a path lacks (with `Allow`), a
/// path that is not UTF-8, a malformed `limit`, keys with more than one separator, and request
/// heads larger than the server reads.
#[tokio::test]
async fn every_error_answer_is_problem_json_with_its_code() {
    use crate::hardening::router_call;
    let app = TestApp::new("SYN").await;
    app.create_tasks("k", 1).await;
    let auth = format!("Bearer {}", app.account.token);
    let auth = [("authorization", auth.as_str())];
    let with_body = [
        auth[0],
        ("idempotency-key", "k-ff"),
        ("content-type", "application/json"),
    ];
    let uuid_path = format!("/v1/tasks/{}", Uuid::new_v4());
    let long_path = format!("/v1/tasks/{}", "a".repeat(9000));
    let many: Vec<(String, String)> = (0..70).map(|i| (format!("x-h{i}"), "v".into())).collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let big = "v".repeat(40 * 1024);
    let big = [("x-big", big.as_str())];
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], u16, &'a str);
    let cases: Vec<Case> = vec![
        ("DELETE", "/v1/projects", &auth, 405, "method_not_allowed"),
        ("DELETE", &uuid_path, &auth, 405, "method_not_allowed"),
        ("POST", "/healthz", &[], 405, "method_not_allowed"),
        ("PUT", "/v1/tasks/%FF", &with_body, 400, "invalid_ref"),
        ("GET", "/v1/tasks/%FF", &auth, 400, "invalid_ref"),
        ("GET", "/v1/changes?limit=-1", &auth, 400, "invalid_query"),
        ("GET", "/v1/changes?limit=ten", &auth, 400, "invalid_query"),
        ("GET", "/v1/changes?limit[x]=1", &auth, 400, "invalid_query"),
        ("GET", "/v1/changes?limit=", &auth, 400, "invalid_query"),
        (
            "GET",
            "/v1/changes?limit=9223372036854775808",
            &auth,
            400,
            "invalid_query",
        ),
        ("GET", "/v1/tasks/SYN--1", &auth, 400, "invalid_ref"),
        ("GET", "/v1/tasks/SYN---1", &auth, 400, "invalid_ref"),
        ("GET", "/v1/tasks/SYN%09-%0A1", &auth, 400, "invalid_ref"),
        ("GET", &long_path, &auth, 414, "uri_too_long"),
        ("GET", "/v1/projects", &many, 431, "headers_too_large"),
        ("GET", "/v1/projects", &big, 431, "headers_too_large"),
    ];
    for (method, path, headers, status, want) in cases {
        let (got, h, body) = router_call(&app, method, path, headers).await;
        let what = format!("{method} {}", &path[..path.len().min(40)]);
        assert_eq!(got.as_u16(), status, "{what}: {body}");
        assert_eq!(h["content-type"], "application/problem+json", "{what}");
        assert_eq!(body["code"], want, "{what}");
        assert_eq!(body["status"], status, "{what}");
    }
    let (_, h, _) = router_call(&app, "DELETE", &uuid_path, &auth).await;
    let allow = h["allow"].to_str().unwrap();
    for m in ["GET", "PUT", "PATCH"] {
        assert!(allow.contains(m), "{allow}");
    }
    for ok in [
        "SYN-1",
        "syn%201",
        "syn1",
        "/v1/changes?limit=0",
        "/v1/changes?limit=5000",
    ] {
        let path = if ok.starts_with('/') {
            ok.to_owned()
        } else {
            format!("/v1/tasks/{ok}")
        };
        let (got, _, body) = router_call(&app, "GET", &path, &auth).await;
        assert_eq!(got, StatusCode::OK, "{path}: {body}");
    }
}

/// `/openapi.json` describes the API exactly: unique operation ids, query parameters in the
/// query and optional, one template per path, bearer security on every `/v1` operation, and
/// every error answer (401 included) as problem+json.
#[tokio::test]
async fn the_openapi_document_is_exact() {
    let app = TestApp::new("SYN").await;
    let doc = app.call("", "GET", "/openapi.json", None, None).await.body;
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer",
        "{}",
        doc["components"]["securitySchemes"]
    );
    let paths = doc["paths"].as_object().unwrap();
    for p in [
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.json",
        "/v1/tasks/{ref}",
    ] {
        assert!(paths.contains_key(p), "{p} missing");
    }
    assert!(
        !paths.contains_key("/v1/tasks/{uuid}"),
        "one template per path"
    );
    let mut ids = std::collections::HashSet::new();
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            let at = format!("{method} {path}");
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{at}: no id"));
            assert!(ids.insert(id.to_owned()), "{at}: operationId {id} twice");
            // Every /v1 operation needs the token but joining, which is how a device gets one.
            let v1 = path.starts_with("/v1/") && path != "/v1/join";
            assert_eq!(op["security"].is_array(), v1, "{at}: security");
            let responses = op["responses"].as_object().unwrap();
            if v1 {
                assert!(responses.contains_key("401"), "{at}: 401 undocumented");
                assert!(responses.contains_key("429"), "{at}: 429 undocumented");
            }
            for (status, r) in responses {
                if status.starts_with('4') || status.starts_with('5') {
                    let content = r["content"].as_object();
                    assert!(
                        content.is_some_and(|c| c.keys().eq(["application/problem+json"])),
                        "{at} {status}: {}",
                        r["content"]
                    );
                }
            }
            for param in op["parameters"].as_array().into_iter().flatten() {
                let name = param["name"].as_str().unwrap();
                if ["since", "limit", "wait"].contains(&name) {
                    assert_eq!(param["in"], "query", "{at} {name}");
                    assert_ne!(param["required"], true, "{at} {name}");
                }
            }
        }
    }
    let fields = &doc["components"]["schemas"]["Mutation"]["properties"]["fields"];
    assert!(
        fields.get("type").is_none(),
        "any JSON, checked per mutation: {fields}"
    );
    let put = &doc["paths"]["/v1/tasks/{ref}"]["put"]["responses"];
    assert!(put["404"]["description"]
        .as_str()
        .unwrap()
        .contains("project_not_found"));
    let changes = &doc["paths"]["/v1/changes"]["get"]["parameters"];
    assert_eq!(changes.as_array().map(Vec::len), Some(3), "{changes}");
}
