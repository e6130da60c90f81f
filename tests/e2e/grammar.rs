//! `modify` and `list FILTER` in Taskwarrior's words, through the real CLI: with no server, and
//! against the real server with a second device. The same filter grammar is the app's
//! (callsign-core's shared fixture checks the two agree).
use anyhow::Result;
use serde_json::Value;

use crate::cli::Cli;
use crate::fixture::{create_project, TestServer};

/// The labels (key, else `~id`) of `list FILTER --json`, sorted.
fn labels(cli: &Cli, filter: &[&str]) -> Result<Vec<String>> {
    let mut args = vec!["list"];
    args.extend_from_slice(filter);
    let Value::Array(tasks) = cli.json(&args)? else {
        anyhow::bail!("list is not an array");
    };
    let mut labels: Vec<String> = tasks
        .iter()
        .map(|t| match t["key"].as_str() {
            Some(k) => k.to_owned(),
            None => format!(
                "~{}",
                &t["uuid"].as_str().unwrap_or_default().replace('-', "")[..8]
            ),
        })
        .collect();
    // Another device's capture order is the order it pulled the tasks in: compare as sets.
    labels.sort();
    Ok(labels)
}

/// Sorted, as [`labels`] answers.
fn set<const N: usize>(labels: [String; N]) -> Vec<String> {
    let mut v = labels.to_vec();
    v.sort();
    v
}

fn tags(cli: &Cli, r: &str) -> Result<Vec<String>> {
    Ok(cli.json(&["show", r])?["tags"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default())
}

#[test]
fn modify_two_tasks_at_once_and_filter_them_with_no_server() -> Result<()> {
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    let a = cli.add("Fix the login redirect", &["--tag", "ui"])?;
    let b = cli.add("Login page copy", &["--tag", "ui", "--tag", "copy"])?;
    let c = cli.add("Buy milk", &[])?;
    let id = |u: &str| format!("~{}", &u.replace('-', "")[..8]);

    let out = cli.json(&["modify", &id(&a), &id(&b), "+bug", "-UI", "priority:H"])?;
    assert_eq!(
        out.as_array().map(Vec::len),
        Some(2),
        "both tasks answered: {out}"
    );
    assert_eq!(tags(&cli, &a)?, ["bug"]);
    assert_eq!(tags(&cli, &b)?, ["copy", "bug"]);
    let t = cli.json(&[
        "modify",
        &id(&a),
        "Fix",
        "the",
        "SSO",
        "redirect",
        // Today, not tomorrow: on the week's last day tomorrow is after `eow`.
        "due:today",
    ])?;
    assert_eq!(t["description"], "Fix the SSO redirect");
    assert!(t["due"].is_string(), "{t}");
    assert_eq!(t["priority"], "H", "what modify did not name stays");

    assert_eq!(
        labels(&cli, &["+bug", "status:pending"])?,
        set([id(&a), id(&b)])
    );
    assert_eq!(labels(&cli, &["-bug"])?, [id(&c)]);
    assert_eq!(
        labels(&cli, &["login", "+bug"])?,
        [id(&b)],
        "words and tags"
    );
    assert_eq!(labels(&cli, &["due.before:eow", "pri:H"])?.len(), 1);
    cli.ok(&["done", &id(&c)])?;
    assert_eq!(labels(&cli, &["status:completed"])?, [id(&c)]);
    // Not yet numbered, whatever the status; with a status, only those.
    assert_eq!(
        labels(&cli, &["status:provisional"])?,
        set([id(&a), id(&b), id(&c)])
    );
    assert_eq!(
        labels(&cli, &["status:provisional", "status:pending"])?,
        set([id(&a), id(&b)])
    );

    let out = cli.output(&["list", "status:open"])?;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr)?.contains("'open' is not a status"));
    let out = cli.output(&["modify", &id(&a), "due:someday"])?;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr)?.contains("'someday' is not a date"));
    assert_eq!(tags(&cli, &a)?, ["bug"], "a refused modify changes nothing");
    Ok(())
}

#[test]
fn modify_and_filters_against_the_server_reach_the_other_device() -> Result<()> {
    let (server, account) = TestServer::start("MOD")?;
    create_project(&server.url, &account.token, "OPS")?;
    let homes = [tempfile::tempdir()?, tempfile::tempdir()?];
    let a = Cli::new(homes[0].path());
    let b = Cli::new(homes[1].path());
    a.login(&server.url, &account.token)?;
    b.login(&server.url, &server.token(&account, "second")?)?;
    for d in [
        "Fix the login redirect",
        "Login page copy",
        "Rotate certificates",
        "Old",
    ] {
        a.add(d, &["--tag", "ui"])?;
    }
    a.ok(&["sync", "--timeout", "30"])?;

    // Two tasks, one change each; a second change of MOD-1 before the sync joins the first.
    a.ok(&["modify", "MOD-1", "mod-2", "+bug", "-ui"])?;
    a.ok(&["modify", "MOD-1", "Fix", "the", "SSO", "redirect", "pri:H"])?;
    // A move and a tag in one change: the task gets the next OPS key once synced.
    a.ok(&["modify", "MOD-3", "#OPS", "+infra"])?;
    a.ok(&["done", "MOD-4"])?;
    assert_eq!(
        a.json(&["status"])?["pending"],
        4,
        "one queued change per task"
    );
    a.ok(&["sync", "--timeout", "30"])?;
    assert_eq!(a.json(&["show", "MOD-3"])?["key"], "OPS-1");

    b.ok(&["sync", "--timeout", "30"])?;
    assert_eq!(labels(&b, &["+bug", "status:pending"])?, ["MOD-1", "MOD-2"]);
    assert_eq!(
        b.json(&["show", "MOD-1"])?["description"],
        "Fix the SSO redirect"
    );
    assert_eq!(labels(&b, &["#OPS", "+infra"])?, ["OPS-1"]);
    assert_eq!(
        labels(&b, &["MOD-3"])?,
        ["OPS-1"],
        "an old key still finds the task"
    );
    // A range, like a key, finds tasks by the keys they had: MOD-3 is OPS-1 now.
    assert_eq!(labels(&b, &["MOD-1..4"])?, ["MOD-1", "MOD-2", "OPS-1"]);
    assert_eq!(labels(&b, &["MOD-1..2", "status:all"])?, ["MOD-1", "MOD-2"]);
    assert_eq!(labels(&b, &["MOD-4", "status:completed"])?, ["MOD-4"]);
    assert_eq!(labels(&b, &["pri:H", "sso"])?, ["MOD-1"]);
    // MOD-3 kept its tag through the move; MOD-4 has it too but is completed.
    assert_eq!(labels(&b, &["+ui"])?, ["OPS-1"]);
    Ok(())
}
