//! Subtasks through the CLI, the engine and the real server: a parent and its subtasks
//! captured offline get `PFX-1`, `PFX-1.1..3` in capture order after one sync; a blocked parent
//! cannot be completed; `next` lists leaves first; a refused parent holds its subtasks with a
//! reason, and fixing it sends them all.
use std::collections::HashMap;

use anyhow::Result;
use serde_json::Value;

use crate::cli::Cli;
use crate::fixture::TestServer;

/// Key by UUID, for every listed task that has one.
fn keys(cli: &Cli) -> Result<HashMap<String, String>> {
    Ok(cli
        .list()?
        .iter()
        .filter_map(|t| {
            Some((
                t["uuid"].as_str()?.to_owned(),
                t["key"].as_str()?.to_owned(),
            ))
        })
        .collect())
}

fn descriptions(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t["description"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn stderr(cli: &Cli, args: &[&str]) -> Result<String> {
    let out = cli.output(args)?;
    assert!(!out.status.success(), "{args:?} should fail");
    Ok(String::from_utf8(out.stderr)?)
}

#[test]
fn subtasks_captured_offline_get_their_parents_key_in_order_after_one_sync() -> Result<()> {
    let (server, account) = TestServer::start("SUB")?;
    let homes = [tempfile::tempdir()?, tempfile::tempdir()?];
    let a = Cli::new(homes[0].path());
    let b = Cli::new(homes[1].path());

    // Offline: a parent, three subtasks and one under the first.
    let parent = a.add("Launch", &["--project", "SUB"])?;
    let mut kids = Vec::new();
    for d in ["Write the post", "Record the demo", "Tell the team"] {
        kids.push(a.add(d, &["--parent", &parent])?);
    }
    let outline = a.add("Draft the outline", &["--parent", &kids[0][..8]])?;
    let err = stderr(&a, &["done", &parent])?;
    assert!(
        err.contains("has open subtasks") && err.contains(&format!("~{}", &kids[2][..8])),
        "{err}"
    );
    let err = stderr(
        &a,
        &["add", "Elsewhere", "--parent", &parent, "--project", "OPS"],
    )?;
    assert!(
        err.contains("a subtask is in its parent's project"),
        "{err}"
    );

    a.login(&server.url, &account.token)?;
    a.ok(&["sync", "--timeout", "30"])?;
    let k = keys(&a)?;
    let got: Vec<&str> = [&parent, &kids[0], &kids[1], &kids[2], &outline]
        .iter()
        .map(|u| k.get(*u).map(String::as_str).unwrap_or("none"))
        .collect();
    assert_eq!(got, ["SUB-1", "SUB-1.1", "SUB-1.2", "SUB-1.3", "SUB-1.1.1"]);

    // Every form of a subtask key resolves; a bare number never does.
    for form in ["SUB-1.2", "sub 1.2", "sub1.2"] {
        assert_eq!(a.json(&["show", form])?["uuid"], kids[1].as_str(), "{form}");
    }
    assert!(!a.output(&["show", ".2"])?.status.success());

    // Leaves first; the blocked parents (SUB-1, SUB-1.1) never.
    let next = a.json(&["next"])?;
    assert_eq!(
        descriptions(&next),
        ["Draft the outline", "Record the demo", "Tell the team"]
    );

    // A second device sees the tree.
    b.login(&server.url, &server.token(&account, "second")?)?;
    b.ok(&["sync", "--timeout", "30"])?;
    let shown = b.ok(&["show", "SUB-1"])?;
    assert!(shown.contains("subtasks: 3 open of 3"), "{shown}");
    assert!(shown.contains("SUB-1.3  Tell the team"), "{shown}");
    assert_eq!(b.json(&["show", "SUB-1.1.1"])?["parent"], kids[0].as_str());

    // Completed leaf to root while offline on A, in one queue: the server takes each parent's
    // completion after its subtasks'.
    for key in ["SUB-1.1.1", "SUB-1.1", "SUB-1.2", "SUB-1.3", "SUB-1"] {
        a.ok(&["done", key])?;
    }
    a.ok(&["sync", "--timeout", "30"])?;
    assert!(
        a.list()?
            .iter()
            .all(|t| t["status"] == "completed" && t["waiting"].is_null()),
        "{:?}",
        a.list()?
    );
    b.ok(&["sync", "--timeout", "30"])?;
    assert_eq!(b.json(&["show", "SUB-1"])?["status"], "completed");
    Ok(())
}

#[test]
fn a_refused_parent_holds_its_subtasks_until_it_is_fixed() -> Result<()> {
    let (server, account) = TestServer::start("FIX")?;
    let home = tempfile::tempdir()?;
    let a = Cli::new(home.path());
    a.login(&server.url, &account.token)?;
    // NOPE is no project of the server's: the parent is refused, the subtask waits for it.
    let parent = a.add("Parent in the wrong project", &["--project", "NOPE"])?;
    let child = a.add("Its subtask", &["--parent", &parent])?;
    let out = a.output(&["sync", "--timeout", "10"])?;
    assert!(!out.status.success(), "a refused task is not synced");
    let held = a.json(&["show", &child])?;
    let waiting = held["waiting"].as_str().unwrap_or_default();
    assert!(
        waiting.contains(&format!("waiting for ~{}", &parent[..8])) && held["key"].is_null(),
        "{held}"
    );

    a.ok(&["edit", &parent, "--project", "FIX"])?;
    a.ok(&["sync", "--timeout", "30"])?;
    let k = keys(&a)?;
    assert_eq!(
        (
            k.get(&parent).map(String::as_str),
            k.get(&child).map(String::as_str)
        ),
        (Some("FIX-1"), Some("FIX-1.1"))
    );
    Ok(())
}
