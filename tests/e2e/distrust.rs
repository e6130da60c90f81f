//! The client trusts nothing the network sends (issue 20, items 1-4): the real `callsign` CLI
//! against fake servers on 127.0.0.1 that lie. An answer for another task, or one key for two
//! tasks, binds nothing and leaves the rows queued; a change feed that never advances ends the
//! command within `--timeout`; an answer too large is not read whole; a redirect off the
//! configured origin is not followed; tasks that break the field rules are skipped without
//! blocking later syncs.
use std::process::Output;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use callsign_core::dto::{MutationResult, SyncRequest, SyncResponse};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::fake::{empty_page, projects, task, FakeServer, Hits};
use crate::fixture::Cli;

/// A fake server running `router`, and the CLI on a fresh data dir logged in to it.
struct Setup {
    cli: Cli,
    _fake: FakeServer,
    _home: tempfile::TempDir,
}

fn logged_in(router: Router) -> Result<Setup> {
    let fake = FakeServer::start(router);
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&fake.url, "t0ken")?;
    Ok(Setup {
        cli,
        _fake: fake,
        _home: home,
    })
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `callsign sync --timeout T` and fails the test if it is still running `limit` later.
fn sync_within(cli: &Cli, timeout_s: u64, limit: Duration) -> Result<(Output, Duration)> {
    let t = timeout_s.to_string();
    let start = Instant::now();
    let child = cli
        .command(&["sync", "--timeout", &t])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => Ok((out?, start.elapsed())),
        Err(_) => {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
            bail!("`callsign sync --timeout {timeout_s}` still ran after {limit:?}")
        }
    }
}

/// A fake whose `POST /v1/sync` answers each create through `answer` while `lying` holds, and
/// honestly (the right UUID, keys SYN-1, SYN-2, ... in order) once it does not.
fn answering(
    lying: Arc<AtomicBool>,
    answer: fn(usize, &callsign_core::dto::Mutation) -> Value,
) -> Router {
    let next = Arc::new(AtomicU64::new(0));
    Router::new()
        .route("/v1/projects", get(|| async { Json(projects()) }))
        .route("/v1/changes", get(|| async { Json(empty_page("c")) }))
        .route(
            "/v1/sync",
            post(move |Json(req): Json<SyncRequest>| async move {
                let results: Vec<Value> = req
                    .mutations
                    .iter()
                    .enumerate()
                    .map(|(i, m)| {
                        let t = if lying.load(Ordering::SeqCst) {
                            answer(i, m)
                        } else {
                            let n = next.fetch_add(1, Ordering::SeqCst) + 1;
                            json!(task(m.uuid, Some(n), "honest"))
                        };
                        json!({"idempotency_key": m.idempotency_key, "status": 201, "task": t})
                    })
                    .collect();
                Json(json!({"results": results, "changes": [], "cursor": "c", "has_more": false}))
            }),
        )
}

/// Both tasks queued, provisional and keyless, after a sync that must have failed loudly.
fn still_queued(cli: &Cli, out: &Output) -> Result<()> {
    assert!(!out.status.success(), "the sync must fail loudly");
    let err = stderr(out);
    assert!(err.contains("did not add up"), "{err}");
    let list = cli.list()?;
    assert_eq!(list.len(), 2);
    for t in &list {
        assert_eq!(t["key"], Value::Null, "{t}");
        assert_eq!(t["sync_state"], "provisional", "{t}");
    }
    let st = cli.json(&["status"])?;
    assert_eq!(
        st["pending"].as_u64().unwrap_or(0) + st["in_flight"].as_u64().unwrap_or(0),
        2
    );
    Ok(())
}

fn two_tasks_then_lies(answer: fn(usize, &callsign_core::dto::Mutation) -> Value) -> Result<()> {
    let lying = Arc::new(AtomicBool::new(true));
    let setup = logged_in(answering(lying.clone(), answer))?;
    let cli = &setup.cli;
    let a = cli.add("first", &[])?;
    let b = cli.add("second", &[])?;
    let (out, _) = sync_within(cli, 5, Duration::from_secs(30))?;
    still_queued(cli, &out)?;
    // The server mends its ways: the same rows go again and get the right keys.
    lying.store(false, Ordering::SeqCst);
    cli.ok(&["sync", "--timeout", "10"])?;
    let key = |u: &str| -> Result<Value> { Ok(cli.json(&["show", u])?["key"].clone()) };
    assert_eq!((key(&a)?, key(&b)?), (json!("SYN-1"), json!("SYN-2")));
    Ok(())
}

#[test]
fn an_answer_for_another_task_binds_nothing_and_stays_queued() -> Result<()> {
    two_tasks_then_lies(|i, _| json!(task(Uuid::new_v4(), Some(i as u64 + 1), "someone else")))
}

#[test]
fn one_key_answered_for_two_tasks_binds_neither() -> Result<()> {
    two_tasks_then_lies(|_, m| json!(task(m.uuid, Some(1), "same key")))
}

