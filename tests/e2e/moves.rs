//! Moves through the CLI, the engine and the real server: a task moved offline gets the next
//! key of its new project once synced, its subtasks follow under the new key, and every key it
//! ever had finds it on every device; two devices moving one task concurrently end with one
//! project, every assigned key still resolving.
use anyhow::Result;

use crate::cli::Cli;
use crate::fixture::{create_project, TestServer};

fn key_of(cli: &Cli, r: &str) -> Result<String> {
    Ok(cli.json(&["show", r])?["key"]
        .as_str()
        .unwrap_or("none")
        .to_owned())
}

#[test]
fn moves_renumber_and_every_key_ever_assigned_still_resolves_on_both_devices() -> Result<()> {
    let (server, account) = TestServer::start("MOV")?;
    for p in ["OPS", "DEV"] {
        create_project(&server.url, &account.token, p)?;
    }
    let homes = [tempfile::tempdir()?, tempfile::tempdir()?];
    let a = Cli::new(homes[0].path());
    let b = Cli::new(homes[1].path());
    a.login(&server.url, &account.token)?;
    b.login(&server.url, &server.token(&account, "second")?)?;

    let first = a.add("Stays", &["--project", "MOV"])?;
    let moving = a.add("Moves", &["--project", "MOV"])?;
    let sub = a.add("Its subtask", &["--parent", &moving])?;
    a.ok(&["sync", "--timeout", "30"])?;
    assert_eq!(
        [key_of(&a, &first)?, key_of(&a, &moving)?, key_of(&a, &sub)?],
        ["MOV-1", "MOV-2", "MOV-2.1"]
    );

    // Moved offline on A: the project changes at once, the key once the server answers.
    let out = a.output(&["move", "MOV-2.1", "OPS"])?;
    assert!(
        String::from_utf8(out.stderr)?.contains("moves with its parent"),
        "a subtask alone is refused"
    );
    a.ok(&["move", "MOV-2", "ops"])?;
    assert_eq!(a.json(&["show", &moving])?["project"], "OPS");
    a.ok(&["sync", "--timeout", "30"])?;
    assert_eq!(
        [key_of(&a, &moving)?, key_of(&a, &sub)?],
        ["OPS-1", "OPS-1.1"]
    );
    let shown = a.json(&["show", "MOV-2"])?;
    assert_eq!(
        (shown["uuid"].as_str(), shown["previous_keys"].clone()),
        (Some(moving.as_str()), serde_json::json!(["MOV-2"]))
    );
    assert_eq!(a.json(&["show", "mov 2.1"])?["uuid"], sub.as_str());

    // Both devices move the same task, each unaware of the other: A to DEV, B (which last saw
    // it as OPS-1) back to MOV. The server takes them in order; each gets a new number.
    b.ok(&["sync", "--timeout", "30"])?;
    assert_eq!(key_of(&b, &moving)?, "OPS-1");
    a.ok(&["move", "OPS-1", "DEV"])?;
    b.ok(&["move", "OPS-1", "MOV"])?;
    a.ok(&["sync", "--timeout", "30"])?;
    b.ok(&["sync", "--timeout", "30"])?;
    a.ok(&["sync", "--timeout", "30"])?;
    let (ka, kb) = (key_of(&a, &moving)?, key_of(&b, &moving)?);
    assert_eq!(ka, kb, "both devices see one final key");
    assert_eq!(
        ka, "MOV-3",
        "B's move came last: the next MOV number, not MOV-2 again"
    );
    for old in ["MOV-2", "OPS-1", "DEV-1", "MOV-2.1", "OPS-1.1", "DEV-1.1"] {
        for (cli, who) in [(&a, "A"), (&b, "B")] {
            let want = if old.contains('.') { &sub } else { &moving };
            assert_eq!(
                cli.json(&["show", old])?["uuid"],
                want.as_str(),
                "{old} on {who}"
            );
        }
    }
    assert_eq!(key_of(&b, &sub)?, "MOV-3.1");
    assert_eq!(
        key_of(&a, &first)?,
        "MOV-1",
        "an unmoved task keeps its key"
    );
    Ok(())
}
