//! Renaming a project's prefix through the CLI, the engine and the real server: every device
//! sees the new keys after a sync, every old key still finds its task on each of them, the
//! counter goes on, a create queued under the old prefix lands in the project, and the old
//! prefix can never be another project's.
use anyhow::{bail, Result};
use callsign_core::ErrorCode;

use crate::cli::Cli;
use crate::fixture::{create_project, TestServer};

fn key_of(cli: &Cli, r: &str) -> Result<String> {
    Ok(cli.json(&["show", r])?["key"]
        .as_str()
        .unwrap_or("none")
        .to_owned())
}

/// `POST /v1/projects` for `prefix`: the server's error code if it refused.
fn refused_project(url: &str, token: &str, prefix: &str) -> Result<Option<ErrorCode>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = callsign_sync::client::Client::new(url, callsign_sync::Token::new(token))?;
        match client.create_project(prefix, prefix, false).await {
            Ok(_) => Ok(None),
            Err(e) => match e.error {
                callsign_sync::Error::Server(p) => Ok(Some(p.code)),
                other => bail!("{other}"),
            },
        }
    })
}

#[test]
fn a_renamed_prefix_gives_every_device_the_new_keys_and_old_keys_still_find_the_tasks() -> Result<()>
{
    let (server, account) = TestServer::start("SYN")?;
    let homes = [tempfile::tempdir()?, tempfile::tempdir()?];
    let a = Cli::new(homes[0].path());
    let b = Cli::new(homes[1].path());
    a.login(&server.url, &account.token)?;
    b.login(&server.url, &server.token(&account, "second")?)?;

    let task = a.add("Release", &["--project", "SYN"])?;
    let sub = a.add("Build it", &["--parent", &task])?;
    a.ok(&["sync", "--timeout", "30"])?;
    b.ok(&["sync", "--timeout", "30"])?;
    assert_eq!(
        [key_of(&b, &task)?, key_of(&b, &sub)?],
        ["SYN-1", "SYN-1.1"]
    );
    // B captures offline into SYN, not knowing of the rename to come.
    let queued = b.add("Queued on B", &["--project", "SYN"])?;

    let renamed = a.json(&["project", "rename", "syn", "syx"])?;
    assert_eq!(
        (
            renamed["prefix"].as_str(),
            renamed["previous_prefixes"].clone()
        ),
        (Some("SYX"), serde_json::json!(["SYN"]))
    );
    // A's default project followed the rename: a new task goes to SYX, the next number.
    let next = a.add("After the rename", &[])?;
    assert_eq!(a.json(&["show", &next])?["project"], "SYX");
    a.ok(&["sync", "--timeout", "30"])?;
    assert_eq!(key_of(&a, &next)?, "SYX-2");
    b.ok(&["sync", "--timeout", "30"])?;
    assert_eq!(
        key_of(&b, &queued)?,
        "SYX-3",
        "a create queued under the old prefix lands in the renamed project"
    );

    for (cli, who) in [(&a, "A"), (&b, "B")] {
        assert_eq!(
            [key_of(cli, &task)?, key_of(cli, &sub)?],
            ["SYX-1", "SYX-1.1"],
            "{who} sees the new keys"
        );
        let shown = cli.json(&["show", "SYN-1"])?;
        assert_eq!(
            (
                shown["uuid"].as_str(),
                shown["key"].as_str(),
                shown["previous_keys"].clone()
            ),
            (
                Some(task.as_str()),
                Some("SYX-1"),
                serde_json::json!(["SYN-1"])
            ),
            "{who}: SYN-1 still finds the task"
        );
        assert_eq!(
            cli.json(&["show", "syn 1.1"])?["uuid"],
            sub.as_str(),
            "{who}"
        );
    }
    assert_eq!(
        b.json(&["add", "B's default followed too"])?["project"],
        "SYX"
    );

    // SYN names this project's tasks forever: no project can be made with it.
    assert_eq!(
        refused_project(&server.url, &account.token, "SYN")?,
        Some(ErrorCode::PrefixTaken)
    );
    create_project(&server.url, &account.token, "OPS")?;
    let out = a.output(&["project", "rename", "OPS", "SYN"])?;
    let said = String::from_utf8(out.stderr)?;
    assert!(
        !out.status.success() && said.contains("cannot rename OPS to SYN") && said.contains("SYX"),
        "{said}"
    );
    let out = a.output(&["project", "rename", "SYN", "ABC"])?;
    let said = String::from_utf8(out.stderr)?;
    assert!(
        !out.status.success() && said.contains("no project SYN") && said.contains("SYX now"),
        "{said}"
    );
    Ok(())
}

#[test]
fn a_project_added_from_the_cli_numbers_its_tasks_and_a_taken_prefix_is_refused() -> Result<()> {
    let (mut server, account) = TestServer::start("SYN")?;
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&server.url, &account.token)?;
    let made = cli.json(&["project", "add", "Operations", "--prefix", "ops"])?;
    assert_eq!(made["prefix"], "OPS");
    assert_eq!(made["name"], "Operations");
    let listed = cli.json(&["project", "list"])?;
    let prefixes: Vec<&str> = listed
        .as_array()
        .map(|a| a.iter().filter_map(|p| p["prefix"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(prefixes, ["OPS", "SYN"]);
    let uuid = cli.add("Deploy the release", &["--project", "ops"])?;
    cli.ok(&["sync"])?;
    assert_eq!(key_of(&cli, &uuid)?, "OPS-1");

    // Refusals are readable and exit 1; nothing changes.
    for (prefix, says) in [
        ("OPS", "choose another"),
        ("1x", "invalid prefix"),
        ("inbox", "inbox"),
    ] {
        let out = cli.output(&["project", "add", "Again", "--prefix", prefix])?;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{prefix}: {err}");
        assert!(err.contains(says), "{prefix}: {err}");
    }
    server.stop();
    let out = cli.output(&["project", "add", "Later", "--prefix", "LAT"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("cannot be reached"), "{err}");
    assert_eq!(
        cli.json(&["project", "list"])?,
        listed,
        "the last list seen"
    );
    Ok(())
}

#[test]
fn completions_are_printed_for_both_commands() -> Result<()> {
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    let bash = cli.ok(&["completions", "bash"])?;
    assert!(bash.contains("complete -F _callsign"), "{bash}");
    assert!(bash.contains("project"), "subcommands are completed");
    let out = std::process::Command::new(crate::fixture::server_bin())
        .args(["completions", "zsh"])
        .output()?;
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("#compdef callsign-server"));
    assert!(
        std::fs::read_dir(home.path())?.next().is_none(),
        "completions touch no data dir"
    );
    Ok(())
}