#[test]
fn an_answer_with_an_impossible_number_binds_nothing() -> Result<()> {
    two_tasks_then_lies(|_, m| {
        json!({"uuid": m.uuid, "key": format!("SYN-{}", u64::MAX), "project": "SYN",
            "number": u64::MAX, "description": "x", "notes": "", "status": "pending", "tags": [],
            "created_at": "2026-01-01T00:00:00Z", "modified_at": "2026-01-01T00:00:00Z"})
    })
}

#[test]
fn a_change_feed_that_never_advances_ends_the_sync_at_once() -> Result<()> {
    let hits = Hits::default();
    let h = hits.clone();
    let router = Router::new()
        .route("/v1/projects", get(|| async { Json(projects()) }))
        .route(
            "/v1/changes",
            get(move || async move {
                h.hit();
                let junk = task(Uuid::new_v4(), None, "junk");
                Json(json!({"changes": [junk], "cursor": "same", "has_more": true}))
            }),
        );
    let setup = logged_in(router)?;
    let cli = &setup.cli;
    let (out, took) = sync_within(cli, 5, Duration::from_secs(30))?;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("does not advance"),
        "{}",
        stderr(&out)
    );
    assert!(hits.get() <= 3, "{} requests", hits.get());
    assert!(took < Duration::from_secs(5), "{took:?}");
    Ok(())
}

#[test]
fn a_feed_that_goes_round_in_circles_is_bounded_by_the_timeout() -> Result<()> {
    let hits = Hits::default();
    let h = hits.clone();
    let router = Router::new()
        .route("/v1/projects", get(|| async { Json(projects()) }))
        .route(
            "/v1/changes",
            get(move || async move {
                let n = h.hit();
                let junk = task(Uuid::new_v4(), None, "junk");
                Json(json!({"changes": [junk], "cursor": format!("c{}", n % 2), "has_more": true}))
            }),
        );
    let setup = logged_in(router)?;
    let cli = &setup.cli;
    let (out, took) = sync_within(cli, 3, Duration::from_secs(30))?;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("did not finish within 3 s"),
        "{}",
        stderr(&out)
    );
    assert!(took < Duration::from_secs(6), "{took:?}");
    Ok(())
}

/// `bytes` of spaces, streamed in 1 MiB chunks with no length (or with `length` declared).
fn endless(bytes: usize, sent: Arc<AtomicU64>) -> Response {
    let chunk = Bytes::from(vec![b' '; 1 << 20]);
    let stream = futures_util::stream::iter((0..bytes >> 20).map(move |_| {
        sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
        Ok::<_, std::convert::Infallible>(chunk.clone())
    }));
    (
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(stream),
    )
        .into_response()
}

#[test]
fn an_answer_too_large_is_not_read_whole() -> Result<()> {
    const BODY: usize = 256 << 20;
    let sent = Arc::new(AtomicU64::new(0));
    let hits = Hits::default();
    let (s, h) = (sent.clone(), hits.clone());
    let router = Router::new()
        .route("/v1/projects", get(|| async { Json(projects()) }))
        .route(
            "/v1/changes",
            get(move || async move {
                h.hit();
                endless(BODY, s)
            }),
        );
    let setup = logged_in(router)?;
    let cli = &setup.cli;
    let (out, _) = sync_within(cli, 60, Duration::from_secs(120))?;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("larger than 64 MiB"),
        "{}",
        stderr(&out)
    );
    let requests = hits.get() as u64;
    let per_request = sent.load(Ordering::SeqCst) / requests.max(1);
    println!(
        "{requests} requests, {} MiB sent per request of a {} MiB body",
        per_request >> 20,
        BODY >> 20
    );
    // The client stops reading at the cap (plus what the socket buffers held).
    assert!(
        per_request < (BODY as u64) / 2,
        "{per_request} bytes per request"
    );
    Ok(())
}

#[test]
fn a_declared_length_over_the_cap_is_refused_unread() -> Result<()> {
    let router = Router::new()
        .route("/v1/projects", get(|| async { Json(projects()) }))
        .route(
            "/v1/changes",
            get(|| async {
                // A length far past the cap: the client must refuse before reading the body.
                let mut r = endless(300 << 20, Arc::default());
                r.headers_mut().insert(
                    header::CONTENT_LENGTH,
                    header::HeaderValue::from(300u64 << 20),
                );
                r
            }),
        );
    let setup = logged_in(router)?;
    let cli = &setup.cli;
    let (out, took) = sync_within(cli, 30, Duration::from_secs(60))?;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("larger than 64 MiB"),
        "{}",
        stderr(&out)
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    Ok(())
}

