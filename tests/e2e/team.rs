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
