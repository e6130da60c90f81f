//! Issue 20, item 15: private files, limited failed authentications, per-account numbering,
//! duplicate headers.
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;
use uuid::Uuid;

use crate::common::{add_account, create_account, task, Client, TestApp, TestServer};

/// The data dir the server creates is 0700 and every file of its databases 0600, while it
/// serves (so the `-wal` and `-shm` files exist).
#[cfg(unix)]
#[tokio::test]
async fn the_data_dir_and_its_database_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    let (_, token) = create_account(&dir, "SYN");
    let server = TestServer::start(&dir, &[], &[]);
    let (status, _, _) = Client::new(&server.url, &token)
        .put(Uuid::new_v4(), "k", &task("t"))
        .await
        .unwrap();
    assert_eq!(status, 201);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    for d in [dir.clone(), dir.join("accounts"), dir.join("accounts/1")] {
        assert_eq!(mode(&d), 0o700, "{}", d.display());
    }
    let mut files = Vec::new();
    for base in ["callsign.sqlite3", "accounts/1/taskchampion.sqlite3"] {
        for suffix in ["", "-wal", "-shm"] {
            files.push(dir.join(format!("{base}{suffix}")));
        }
    }
    files.push(dir.join("server.lock"));
    for f in files {
        assert!(f.exists(), "{} exists while serving", f.display());
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }
}

fn code(body: &Value) -> &str {
    body["code"].as_str().unwrap_or("")
}

/// 20 failed authentications a minute per address, then `429` with `Retry-After`; requests
/// with no token at all are not failures, and a device whose token was just accepted keeps
/// working.
#[tokio::test]
async fn failed_authentications_are_limited_per_address() {
    let app = TestApp::new("SYN").await;
    let good = app.account.token.clone();
    assert_eq!(
        app.call(&good, "GET", "/v1/projects", None, None)
            .await
            .status,
        StatusCode::OK
    );
    for _ in 0..30 {
        let none = router_call(&app, "GET", "/v1/projects", &[]).await;
        assert_eq!(none.0, StatusCode::UNAUTHORIZED);
    }
    for i in 0..20 {
        let bad = app
            .call("cs_wrong", "GET", "/v1/projects", None, None)
            .await;
        assert_eq!(bad.status, StatusCode::UNAUTHORIZED, "failure {i}");
    }
    let (status, headers, body) = router_call(
        &app,
        "GET",
        "/v1/projects",
        &[("authorization", "Bearer cs_wrong")],
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(code(&body), "too_many_requests");
    assert_eq!(headers["content-type"], "application/problem+json");
    let wait: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    let ok = app.call(&good, "GET", "/v1/projects", None, None).await;
    assert_eq!(
        ok.status,
        StatusCode::OK,
        "a known device is not locked out"
    );
}

/// Sends a request with exactly these headers through `router(state)` (a PUT carries a task
/// body): status, headers and the JSON body (`Null` if none).
pub async fn router_call(
    app: &TestApp,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, axum::http::HeaderMap, Value) {
    let mut req = Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let body = if method == "PUT" {
        Body::from(task("x").to_string())
    } else {
        Body::empty()
    };
    let res = callsign_server::router(app.state.clone())
        .oneshot(req.body(body).unwrap())
        .await
        .unwrap();
    let (parts, body) = res.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    (
        parts.status,
        parts.headers,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// Two `Authorization` or two `Idempotency-Key` headers are refused, whichever comes first.
#[tokio::test]
async fn a_repeated_authorization_or_idempotency_key_header_is_400() {
    let app = TestApp::new("SYN").await;
    let good = format!("Bearer {}", app.account.token);
    let path = format!("/v1/tasks/{}", Uuid::new_v4());
    let cases: [&[(&str, &str)]; 3] = [
        &[
            ("authorization", &good),
            ("authorization", "Bearer cs_other"),
        ],
        &[
            ("authorization", "Bearer cs_other"),
            ("authorization", &good),
        ],
        &[
            ("authorization", &good),
            ("idempotency-key", "a"),
            ("idempotency-key", "b"),
            ("content-type", "application/json"),
        ],
    ];
    for headers in cases {
        let (status, h, body) = router_call(&app, "PUT", &path, headers).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{headers:?}: {body}");
        assert_eq!(code(&body), "duplicate_header");
        assert_eq!(h["content-type"], "application/problem+json");
    }
    let (status, _, _) = router_call(
        &app,
        "PUT",
        &path,
        &[
            ("authorization", &good),
            ("idempotency-key", "a"),
            ("content-type", "application/json"),
        ],
    )
    .await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "the same request with each header once"
    );
}

/// What one account sees counts nothing of another's: its first project is 1 and its cursors
/// are opaque and its own, however busy the other account is.
#[tokio::test]
async fn project_ids_and_cursors_count_only_the_callers_account() {
    let app = TestApp::new("SYN").await;
    let a = app.account.token.clone();
    app.create_tasks("a", 5).await;
    let b_account = add_account(&app.state, "b", "OTH").await;
    let b = b_account.token.clone();
    assert_eq!(b_account.project.id, 1);
    let made = app
        .call(
            &b,
            "POST",
            "/v1/projects",
            None,
            Some(json!({"name": "Two", "prefix": "TWO"})),
        )
        .await;
    assert_eq!(
        (made.status, made.body["id"].as_i64()),
        (StatusCode::CREATED, Some(2))
    );
    let list = app.call(&b, "GET", "/v1/projects", None, None).await;
    let ids: Vec<i64> = list.body["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![1, 2]);

    let u = Uuid::new_v4();
    let put = app
        .call(
            &b,
            "PUT",
            &format!("/v1/tasks/{u}"),
            Some("b1"),
            Some(json!({"project": "oth", "description": "b's"})),
        )
        .await;
    assert_eq!(put.status, StatusCode::CREATED);
    let feed = app.call(&b, "GET", "/v1/changes", None, None).await;
    let cursor = feed.body["cursor"].as_str().unwrap().to_owned();
    assert!(
        cursor.parse::<i64>().is_err(),
        "{cursor} is not a sequence number"
    );
    let a_feed = app.call(&a, "GET", "/v1/changes", None, None).await;
    let a_cursor = a_feed.body["cursor"].as_str().unwrap().to_owned();
    for foreign in [a_cursor.as_str(), "6", "5"] {
        let r = app
            .call(
                &b,
                "GET",
                &format!("/v1/changes?since={foreign}"),
                None,
                None,
            )
            .await;
        assert_eq!(
            (r.status, code(&r.body)),
            (StatusCode::BAD_REQUEST, "invalid_cursor"),
            "{foreign}"
        );
    }
    let after = app
        .call(
            &b,
            "GET",
            &format!("/v1/changes?since={cursor}"),
            None,
            None,
        )
        .await;
    assert_eq!(after.status, StatusCode::OK);
    assert_eq!(after.body["changes"], json!([]));
    assert_eq!(after.body["cursor"], cursor.as_str());
    app.call(
        &b,
        "PATCH",
        &format!("/v1/tasks/{u}"),
        Some("b2"),
        Some(json!({"notes": "n"})),
    )
    .await;
    let next = app
        .call(
            &b,
            "GET",
            &format!("/v1/changes?since={cursor}"),
            None,
            None,
        )
        .await;
    assert_eq!(
        next.body["changes"][0]["notes"], "n",
        "the feed goes on from the cursor"
    );
}
