//! `callsign undo` end to end: with no server (add, done and edit each undone, newest first,
//! then "nothing to undo" and exit 1), and against the real server, where an undo is a new
//! change that syncs like any edit: a second device sees the task pending again under the same
//! key, and an undone capture is a deleted task on the server whose key the next add never gets.
use anyhow::Result;

use crate::fixture::{server_tasks, Cli, TestServer};

#[test]
fn add_done_and_edit_are_undone_offline_newest_first() -> Result<()> {
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    let out = cli.output(&["undo"])?;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr)?.contains("nothing to undo on this device"),
        "said in words"
    );

    // add → undo: the task is deleted.
    let typo = cli.add("captured by mistake", &[])?;
    let undone = cli.json(&["undo"])?;
    assert_eq!(undone["undone"], "create");
    assert_eq!(undone["task"]["uuid"], typo.as_str());
    assert_eq!(cli.json(&["show", &typo])?["status"], "deleted");

    // done → undo: pending again.
    let bank = cli.add("call the bank", &[])?;
    cli.ok(&["done", &bank])?;
    let said = cli.ok(&["undo"])?;
    assert!(
        said.starts_with(&format!("Undid complete of ~{}: pending again", &bank[..8])),
        "{said}"
    );
    assert_eq!(cli.json(&["show", &bank])?["status"], "pending");

    // edit → undo: the old description (and only it) back.
    cli.ok(&["edit", &bank, "--notes", "ask for the form"])?;
    cli.ok(&["edit", &bank, "--description", "call the bank at 9"])?;
    let undone = cli.json(&["undo"])?;
    assert_eq!(
        (
            undone["undone"].as_str(),
            undone["changes"][0]["restored"]["description"].as_str(),
            undone["task"]["description"].as_str(),
            undone["task"]["notes"].as_str()
        ),
        (
            Some("edit"),
            Some("call the bank"),
            Some("call the bank"),
            Some("ask for the form")
        )
    );
    // The stack goes on: the notes edit, then the bank's capture, then the first capture was
    // already undone, so nothing is left.
    assert_eq!(cli.json(&["undo"])?["task"]["notes"], "");
    assert_eq!(cli.json(&["undo"])?["undone"], "create");
    assert_eq!(cli.json(&["show", &bank])?["status"], "deleted");
    assert_eq!(cli.output(&["undo"])?.status.code(), Some(1));
    Ok(())
}

/// `modify` of two tasks is one step: one `undo` puts back both tasks' tags and description.
#[test]
fn a_modify_of_two_tasks_is_undone_in_one_step() -> Result<()> {
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    let a = cli.add("Fix the login redirect", &["--tag", "ui"])?;
    let b = cli.add("Login page copy", &["--tag", "ui"])?;
    let id = |u: &str| format!("~{}", &u[..8]);
    cli.ok(&["modify", &id(&a), &id(&b), "+bug", "-ui", "pri:H"])?;
    cli.ok(&["modify", &id(&a), "Fix", "the", "SSO", "redirect"])?;
    assert_eq!(
        cli.json(&["undo"])?["task"]["description"],
        "Fix the login redirect"
    );
    let undone = cli.json(&["undo"])?;
    assert_eq!(
        undone["changes"].as_array().map(Vec::len),
        Some(2),
        "{undone}"
    );
    for t in [&a, &b] {
        let t = cli.json(&["show", t])?;
        assert_eq!(
            (t["tags"].clone(), t["priority"].clone()),
            (serde_json::json!(["ui"]), serde_json::Value::Null)
        );
    }
    Ok(())
}

#[test]
fn an_undone_completion_syncs_and_a_second_device_sees_it_pending_under_the_same_key() -> Result<()>
{
    let (server, account) = TestServer::start("UND")?;
    let (a, b) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let (laptop, phone) = (Cli::new(a.path()), Cli::new(b.path()));
    laptop.login(&server.url, &account.token)?;
    phone.login(&server.url, &server.token(&account, "phone")?)?;

    let u = laptop.add("renew the passport", &[])?;
    laptop.ok(&["sync"])?;
    assert_eq!(laptop.json(&["show", &u])?["key"], "UND-1");
    phone.ok(&["sync"])?;
    assert_eq!(phone.json(&["show", "UND-1"])?["status"], "pending");

    laptop.ok(&["done", "UND-1"])?;
    laptop.ok(&["sync"])?;
    phone.ok(&["sync"])?;
    assert_eq!(phone.json(&["show", "UND-1"])?["status"], "completed");

    let undone = laptop.json(&["undo"])?;
    assert_eq!(
        (undone["undone"].as_str(), undone["task"]["status"].as_str()),
        (Some("complete"), Some("pending"))
    );
    laptop.ok(&["sync"])?;
    phone.ok(&["sync"])?;
    let seen = phone.json(&["show", "UND-1"])?;
    assert_eq!(
        (seen["uuid"].as_str(), seen["status"].as_str()),
        (Some(u.as_str()), Some("pending"))
    );
    let on_server = server_tasks(&server.url, &account.token)?;
    assert_eq!(on_server.len(), 1);
    assert_eq!(
        (on_server[0].key.as_deref(), on_server[0].status.as_str()),
        (Some("UND-1"), "pending")
    );
    Ok(())
}

#[test]
fn an_undone_capture_is_deleted_on_the_server_and_its_key_is_never_reused() -> Result<()> {
    let (server, account) = TestServer::start("UNA")?;
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&server.url, &account.token)?;

    let mistake = cli.add("captured by mistake", &[])?;
    assert_eq!(cli.json(&["undo"])?["undone"], "create");
    cli.ok(&["sync"])?;
    let gone = cli.json(&["show", &mistake])?;
    assert_eq!(gone["status"], "deleted");
    let taken = gone["key"].as_str().unwrap_or_default().to_owned();
    let on_server = server_tasks(&server.url, &account.token)?;
    assert_eq!(on_server.len(), 1);
    assert_eq!(
        (on_server[0].uuid.to_string(), on_server[0].status.as_str()),
        (mistake.clone(), "deleted")
    );

    let next = cli.add("the real task", &[])?;
    cli.ok(&["sync"])?;
    let key = cli.json(&["show", &next])?["key"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        key.starts_with("UNA-") && key != taken,
        "the next add gets {key}, not the undone task's {taken:?}"
    );
    // Undoing a numbered capture says the key stays taken.
    let said = cli.ok(&["undo"])?;
    assert!(
        said.starts_with(&format!(
            "Undid create of {key}: deleted; {key} stays taken (keys are never reused)"
        )),
        "{said}"
    );
    cli.ok(&["sync"])?;
    let on_server = server_tasks(&server.url, &account.token)?;
    let next_there = on_server
        .iter()
        .find(|t| t.uuid.to_string() == next)
        .map(|t| (t.key.clone(), t.status.as_str()));
    assert_eq!(next_there, Some((Some(key.clone()), "deleted")));
    Ok(())
}
