//! Captured offline, synced in one go: keys follow capture order; `add` never waits for the
//! network.
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::fixture::{free_port, keyed, server_tasks, Cli, TestServer};

#[test]
fn two_hundred_offline_tasks_get_keys_in_capture_order_in_one_sync() -> Result<()> {
    let (mut server, account) = TestServer::prepare("PFX")?;
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&url, &account.token)?; // server down: the login is saved, projects come later
    let mut uuids = Vec::new();
    for i in 1..=200 {
        uuids.push(cli.add(&format!("offline task {i}"), &["--project", "PFX"])?);
    }
    let listed = cli.list()?;
    assert_eq!(listed.len(), 200);
    for t in &listed {
        assert_eq!(t["sync_state"], "provisional", "{t}");
        assert!(t["key"].is_null(), "{t}");
    }
    let text = cli.ok(&["list"])?;
    assert_eq!(
        text.lines().filter(|l| l.starts_with('~')).count(),
        200,
        "{text}"
    );

    server.serve(port)?;
    cli.ok(&["sync"])?;

    let pairs = keyed(&cli.list()?)?;
    let by_uuid: std::collections::HashMap<_, _> = pairs.into_iter().collect();
    for (i, u) in uuids.iter().enumerate() {
        assert_eq!(by_uuid[u], format!("PFX-{}", i + 1), "task {i} (uuid {u})");
    }
    let status = cli.json(&["status"])?;
    assert_eq!(
        (status["pending"].as_u64(), status["failed"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(server_tasks(&server.url, &account.token)?.len(), 200);
    Ok(())
}

#[test]
fn add_with_the_server_unreachable_returns_at_once_and_sync_says_why() -> Result<()> {
    // A listener that never accepts: a client that tried to talk to it would hang, not fail fast.
    let silent = std::net::TcpListener::bind("127.0.0.1:0")?;
    let silent_url = format!("http://{}", silent.local_addr()?);
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&silent_url, "cs_whatever")?;
    let started = Instant::now();
    let out = cli.output(&["add", "captured on a plane", "--project", "PFX"])?;
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < Duration::from_secs(2), "add took {took:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("captured on a plane"));

    // Nothing listens here at all: `sync` fails at once with a plain message.
    let closed = format!("http://127.0.0.1:{}", free_port());
    cli.login(&closed, "cs_whatever")?;
    let out = cli.output(&["sync"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "saved locally, not yet synced: {err}"
    );
    assert!(
        err.contains("cannot reach the server") && err.contains("stay queued"),
        "{err}"
    );
    assert!(
        !err.contains("Error {") && !err.contains("kind:"),
        "a Debug dump: {err}"
    );
    let listed = cli.list()?;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["sync_state"], "provisional");
    // A usage error is 2 (clap's), a plain error 1 (nothing queued is at stake).
    assert_eq!(
        cli.output(&["list", "--no-such-flag"])?.status.code(),
        Some(2)
    );
    assert_eq!(cli.output(&["show", "PFX-404"])?.status.code(), Some(1));
    assert!(
        listed[0]["waiting"]
            .as_str()
            .unwrap_or_default()
            .contains("offline"),
        "{}",
        listed[0]
    );
    Ok(())
}

/// The engine claims the next batch while one is out and sends it once every row of the one out
/// is answered 2xx. A refused task puts the batch claimed ahead of it back untouched: keys still
/// follow capture order, every row counts one try, and nothing is left in flight.
#[test]
fn batches_claimed_ahead_keep_capture_order_and_a_refusal_puts_them_back() -> Result<()> {
    use callsign_sync::{Engine, NewTaskInput, Options, SyncState, Token};

    let (server, account) = TestServer::start("PIP")?;
    let home = tempfile::tempdir()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    const TASKS: usize = 400;
    const REFUSED: usize = 130; // in the 4th batch of 40; the 5th is claimed while it is out
    let uuids = rt.block_on(async {
        let opts = Options {
            batch: 40,
            ..Options::default()
        };
        let engine = Engine::open_with(home.path(), opts)?;
        let inputs = (1..=TASKS)
            .map(|i| NewTaskInput {
                description: format!("offline task {i}"),
                project: Some("PIP".into()),
                tags: if i == REFUSED {
                    vec!["LOUD".into()] // the server takes lower-case tags only
                } else {
                    vec![]
                },
                ..NewTaskInput::default()
            })
            .collect();
        let uuids = engine.create_many(inputs)?;
        engine
            .login(&server.url, Token::new(account.token.clone()), None)
            .await?;
        let status = engine.sync_until_drained(Duration::from_secs(60)).await?;
        assert_eq!(
            (status.pending, status.in_flight, status.failed),
            (0, 0, 1),
            "{status:?}"
        );

        let mut number = 0;
        for (i, u) in uuids.iter().enumerate() {
            let t = engine.get(&u.to_string())?;
            if i + 1 == REFUSED {
                assert_eq!((t.sync_state, t.key), (SyncState::Failed, None));
                assert!(t.last_error.unwrap_or_default().contains("LOUD"));
                continue;
            }
            number += 1;
            assert_eq!(t.key, Some(format!("PIP-{number}")), "task {}", i + 1);
        }
        anyhow::Ok(uuids)
    })?;

    let db = rusqlite::Connection::open(home.path().join("callsign.sqlite3"))?;
    // The cursor stored last is the server's newest: the feed after it is empty.
    let cursor: String =
        db.query_row("SELECT value FROM kv WHERE name = 'sync.cursor'", [], |r| {
            r.get(0)
        })?;
    let page: serde_json::Value = rt.block_on(async {
        reqwest::Client::new()
            .get(format!("{}/v1/changes?since={cursor}", server.url))
            .bearer_auth(&account.token)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await
    })?;
    assert_eq!(page["changes"].as_array().map(Vec::len), Some(0), "{page}");
    let rows: Vec<(String, String, i64)> = db
        .prepare("SELECT uuid, state, try_count FROM outbox ORDER BY id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    assert_eq!(rows.len(), TASKS);
    for (i, (uuid, state, tries)) in rows.iter().enumerate() {
        assert_eq!(uuid, &uuids[i].to_string());
        let want = if i + 1 == REFUSED { "failed" } else { "done" };
        assert_eq!(
            (state.as_str(), *tries),
            (want, 1),
            "row {}: a batch put back does not count a try",
            i + 1
        );
    }
    // Another device sees the same keys.
    let on_server = server_tasks(&server.url, &account.token)?;
    assert_eq!(on_server.len(), TASKS - 1);
    Ok(())
}