#[test]
fn a_redirect_off_the_origin_is_not_followed_and_one_within_it_is() -> Result<()> {
    let elsewhere_hits = Hits::default();
    let eh = elsewhere_hits.clone();
    let elsewhere = FakeServer::start(Router::new().fallback(move || async move {
        eh.hit();
        StatusCode::NOT_FOUND
    }));
    let target = format!("{}/v1/sync", elsewhere.url);
    let router =
        Router::new()
            // Within the origin: followed.
            .route(
                "/v1/projects",
                get(|| async {
                    (
                        StatusCode::TEMPORARY_REDIRECT,
                        [(header::LOCATION, "/v1/projects2")],
                    )
                }),
            )
            .route("/v1/projects2", get(|| async { Json(projects()) }))
            .route("/v1/changes", get(|| async { Json(empty_page("c")) }))
            .route(
                "/v1/sync",
                post(move || async move {
                    (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, target)])
                }),
            );
    let fake = FakeServer::start(router);
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    let login = cli.json(&["login", "--server", &fake.url, "--token", "t0ken"])?;
    assert_eq!(
        login["project"], "SYN",
        "a redirect within the origin is followed: {login}"
    );
    cli.add("secret plans", &[])?;
    let (out, _) = sync_within(&cli, 5, Duration::from_secs(30))?;
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("redirected to") && err.contains(&elsewhere.url),
        "{err}"
    );
    assert_eq!(
        elsewhere_hits.get(),
        0,
        "the task text went to another host"
    );
    assert_eq!(cli.json(&["status"])?["pending"], 1);
    Ok(())
}

#[test]
fn feed_tasks_that_break_the_rules_are_skipped_and_block_nothing() -> Result<()> {
    let good = Uuid::new_v4();
    let later = Uuid::new_v4();
    let second = Arc::new(AtomicBool::new(false));
    let s = second.clone();
    let router = Router::new()
        .route("/v1/projects", get(|| async { Json(projects()) }))
        .route(
            "/v1/changes",
            get(move || async move {
                if s.swap(true, Ordering::SeqCst) {
                    return Json(json!({"changes": [task(later, Some(4), "later")],
                        "cursor": "c2", "has_more": false}));
                }
                let huge = task(Uuid::new_v4(), Some(2), &"x".repeat(5_000_000));
                let mut max = json!(task(Uuid::new_v4(), None, "max"));
                max["key"] = json!(format!("SYN-{}", u64::MAX));
                max["number"] = json!(u64::MAX);
                let mut negative = json!(task(Uuid::new_v4(), Some(3), "negative"));
                negative["number"] = json!(-1);
                Json(
                    json!({"changes": [task(good, Some(1), "good"), huge, max, negative],
                    "cursor": "c1", "has_more": false}),
                )
            }),
        )
        .route(
            "/v1/sync",
            post(|Json(_): Json<SyncRequest>| async {
                Json(SyncResponse {
                    results: Vec::<MutationResult>::new(),
                    changes: vec![],
                    cursor: "c1".into(),
                    has_more: false,
                })
            }),
        );
    let setup = logged_in(router)?;
    let cli = &setup.cli;
    let (out, _) = sync_within(cli, 10, Duration::from_secs(30))?;
    assert!(!out.status.success(), "the skipped tasks are reported");
    let err = stderr(&out);
    assert!(
        err.contains("description is longer") && err.contains("out of range"),
        "{err}"
    );
    assert!(err.contains("not a task"), "{err}");
    assert!(
        err.len() < 4000,
        "the reason quotes, it does not dump: {} bytes",
        err.len()
    );
    let list = cli.list()?;
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["key"], "SYN-1");
    // The next sync is not blocked by what came before.
    cli.ok(&["sync", "--timeout", "10"])?;
    assert_eq!(cli.json(&["show", &later.to_string()])?["key"], "SYN-4");
    Ok(())
}

#[test]
fn a_key_answered_for_a_task_that_another_task_holds_here_binds_nothing() -> Result<()> {
    let lying = Arc::new(AtomicBool::new(false));
    let setup = logged_in(answering(lying.clone(), |_, m| {
        json!(task(m.uuid, Some(1), "taken key"))
    }))?;
    let cli = &setup.cli;
    let a = cli.add("first", &[])?;
    cli.ok(&["sync", "--timeout", "10"])?;
    assert_eq!(cli.json(&["show", &a])?["key"], "SYN-1");
    lying.store(true, Ordering::SeqCst);
    let b = cli.add("second", &[])?;
    let (out, _) = sync_within(cli, 5, Duration::from_secs(30))?;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("names task"), "{}", stderr(&out));
    assert_eq!(cli.json(&["show", &a])?["key"], "SYN-1", "A keeps its key");
    assert_eq!(
        cli.json(&["show", &b])?["key"],
        Value::Null,
        "B binds nothing"
    );
    lying.store(false, Ordering::SeqCst);
    cli.ok(&["sync", "--timeout", "10"])?;
    assert_eq!(cli.json(&["show", &b])?["key"], "SYN-2");
    Ok(())
}
