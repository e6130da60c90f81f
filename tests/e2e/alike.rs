//! Prefixes that sound alike, from the CLI against the real server: `project add` and
//! `project rename` refuse a prefix a person would mishear beside another project's (exit 1,
//! naming that project and the flag), and take it with `--allow-similar`.
use anyhow::Result;

use crate::cli::Cli;
use crate::fixture::TestServer;

fn prefixes(cli: &Cli) -> Result<Vec<String>> {
    let listed = cli.json(&["project", "list"])?;
    Ok(listed
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p["prefix"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default())
}

#[test]
fn a_prefix_that_sounds_like_another_projects_needs_allow_similar() -> Result<()> {
    let (server, account) = TestServer::start("SYN")?;
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&server.url, &account.token)?;

    let out = cli.output(&["project", "add", "Sin", "--prefix", "SIN"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for says in ["cannot create SIN", "sounds like SYN", "--allow-similar"] {
        assert!(err.contains(says), "{says:?} in {err}");
    }
    let json = cli.output(&["--json", "project", "add", "Sin", "--prefix", "SIN"])?;
    let said: serde_json::Value =
        serde_json::from_slice(&json.stdout).or_else(|_| serde_json::from_slice(&json.stderr))?;
    assert_eq!(said["error"]["code"], "prefix_sounds_alike", "{said}");
    assert_eq!(prefixes(&cli)?, ["SYN"], "nothing was created");

    // Sounds different: taken as it is.
    cli.ok(&["project", "add", "Operations", "--prefix", "OPS"])?;
    let out = cli.output(&["project", "rename", "OPS", "SIN"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot rename OPS to SIN") && err.contains("--allow-similar"),
        "{err}"
    );

    let made = cli.json(&[
        "project",
        "add",
        "Sin",
        "--prefix",
        "SIN",
        "--allow-similar",
    ])?;
    assert_eq!(made["prefix"], "SIN");
    cli.json(&["project", "rename", "OPS", "SYM", "--allow-similar"])?;
    assert_eq!(prefixes(&cli)?, ["SIN", "SYM", "SYN"]);
    Ok(())
}
