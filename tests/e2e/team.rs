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
        // Within 10 s of `since`, B's store has `key`; the task then.
        let arrives = |key: &'static str, since: Instant| {
            let engine = &engine;
            async move {
                loop {
                    if let Ok(t) = engine.get(key) {
                        println!("{key} reached B {:?} after A's sync began", since.elapsed());
                        return t;
                    }
                    assert!(
                        since.elapsed() < Duration::from_secs(10),
                        "{key} did not reach the open device within 10 s"
                    );
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        let out = alice.output(&["add", "Said", "at", "standup"])?;
        assert!(out.status.success());
        let started = Instant::now();
        alice.ok(&["sync"])?;
        let t = arrives("HELD-1", started).await;
        assert_eq!(t.description, "Said at standup");
        assert_eq!(t.created_by.as_deref(), Some("owner"));
        // B's own create wakes B's held request too; that must not pause holding, or alice's
        // next task would wait for B's periodic pull (30 s).
        let mine = engine.create(callsign_sync::NewTaskInput {
            description: "Bob's own".into(),
            project: Some("HELD".into()),
            ..Default::default()
        })?;
        let own = Instant::now();
        while engine.get(&mine.uuid.to_string())?.key.is_none() {
            assert!(
                own.elapsed() < Duration::from_secs(10),
                "B's task got no key"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let out = alice.output(&["add", "Said", "again"])?;
        assert!(out.status.success());
        let started = Instant::now();
        alice.ok(&["sync"])?;
        let t = arrives("HELD-3", started).await;
        assert_eq!(t.description, "Said again");
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

/// Two members with two devices each, every device an engine with its loop running (as the
/// app runs it): a create on any device reaches the other three with its key and its
/// creator, the member whose token made it, through their held change requests.
#[test]
fn two_members_with_two_devices_each_see_each_others_keys() -> Result<()> {
    use std::time::{Duration, Instant};
    let (server, account) = TestServer::start("DUO")?;
    let bob = server.admin(&account, &["member", "add", "--name", "bob"])?;
    let tokens = [
        ("owner", account.token.clone()),
        ("owner", server.token(&account, "alice-laptop")?),
        ("bob", bob["token"].as_str().unwrap().to_owned()),
        (
            "bob",
            server.admin(
                &account,
                &["token", "create", "--member", "bob", "--device", "bob-2"],
            )?["token"]
                .as_str()
                .unwrap()
                .to_owned(),
        ),
    ];
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut devices = Vec::new();
        for (i, (_, token)) in tokens.iter().enumerate() {
            let home = tempfile::tempdir()?;
            let engine = callsign_sync::Engine::open(home.path())?;
            engine
                .login(
                    &server.url,
                    callsign_sync::Token::new(token),
                    Some(format!("device {i}")),
                )
                .await?;
            engine.start();
            devices.push((engine, home));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        // Each device creates in turn; the other three have it, keyed, within 10 s.
        for (a, (creator, _)) in tokens.iter().enumerate() {
            let task = devices[a].0.create(callsign_sync::NewTaskInput {
                description: format!("from device {a}"),
                project: Some("DUO".into()),
                ..Default::default()
            })?;
            let t = Instant::now();
            for (b, (engine, _)) in devices.iter().enumerate() {
                loop {
                    let got = engine.get(&task.uuid.to_string()).ok();
                    if let Some(got) = got.filter(|g| g.key.is_some()) {
                        assert_eq!(got.created_by.as_deref(), Some(*creator), "on device {b}");
                        break;
                    }
                    assert!(
                        t.elapsed() < Duration::from_secs(10),
                        "device {a}'s task not keyed on device {b} within 10 s"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            println!("device {a}'s key on all four devices in {:?}", t.elapsed());
        }
        let keys: Vec<String> = devices[3]
            .0
            .list(callsign_sync::TaskFilter { all: true })?
            .into_iter()
            .filter_map(|t| t.key)
            .collect();
        assert_eq!(keys.len(), 4, "{keys:?}");
        for (engine, _) in &devices {
            engine.stop().await;
        }
        anyhow::Ok(())
    })
}
