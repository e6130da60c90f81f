//! The CLI as a new user meets it: capture with no server at all (the local INBOX), log in
//! later and send the inbox to a server project; a task the server refuses is fixed by giving
//! it a project the server has, or discarded, and the failed count follows.
use anyhow::Result;

use crate::fixture::{server_tasks, Cli, TestServer};

#[test]
fn captured_with_no_server_then_sent_to_a_server_project_after_login() -> Result<()> {
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    let first = cli.add("idea on the train", &[])?;
    let second = cli.add("another idea", &["--tag", "later"])?;
    let t = cli.json(&["show", &first])?;
    assert_eq!(
        (t["project"].as_str(), t["local"].as_bool()),
        (Some("INBOX"), Some(true))
    );
    let status = cli.json(&["status"])?;
    assert_eq!(
        (status["local"].as_u64(), status["pending"].as_u64()),
        (Some(2), Some(0))
    );
    let inbox = cli.ok(&["inbox"])?;
    assert!(
        inbox.contains("idea on the train") && inbox.contains("another idea"),
        "{inbox}"
    );
    // No team yet: the standup says how to get one rather than pointing at `members`.
    let standup = cli.ok(&["standup"])?;
    assert!(
        standup.contains("not in a team yet: `callsign join`"),
        "{standup}"
    );

    let (server, account) = TestServer::start("DEV")?;
    let login = cli.ok(&["login", "--server", &server.url, "--token", &account.token])?;
    assert!(
        login.contains("2 task(s)") && login.contains("inbox --send-to DEV"),
        "login proposes where the local tasks go: {login}"
    );
    // Logged in but not sent yet: they stay here; a sync does not fail them.
    cli.ok(&["sync"])?;
    assert_eq!(cli.json(&["show", &first])?["sync_state"], "provisional");
    assert!(server_tasks(&server.url, &account.token)?.is_empty());

    let sent = cli.ok(&["inbox", "--send-to", "dev"])?;
    assert!(sent.contains("2 task(s) queued for DEV"), "{sent}");
    cli.ok(&["sync"])?;
    for (u, key) in [(&first, "DEV-1"), (&second, "DEV-2")] {
        let t = cli.json(&["show", u])?;
        assert_eq!(
            (t["key"].as_str(), t["local"].as_bool()),
            (Some(key), Some(false))
        );
    }
    let status = cli.json(&["status"])?;
    assert_eq!(
        (status["local"].as_u64(), status["pending"].as_u64()),
        (Some(0), Some(0))
    );
    // New captures now go to the server's project (the login set it as the default).
    let third = cli.add("after login", &[])?;
    cli.ok(&["sync"])?;
    assert_eq!(cli.json(&["show", &third])?["key"], "DEV-3");
    Ok(())
}

#[test]
fn a_refused_task_is_fixed_with_another_project_or_discarded() -> Result<()> {
    let (server, account) = TestServer::start("FIX")?;
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&server.url, &account.token)?;
    let wrong = cli.add("filed under a typo", &["--project", "FXI"])?;
    let junk = cli.add("not wanted after all", &["--project", "NOPE"])?;
    cli.ok(&["sync"])?;

    let failed = cli.json(&["list", "--failed"])?;
    assert_eq!(failed.as_array().map(Vec::len), Some(2), "{failed}");
    let t = cli.json(&["show", &wrong])?;
    assert_eq!(t["failure"]["fix"], "project");
    assert_eq!(t["failure"]["code"], "project_not_found");
    let summary = t["failure"]["summary"].as_str().unwrap_or_default();
    assert!(summary.contains("no project FXI"), "{summary}");
    let text = cli.ok(&["list", "--failed"])?;
    assert!(text.contains("Choose one of its projects"), "{text}");
    assert_eq!(cli.json(&["status"])?["failed"], 2);

    // Fixed: the right project, sent again, numbered there.
    cli.ok(&["edit", &wrong[..8], "--project", "fix"])?;
    cli.ok(&["sync"])?;
    let t = cli.json(&["show", &wrong])?;
    assert_eq!(
        (t["key"].as_str(), t["sync_state"].as_str()),
        (Some("FIX-1"), Some("synced"))
    );
    assert_eq!(cli.json(&["status"])?["failed"], 1);

    // Discarded: gone from this device, the failed count back to 0; it never reached the server.
    let out = cli.ok(&["discard", &junk])?;
    assert!(out.contains("removed from this device"), "{out}");
    assert!(!cli.output(&["show", &junk])?.status.success());
    assert_eq!(cli.json(&["status"])?["failed"], 0);
    assert_eq!(server_tasks(&server.url, &account.token)?.len(), 1);
    Ok(())
}

