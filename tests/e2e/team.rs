//! Teams from the CLI against the real server: an owner's invite code, a new device joining
//! with a handle of its own, what a member may not do, a used code, and a member removed by
//! the admin while the server runs.
use anyhow::Result;

use crate::cli::Cli;
use crate::fixture::TestServer;

#[test]
fn an_owner_invites_and_a_new_device_joins_from_the_cli() -> Result<()> {
    let (server, account) = TestServer::start("TEAM")?;
    let homes = [
        tempfile::tempdir()?,
        tempfile::tempdir()?,
        tempfile::tempdir()?,
    ];
    let [alice, bob, carol] = [0, 1, 2].map(|i| Cli::new(homes[i].path()));
    alice.login(&server.url, &account.token)?;
    let invite = alice.json(&["invite"])?;
    let code = invite["code"].as_str().unwrap().to_owned();
    assert_eq!(invite["role"], "member", "{invite}");

    // Typed loosely, from a fresh data dir: bob is a member with a token of his own.
    let loose = code.to_lowercase();
    let joined = bob.json(&[
        "join",
        "--server",
        &server.url,
        "--code",
        &loose,
        "--name",
        "@Bob",
    ])?;
    assert_eq!(joined["member"]["name"], "bob", "{joined}");
    assert_eq!(joined["project"], "TEAM", "{joined}");
    let members = bob.json(&["members"])?;
    assert_eq!(members["me"]["name"], "bob", "{members}");
    let names: Vec<&str> = members["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bob", "owner"]);

    // Bob's task reaches alice with its key.
    bob.ok(&["add", "Fix the login redirect"])?;
    bob.ok(&["sync"])?;
    alice.ok(&["sync"])?;
    let shown = alice.ok(&["show", "TEAM-1"])?;
    assert!(shown.contains("Fix the login redirect"), "{shown}");

    // `@bob` in a capture assigns; `--mine` lists what is yours; `assign` reassigns.
    alice.ok(&["members"])?;
    alice.ok(&["add", "Review", "the", "release", "notes", "@Bob"])?;
    alice.ok(&["add", "Email", "me@example.com", "about", "@carol"])?;
    alice.ok(&["add", "Ship", "it", "@owner"])?;
    alice.ok(&["sync"])?;
    let shown = alice.json(&["show", "TEAM-2"])?;
    assert_eq!(shown["description"], "Review the release notes", "{shown}");
    assert_eq!(
        (shown["assignee"].as_str(), shown["created_by"].as_str()),
        (Some("bob"), Some("owner"))
    );
    let not_member = alice.json(&["show", "TEAM-3"])?;
    assert_eq!(
        not_member["description"], "Email me@example.com about @carol",
        "{not_member}"
    );
    assert_eq!(not_member["assignee"], serde_json::Value::Null);
    bob.ok(&["sync"])?;
    let mine: Vec<String> = bob
        .json(&["list", "--mine"])?
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(mine, ["TEAM-2"], "bob's tasks only");
    let out = alice.output(&["assign", "TEAM-1", "@carol"])?;
    assert_eq!(out.status.code(), Some(1), "carol is no member");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a member"));
    alice.ok(&["assign", "TEAM-1", "bob"])?;
    alice.ok(&["sync"])?;
    bob.ok(&["sync"])?;
    let mine = bob.json(&["list", "--mine"])?;
    assert_eq!(mine.as_array().unwrap().len(), 2, "{mine}");
    let first = bob.json(&["show", "TEAM-1"])?;
    assert_eq!(
        (first["created_by"].as_str(), first["assignee"].as_str()),
        (Some("bob"), Some("bob"))
    );

    // The standup: per member, keys first, as said aloud.
    let standup = alice.json(&["standup"])?;
    let bob_said = standup["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "bob")
        .cloned()
        .unwrap_or_default();
    let keys = |what: &str| -> Vec<String> {
        bob_said[what]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|l| l["key"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(keys("created"), ["TEAM-1"], "{standup}");
    assert_eq!(keys("open"), ["TEAM-1", "TEAM-2"], "{standup}");
    let text = alice.ok(&["standup", "--since", "yesterday"])?;
    assert!(text.contains("@bob"), "{text}");
    assert!(text.contains("TEAM-1  Fix the login redirect"), "{text}");

    // A member manages nothing; a used code is refused, saying so.
    for args in [
        &["invite"][..],
        &["project", "add", "Ops", "--prefix", "OPS"][..],
    ] {
        let out = bob.output(args)?;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("only the team's owners"), "{args:?}: {err}");
    }
    let out = carol.output(&[
        "join",
        "--server",
        &server.url,
        "--code",
        &code,
        "--name",
        "carol",
    ])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("used already"), "{err}");
    assert!(carol.output(&["status"])?.status.success());
    let status = carol.ok(&["status"])?;
    assert!(
        !status.contains(&server.url),
        "a failed join saves no server: {status}"
    );

    // Removed by the admin while the server runs: bob's next request is refused.
    let removed = server.admin(&account, &["member", "remove", "--name", "bob"])?;
    assert_eq!(removed["tokens"], 1, "{removed}");
    bob.ok(&["add", "After removal"])?;
    let out = bob.output(&["sync"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.to_lowercase().contains("token"), "{err}");
    alice.ok(&["sync"])?;
    let shown = alice.ok(&["show", "TEAM-1"])?;
    assert!(
        shown.contains("Fix the login redirect"),
        "bob's task stays: {shown}"
    );
    Ok(())
}

/// A teammate's new key on an open device with no action: device B runs the engine's own loop
/// (as the app does) and holds a change request; A captures and syncs through the CLI. B has
/// the key within seconds, well inside the loop's periodic pull.
#[test]
fn a_teammates_new_key_reaches_an_open_device_without_polling() -> Result<()> {
    use std::time::{Duration, Instant};
    let (mut server, account) = TestServer::start("HELD")?;
    let (home_a, home_b) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let alice = Cli::new(home_a.path());
    alice.login(&server.url, &account.token)?;
    let invite = alice.json(&["invite"])?;
    let code = invite["code"].as_str().unwrap();
    let bob = Cli::new(home_b.path());
    bob.ok(&[
        "join",
        "--server",
        &server.url,
        "--code",
        code,
        "--name",
        "bob",
    ])?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let engine = callsign_sync::Engine::open(home_b.path())?;
        engine.start();
        // Let the loop pass once and open its held request.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let out = alice.output(&["add", "Said", "at", "standup"])?;
        assert!(out.status.success());
        let started = Instant::now();
        alice.ok(&["sync"])?;
        loop {
            let found = engine.get("HELD-1").ok();
            if let Some(t) = found {
                assert_eq!(t.description, "Said at standup");
                assert_eq!(t.created_by.as_deref(), Some("owner"));
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "HELD-1 did not reach the open device within 10 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        println!(
            "HELD-1 reached B {:?} after A's sync began",
            started.elapsed()
        );
        // B's own change syncs first: the request B held from before it answers for it, and
        // must not pause B's held requests (A's next task still arrives at once).
        let own = engine.create(callsign_sync::NewTaskInput {
            description: "Bob's own".into(),
            project: Some("HELD".into()),
            ..Default::default()
        })?;
        let mine = Instant::now();
        while engine.get(&own.uuid.to_string())?.key.is_none() {
            assert!(
                mine.elapsed() < Duration::from_secs(10),
                "B's task unsynced"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(alice.output(&["add", "Right", "after"])?.status.success());
        let started = Instant::now();
        alice.ok(&["sync"])?;
        while engine.get("HELD-3").is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "HELD-3 did not reach B within 10 s of B's own sync"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        println!(
            "HELD-3 reached B {:?} after A's sync began",
            started.elapsed()
        );
        // The server goes away while B idles: its held request ends, and B says it is offline
        // at once instead of at its next periodic pull.
        server.stop();
        let gone = Instant::now();
        while engine.connection()?.online != Some(false) {
            assert!(
                gone.elapsed() < Duration::from_secs(10),
                "still online 10 s after the server stopped"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        println!("B offline {:?} after the server stopped", gone.elapsed());
        engine.stop().await;
        anyhow::Ok(())
    })
}
