//! Concurrent offline edits through the CLI, the engine and the real server: two devices edit
//! one task without syncing. Different fields both survive; the same field keeps the later edit
//! in the server's order, and the value it replaced shows as a conflict on both devices until
//! someone restores it (or keeps what is there).
use anyhow::Result;
use serde_json::{json, Value};

use crate::cli::Cli;
use crate::fixture::TestServer;

fn sync(cli: &Cli) -> Result<()> {
    cli.ok(&["sync", "--timeout", "30"]).map(drop)
}

/// A task's conflicts as (field, value).
type Conflicts = Vec<(Value, Value)>;

/// (description, notes, priority, conflicts).
fn seen(cli: &Cli, r: &str) -> Result<(Value, Value, Value, Conflicts)> {
    let t = cli.json(&["show", r])?;
    let conflicts = t["conflicts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| (c["field"].clone(), c["value"].clone()))
        .collect();
    Ok((
        t["description"].clone(),
        t["notes"].clone(),
        t["priority"].clone(),
        conflicts,
    ))
}

#[test]
fn offline_edits_merge_by_field_and_a_replaced_value_is_a_conflict_on_both_devices() -> Result<()> {
    let (server, account) = TestServer::start("EDT")?;
    let homes = [tempfile::tempdir()?, tempfile::tempdir()?];
    let a = Cli::new(homes[0].path());
    let b = Cli::new(homes[1].path());
    a.login(&server.url, &account.token)?;
    b.login(&server.url, &server.token(&account, "second")?)?;
    a.add("Fix login", &["--project", "EDT"])?;
    sync(&a)?;
    sync(&b)?;

    // Offline on each: A rewrites the description and adds notes; B rewrites the description
    // too and sets a priority.
    a.ok(&[
        "edit",
        "EDT-1",
        "--description",
        "Fix login redirect",
        "--notes",
        "see #12",
    ])?;
    b.ok(&[
        "edit",
        "EDT-1",
        "--description",
        "Fix login on Safari",
        "--priority",
        "H",
    ])?;
    sync(&a)?;
    sync(&b)?;
    sync(&a)?;
    let want = (
        json!("Fix login on Safari"),
        json!("see #12"),
        json!("H"),
        vec![(json!("description"), json!("Fix login redirect"))],
    );
    assert_eq!(seen(&a, "EDT-1")?, want, "device A");
    assert_eq!(seen(&b, "EDT-1")?, want, "device B");
    let shown = a.ok(&["show", "EDT-1"])?;
    assert!(
        shown.contains(r#"conflict 1: description was changed on two devices; the other value was "Fix login redirect""#),
        "{shown}"
    );

    // A restores its text: the value is back and the conflict gone, here at once and on B
    // after a sync.
    a.ok(&["resolve", "EDT-1", "--restore"])?;
    assert_eq!(seen(&a, "EDT-1")?.0, json!("Fix login redirect"));
    assert!(seen(&a, "EDT-1")?.3.is_empty(), "settled here at once");
    sync(&a)?;
    sync(&b)?;
    for (cli, who) in [(&a, "A"), (&b, "B")] {
        let (d, _, _, c) = seen(cli, "EDT-1")?;
        assert_eq!((d, c), (json!("Fix login redirect"), vec![]), "{who}");
    }

    // Once more, and B keeps what is there.
    a.ok(&["edit", "EDT-1", "--notes", "from A"])?;
    b.ok(&["edit", "EDT-1", "--notes", "from B"])?;
    sync(&a)?;
    sync(&b)?;
    assert_eq!(
        seen(&b, "EDT-1")?.3,
        vec![(json!("notes"), json!("from A"))]
    );
    let out = b.output(&["resolve", "EDT-1", "2", "--keep"])?;
    assert!(
        String::from_utf8(out.stderr)?.contains("has conflicts 1 to 1, not 2"),
        "a conflict that is not there is named"
    );
    b.ok(&["resolve", "EDT-1", "--keep"])?;
    sync(&b)?;
    sync(&a)?;
    for (cli, who) in [(&a, "A"), (&b, "B")] {
        let (_, n, _, c) = seen(cli, "EDT-1")?;
        assert_eq!((n, c), (json!("from B"), vec![]), "{who}");
    }
    Ok(())
}