/// `reopen` and `annotate` with no server: a completed task is pending again (a pending one is
/// refused in words), and each annotation is a stamped line appended to the notes.
#[test]
fn reopen_and_annotate_work_offline() -> Result<()> {
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    let t = cli.add("call the bank", &[])?;
    cli.ok(&["done", &t])?;
    assert_eq!(cli.json(&["show", &t])?["status"], "completed");
    assert_eq!(cli.json(&["reopen", &t])?["status"], "pending");
    let out = cli.output(&["reopen", &t])?;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr)?.contains("is already pending"),
        "a pending task is refused in words"
    );
    cli.ok(&["annotate", &t, "asked", "for", "the", "form"])?;
    let notes = cli.json(&["annotate", &t, "form sent"])?["notes"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let lines: Vec<&str> = notes.lines().collect();
    assert_eq!(lines.len(), 2, "{notes}");
    let stamped = |l: &str, text: &str| {
        // `2026-11-26 09:30 asked for the form`
        let (date, rest) = l.split_at(16);
        chrono::NaiveDateTime::parse_from_str(date, "%Y-%m-%d %H:%M").is_ok()
            && rest == format!(" {text}")
    };
    assert!(stamped(lines[0], "asked for the form"), "{notes}");
    assert!(stamped(lines[1], "form sent"), "{notes}");
    assert_eq!(
        cli.output(&["annotate", &t])?.status.code(),
        Some(2),
        "no text: usage"
    );
    Ok(())
}

/// `list` colours only on a terminal: piped it is plain text, `CLICOLOR_FORCE` colours it (the
/// provisional label yellow), and `NO_COLOR` wins over both.
#[test]
fn list_colours_only_when_wanted_and_never_with_no_color() -> Result<()> {
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.add("call the bank", &[])?;
    const ESC: char = '\u{1b}';
    let piped = cli.ok(&["list"])?;
    assert!(
        piped.contains("call the bank") && !piped.contains(ESC),
        "{piped:?}"
    );
    let forced = cli.command(&["list"]).env("CLICOLOR_FORCE", "1").output()?;
    let forced = String::from_utf8(forced.stdout)?;
    assert!(
        forced.contains("\u{1b}[33m"),
        "yellow provisional label: {forced:?}"
    );
    let none = cli
        .command(&["list"])
        .env("CLICOLOR_FORCE", "1")
        .env("NO_COLOR", "1")
        .output()?;
    let none = String::from_utf8(none.stdout)?;
    assert_eq!(none, piped, "NO_COLOR: plain text");
    let json = cli
        .command(&["--json", "list"])
        .env("CLICOLOR_FORCE", "1")
        .output()?;
    assert!(
        !String::from_utf8(json.stdout)?.contains(ESC),
        "JSON is never coloured"
    );
    Ok(())
}

/// `callsign list | head`: a reader that closes the pipe before the list is written ends the
/// CLI quietly (SIGPIPE), as it would `ls`, not with a panic and a backtrace.
#[test]
fn a_reader_that_stops_early_ends_the_cli_quietly() -> Result<()> {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.add("call the bank", &[])?;
    let mut child = cli
        .command(&["add", "and", "the", "plumber"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Closed before the CLI has opened its store, let alone printed.
    drop(child.stdout.take());
    let out = child.wait_with_output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        out.status.success() || out.status.signal() == Some(13),
        "{:?}: {stderr}",
        out.status
    );
    // The task was saved before the print that met the closed pipe.
    assert!(cli.ok(&["list"])?.contains("and the plumber"));
    Ok(())
}
