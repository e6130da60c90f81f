//! Readable reports (issue 29) through the real CLI: `--sort key` against the real server
//! (keys by prefix and number, subtasks after their parent, tasks without a key last),
//! `--columns` picking and ordering the fields, lines cut to `COLUMNS` by display width, and
//! `--json` giving one JSON document from every command, errors included.
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{anyhow, Result};
use serde_json::Value;

use crate::cli::Cli;
use crate::fixture::{free_port, TestServer};

/// Display columns of `s`: the CJK ideographs these tests use take two, the rest one.
fn cols(s: &str) -> usize {
    s.chars()
        .map(|c| {
            if ('\u{4e00}'..='\u{9fff}').contains(&c) {
                2
            } else {
                1
            }
        })
        .sum()
}

/// The `key` of each task of a JSON listing (`~` for a task without one).
fn keys(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["key"].as_str().unwrap_or("~").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A command that must fail with `exit`: its stdout parsed as JSON, and its stderr.
fn json_failure(cli: &Cli, args: &[&str], exit: i32) -> Result<(Value, String)> {
    let out = cli.output(args)?;
    assert_eq!(out.status.code(), Some(exit), "{args:?}");
    let stdout = String::from_utf8(out.stdout)?;
    let doc = serde_json::from_str(&stdout).map_err(|e| anyhow!("{args:?}: {e}: {stdout:?}"))?;
    Ok((doc, String::from_utf8(out.stderr)?))
}

#[test]
fn sort_key_puts_subtasks_after_their_parent_and_tasks_without_a_key_last() -> Result<()> {
    let (server, account) = TestServer::start("REP")?;
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    // Captured first, but kept on this device (INBOX): it never gets a key.
    cli.add("early idea", &[])?;
    let login = cli.json(&["login", "--server", &server.url, "--token", &account.token])?;
    assert_eq!(login["project"], "REP", "{login}");
    let lines: String = (1..=10).map(|n| format!("task {n}\n")).collect();
    let mut import = cli.command(&["--json", "import"]);
    import.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = import.spawn()?;
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), lines.as_bytes())?;
    let imported: Value = serde_json::from_slice(&child.wait_with_output()?.stdout)?;
    assert_eq!(imported["imported"], 10);
    let synced = cli.json(&["sync", "--timeout", "30"])?;
    assert_eq!(synced["pending"], 0, "{synced}");
    cli.add("sub of 2", &["--parent", "REP-2"])?;
    cli.add("sub of 1", &["--parent", "REP-1"])?;
    cli.ok(&["sync", "--timeout", "30"])?;
    cli.add("sub of 2.1", &["--parent", "REP-2.1"])?;
    cli.ok(&["sync", "--timeout", "30"])?;
    cli.add("not sent yet", &[])?;

    let by_key = keys(&cli.json(&["list", "--sort", "key"])?);
    let want: Vec<String> = ["REP-1", "REP-1.1", "REP-2", "REP-2.1", "REP-2.1.1"]
        .into_iter()
        .map(str::to_owned)
        .chain((3..=10).map(|n| format!("REP-{n}")))
        .chain(["~".into(), "~".into()])
        .collect();
    assert_eq!(by_key, want);
    let list = cli.json(&["list", "--sort", "key"])?;
    let last: Vec<&str> = list.as_array().unwrap()[13..]
        .iter()
        .filter_map(|t| t["description"].as_str())
        .collect();
    assert_eq!(last, ["early idea", "not sent yet"], "capture order");
    // The default stays capture order: the subtasks after REP-10.
    let created = keys(&cli.json(&["list"])?);
    let at = |key: &str| created.iter().position(|k| k == key);
    assert!(at("REP-10") < at("REP-2.1"), "{created:?}");
    assert!(at("REP-2.1") < at("REP-1.1"), "{created:?}");
    assert!(at("REP-1.1") < at("REP-2.1.1"), "{created:?}");

    // The human table says the same, key column first and never cut.
    let table = cli
        .command(&["list", "--sort", "key", "--columns", "key,description"])
        .env("COLUMNS", "20")
        .output()?;
    let table = String::from_utf8(table.stdout)?;
    let shown: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        shown[..5],
        ["REP-1", "REP-1.1", "REP-2", "REP-2.1", "REP-2.1.1"]
    );
    assert_eq!(shown.len(), 15, "{table}");

    // `next` keeps its leaf-first order unless asked: blocked parents are left out either way.
    let leaf_first = keys(&cli.json(&["next"])?);
    assert_eq!(leaf_first[..2], ["REP-2.1.1", "REP-1.1"], "{leaf_first:?}");
    let next_by_key = keys(&cli.json(&["next", "--sort", "key"])?);
    assert_eq!(next_by_key[..3], ["REP-1.1", "REP-2.1.1", "REP-3"]);
    assert_eq!(next_by_key.len(), 12, "{next_by_key:?}");
    // `--sort created` is `list`'s order (capture order), less the blocked parents.
    let next_created = keys(&cli.json(&["next", "--sort", "created"])?);
    let blocked = ["REP-1", "REP-2", "REP-2.1"];
    let listed: Vec<String> = created
        .into_iter()
        .filter(|k| !blocked.contains(&k.as_str()))
        .collect();
    assert_eq!(next_created, listed);

    // `--json` on the commands that talk to the server: one document each.
    assert!(cli.json(&["project", "list"])?.is_array());
    let added = cli.json(&["project", "add", "Reports two", "--prefix", "REQ"])?;
    assert_eq!(added["prefix"], "REQ");
    let (taken, err) = json_failure(
        &cli,
        &["--json", "project", "add", "Again", "--prefix", "REQ"],
        1,
    )?;
    assert!(err.contains("cannot create REQ"), "{err}");
    assert_eq!(taken["error"]["exit"], 1);
    assert_eq!(taken["error"]["code"], "prefix_taken", "{taken}");
    assert!(
        taken["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("cannot create REQ")),
        "{taken}"
    );

    // `watch --json`: one JSON document per line.
    let mut watch = cli
        .command(&["--json", "watch"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = watch.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let first = rx.recv_timeout(Duration::from_secs(30));
    let _ = watch.kill();
    let _ = watch.wait();
    let first = first.map_err(|_| anyhow!("watch printed nothing within 30 s"))?;
    let event: Value = serde_json::from_str(&first)?;
    assert!(event.is_object(), "{first}");
    Ok(())
}

#[test]
fn columns_choose_and_order_the_fields_and_json_keeps_every_field() -> Result<()> {
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    let uuid = cli.add(
        "Call the bank",
        &["--priority", "H", "--tag", "home", "--due", "2026-01-05"],
    )?;
    cli.add("Buy milk", &[])?;
    let table = cli.ok(&["list", "--columns", "priority,due,key,tags,uuid"])?;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["Pri", "Due", "Key", "Tags", "UUID"]
    );
    let row = lines[1];
    assert!(
        row.starts_with("H    Mon 2026-01-05 (overdue)  ~") && row.ends_with(&uuid),
        "{row:?}"
    );
    assert!(row.contains("  home  "), "{row:?}");
    assert!(
        !table.contains("Call the bank"),
        "no description column asked"
    );
    // Every column of a row starts where its header does.
    let at = |l: &str, what: &str| l.find(what).unwrap_or(usize::MAX);
    assert_eq!(at(lines[0], "UUID"), at(row, &uuid));
    assert_eq!(at(lines[0], "Key"), at(lines[2], "~"));

    let json = cli.json(&["list", "--columns", "key"])?;
    let first = &json[0];
    for field in [
        "uuid",
        "description",
        "tags",
        "due",
        "priority",
        "created_at",
        "status",
    ] {
        assert!(
            first.get(field).is_some_and(|v| !v.is_null()),
            "{field}: {first}"
        );
    }
    for cmd in ["next", "inbox"] {
        let human = cli.ok(&[cmd, "--columns", "description,status", "--sort", "key"])?;
        assert!(
            human.starts_with("Description    Status\nCall the bank  pending\n"),
            "{cmd}: {human:?}"
        );
        let json = cli.json(&[cmd, "--columns", "description", "--sort", "priority"])?;
        assert_eq!(json[0]["description"], "Call the bank", "{cmd}");
        assert_eq!(json[1]["priority"], Value::Null, "{cmd}");
    }

    // A column that does not exist: a usage error naming the ones that do.
    let out = cli.output(&["list", "--columns", "key,size"])?;
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr)?;
    assert!(
        err.contains("'size'")
            && err.contains(
                "key, status, project, priority, due, description, tags, created, modified, uuid"
            ),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no JSON unless asked");
    let (doc, _) = json_failure(&cli, &["--json", "list", "--columns", "size"], 2)?;
    assert_eq!(doc["error"]["code"], "usage");
    assert_eq!(doc["error"]["exit"], 2);
    let (doc, _) = json_failure(&cli, &["next", "--sort", "size", "--json"], 2)?;
    assert_eq!(
        doc["error"]["code"], "usage",
        "--json after the command too"
    );
    Ok(())
}

#[test]
fn columns_env_cuts_descriptions_to_fit_and_a_pipe_gets_whole_lines() -> Result<()> {
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    let long = "北京办公室 visit about the visa papers and the flights";
    cli.add(long, &["--priority", "M"])?;
    cli.add("short", &[])?;
    let piped = cli.ok(&["list"])?;
    assert!(piped.contains(long), "no COLUMNS, not a terminal: {piped}");

    for columns in [None, Some("key,description,priority")] {
        let mut args = vec!["list"];
        if let Some(c) = columns {
            args.extend(["--columns", c]);
        }
        let out = cli.command(&args).env("COLUMNS", "40").output()?;
        let text = String::from_utf8(out.stdout)?;
        for line in text.lines() {
            assert!(
                cols(line) <= 40,
                "{columns:?}: {line:?} is {} wide",
                cols(line)
            );
            assert!(line.starts_with('~') || line.starts_with("Key"), "{line:?}");
        }
        let row = text
            .lines()
            .find(|l| l.contains("北京"))
            .ok_or_else(|| anyhow!("{text}"))?;
        let key = row.split_whitespace().next().unwrap_or_default();
        assert_eq!(key.len(), 9, "the key is whole: {row:?}");
        assert!(
            row.contains("北京办公室 vis") && row.contains('…') && !row.contains("flights"),
            "{columns:?}: {row:?}"
        );
        assert!(
            row.trim_end().ends_with('M') || row.contains("(M)"),
            "the priority stays: {row:?}"
        );
        assert!(text.contains("short"), "{text}");
    }
    Ok(())
}

/// With `--json`, stdout holds JSON whatever happens: the result, or the error with its exit
/// code and the engine's code; the words still go to stderr.
#[test]
fn json_on_every_local_command_and_on_errors() -> Result<()> {
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    let t = cli.add("call the bank", &["--tag", "home"])?;
    let short = &t[..8];
    for args in [
        vec!["show", short],
        vec!["edit", short, "--priority", "L"],
        vec!["annotate", short, "asked"],
        vec!["move", short, "INBOX"],
        vec!["done", short],
        vec!["reopen", short],
        vec!["delete", short],
        vec!["list"],
        vec!["next"],
        vec!["inbox"],
        vec!["status"],
        vec!["inbox", "--send-to", "DEV"],
    ] {
        let v = cli.json(&args)?;
        assert!(v.is_object() || v.is_array(), "{args:?}: {v}");
    }

    let (doc, err) = json_failure(&cli, &["--json", "show", "DEV-99"], 1)?;
    assert_eq!(doc["error"]["code"], "not_found");
    assert_eq!(doc["error"]["exit"], 1);
    assert!(err.contains("no task matches"), "words on stderr: {err}");
    let (doc, _) = json_failure(&cli, &["--json", "edit", short], 1)?;
    assert_eq!(doc["error"]["code"], Value::Null, "no engine code: {doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("nothing to change")),
        "{doc}"
    );

    // Saved here, not synced (exit 3): the server is not there.
    let c = cli.add("queued", &["--project", "DEV"])?;
    cli.ok(&[
        "login",
        "--server",
        &format!("http://127.0.0.1:{}", free_port()),
        "--token",
        "cs_nothing",
    ])?;
    let (doc, err) = json_failure(&cli, &["--json", "sync", "--timeout", "2"], 3)?;
    assert_eq!(doc["error"]["code"], "not_synced", "{doc}");
    assert_eq!(doc["error"]["exit"], 3);
    assert!(err.contains("stay queued"), "{err}");
    assert_eq!(cli.json(&["show", &c])?["sync_state"], "provisional");
    Ok(())
}
