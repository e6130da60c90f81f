//! `callsign import --from FORMAT FILE` against the real server (issue 42): the committed
//! fixtures of `crates/callsign-import/fixtures` (each with a note of where its shape comes
//! from), imported through the CLI. Every old key resolves on the server and on every device;
//! `--keep-numbers` keeps the numbers and the counter goes on after them; a second run makes
//! nothing; a run killed halfway goes on; parents and children are kept; assignees map to
//! members; only owners import.
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Result};
use serde_json::Value;

use crate::cli::Cli;
use crate::fixture::{server_tasks, TestServer};

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/callsign-import/fixtures")
        .join(name);
    p.display().to_string()
}

/// `GET /v1/tasks/{reference}` on the server: its status and body.
fn server_get(url: &str, token: &str, reference: &str) -> Result<(u16, Value)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut u = reqwest::Url::parse(url)?;
        u.path_segments_mut()
            .map_err(|()| anyhow!("no path"))?
            .extend(["v1", "tasks", reference]);
        let res = reqwest::Client::new()
            .get(u)
            .bearer_auth(token)
            .send()
            .await?;
        let status = res.status().as_u16();
        Ok((status, res.json().await?))
    })
}

fn key(v: &Value) -> &str {
    v["key"].as_str().unwrap_or_default()
}

/// The Jira fixture's issues: (key, parent key) as the file has them.
const JIRA: [(&str, Option<&str>); 8] = [
    ("ENG-1", None),
    ("ENG-2", Some("ENG-1")),
    ("ENG-4", Some("ENG-2")),
    ("ENG-5", None),
    ("ENG-6", None),
    ("ENG-7", Some("ENG-1")),
    ("ENG-8", Some("ENG-2")),
    ("ENG-9", None),
];

#[test]
fn a_jira_export_keeps_its_numbers_and_a_second_run_makes_nothing() -> Result<()> {
    let (server, account) = TestServer::start("SYN")?;
    let homes = [tempfile::tempdir()?, tempfile::tempdir()?];
    let [a, b] = [0, 1].map(|i| Cli::new(homes[i].path()));
    a.login(&server.url, &account.token)?;
    let file = fixture("jira.csv");

    // The dry run says what would happen and makes nothing.
    let plan = a.json(&[
        "import",
        "--from",
        "jira",
        &file,
        "--keep-numbers",
        "--dry-run",
    ])?;
    let eng = &plan["plan"]["projects"][0];
    assert_eq!(
        (
            eng["prefix"].as_str(),
            eng["new"].as_bool(),
            eng["tasks"].as_u64()
        ),
        (Some("ENG"), Some(true), Some(8)),
        "{plan}"
    );
    assert_eq!(eng["unused"], serde_json::json!([3]), "{plan}");
    assert!(a.list()?.is_empty(), "a dry run makes nothing");

    let done = a.json(&["import", "--from", "jira", &file, "--keep-numbers"])?;
    assert_eq!(
        (done["imported"].as_u64(), done["keyed"].as_u64()),
        (Some(8), Some(8)),
        "{done}"
    );
    // Every key is its own, on the server and on a second device; parents kept.
    b.login(&server.url, &b_token(&server, &account)?)?;
    b.ok(&["sync"])?;
    for (k, parent) in JIRA {
        let (status, t) = server_get(&server.url, &account.token, &k.to_lowercase())?;
        assert_eq!((status, key(&t)), (200, k), "{t}");
        assert_eq!(t["origin"]["key"], k, "{t}");
        for device in [&a, &b] {
            let shown = device.json(&["show", k])?;
            assert_eq!(key(&shown), k, "{shown}");
            let p = shown["parent"].as_str().map(|u| device.json(&["show", u]));
            let p = p.transpose()?;
            assert_eq!(p.as_ref().map(key), parent, "{k}'s parent");
        }
    }
    let cancelled = a.json(&["show", "ENG-6"])?;
    assert_eq!(cancelled["status"], "deleted", "{cancelled}");
    // The counter goes on after the highest; ENG-3, never in the file, stays unused.
    a.ok(&["add", "After the import", "--project", "ENG"])?;
    a.ok(&["sync"])?;
    let after = a.json(&["show", "ENG-10"])?;
    assert_eq!(after["description"], "After the import");
    let (status, _) = server_get(&server.url, &account.token, "ENG-3")?;
    assert_eq!(status, 404);

    // The same file again: nothing new, here or on the server.
    let before = server_tasks(&server.url, &account.token)?.len();
    let again = a.json(&["import", "--from", "jira", &file, "--keep-numbers"])?;
    assert_eq!(
        (again["already_here"].as_u64(), again["keyed"].as_u64()),
        (Some(8), Some(8)),
        "{again}"
    );
    assert_eq!(server_tasks(&server.url, &account.token)?.len(), before);
    // A later export holds ENG-10, which is a task made here meanwhile: the dry run names the
    // clash, and the import refuses that issue alone, in words; ENG-11 comes in.
    let dir = tempfile::tempdir()?;
    let later = dir.path().join("later.csv");
    std::fs::write(
        &later,
        "Summary,Issue key,Issue id,Status,Created\n\
         Made in Jira meanwhile,ENG-10,10100,To Do,01/Apr/24 9:00 AM\n\
         And another,ENG-11,10101,To Do,01/Apr/24 9:05 AM\n",
    )?;
    let later = later.display().to_string();
    let plan = a.json(&[
        "import",
        "--from",
        "jira",
        &later,
        "--keep-numbers",
        "--dry-run",
    ])?;
    assert_eq!(
        plan["clashes"],
        serde_json::json!([{"key": "ENG-10", "task": "ENG-10"}]),
        "{plan}"
    );
    let out = a.output(&[
        "--json",
        "import",
        "--from",
        "jira",
        &later,
        "--keep-numbers",
    ])?;
    assert!(!out.status.success());
    let summary: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(summary["keyed"].as_u64(), Some(1), "{summary}");
    let refusal = summary["failed"][0]["error"].as_str().unwrap_or_default();
    assert!(refusal.contains("ENG-10"), "{summary}");
    assert_eq!(key(&a.json(&["show", "ENG-11"])?), "ENG-11");
    assert_eq!(
        a.json(&["show", "ENG-10"])?["description"],
        "After the import"
    );
    let before = before + 1;

    // From the other device too (it has the tasks from the feed).
    b.ok(&["sync"])?;
    let other = b.json(&["import", "--from", "jira", &file, "--keep-numbers"])?;
    assert_eq!(other["already_here"].as_u64(), Some(8), "{other}");
    assert_eq!(server_tasks(&server.url, &account.token)?.len(), before);
    Ok(())
}

/// A second token of the account's owner (another device).
fn b_token(server: &TestServer, account: &crate::fixture::Account) -> Result<String> {
    server.token(account, "laptop")
}

#[test]
fn linear_and_github_into_a_project_keep_their_old_keys_resolving() -> Result<()> {
    let (server, account) = TestServer::start("SYN")?;
    let home = tempfile::tempdir()?;
    let a = Cli::new(home.path());
    a.login(&server.url, &account.token)?;

    // Linear's WEB-n numbered in another project: not in a project named WEB, whose own
    // keys would clash with the old ones.
    let linear = fixture("linear.csv");
    let out = a.output(&["import", "--from", "linear", &linear, "--project", "WEB"])?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("would name two tasks"), "{err}");
    let done = a.json(&["import", "--from", "linear", &linear, "--project", "SYN"])?;
    let n = done["imported"].as_u64().unwrap_or_default();
    assert!(n > 5 && done["keyed"].as_u64() == Some(n), "{done}");
    let (status, t) = server_get(&server.url, &account.token, "web-2")?;
    assert_eq!(status, 200, "{t}");
    assert!(key(&t).starts_with("SYN-"), "{t}");
    assert_eq!(t["origin"]["key"], "WEB-2");
    let shown = a.json(&["show", "WEB-2"])?;
    assert_eq!(shown["uuid"], t["uuid"], "{shown}");
    // WEB names those tasks now: no project may take it.
    let made = crate::fixture::create_project(&server.url, &account.token, "WEB");
    assert!(
        made.as_ref()
            .is_err_and(|e| e.to_string().contains("imported from another tracker")),
        "{made:?}"
    );

    // GitHub's #N with kept numbers, in a project of its own: GH-7 is #7, and `#7` resolves
    // as typed, on the server and here.
    let gh = fixture("github.json");
    let kept = a.json(&[
        "import",
        "--from",
        "github",
        &gh,
        "--keep-numbers",
        "--project",
        "GH",
    ])?;
    assert_eq!(kept["keyed"].as_u64(), Some(8), "{kept}");
    let (status, t) = server_get(&server.url, &account.token, "#7")?;
    assert_eq!((status, key(&t)), (200, "GH-7"), "{t}");
    let shown = a.json(&["show", "#7"])?;
    assert_eq!(
        (key(&shown), &shown["origin"]["key"]),
        ("GH-7", &t["origin"]["key"])
    );
    // The same issues imported again elsewhere are the same tasks: nothing new.
    let again = a.json(&["import", "--from", "github", &gh, "--project", "SYN"])?;
    assert_eq!(again["already_here"].as_u64(), Some(8), "{again}");
    assert_eq!(key(&a.json(&["show", "#7"])?), "GH-7");
    Ok(())
}

#[test]
fn only_an_owner_imports_and_a_run_cut_short_goes_on() -> Result<()> {
    let (server, account) = TestServer::start("SYN")?;
    let homes = [tempfile::tempdir()?, tempfile::tempdir()?];
    let [owner, member] = [0, 1].map(|i| Cli::new(homes[i].path()));
    owner.login(&server.url, &account.token)?;
    let invite = owner.json(&["invite"])?;
    let code = invite["code"].as_str().unwrap_or_default().to_owned();
    member.json(&[
        "join",
        "--server",
        &server.url,
        "--code",
        &code,
        "--name",
        "mei",
    ])?;
    let file = fixture("jira.csv");
    let out = member.output(&["import", "--from", "jira", &file, "--keep-numbers"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("only the team's owners"),
        "{err}"
    );
    assert!(member.list()?.is_empty());

    // A large export, its import killed while it syncs, then run again: every issue once,
    // each with its own number.
    let dir = tempfile::tempdir()?;
    let big = dir.path().join("big.csv");
    let mut csv = String::from("Summary,Issue key,Issue id,Status,Assignee,Created\n");
    for n in 1..=3000 {
        csv.push_str(&format!(
            "Issue number {n},BIG-{n},{},To Do,Mei,01/Feb/24 9:00 AM\n",
            20000 + n
        ));
    }
    std::fs::write(&big, csv)?;
    let big = big.display().to_string();
    let mut child = owner
        .command(&["import", "--from", "jira", &big, "--keep-numbers"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    std::thread::sleep(Duration::from_millis(1500));
    let _ = child.kill();
    child.wait()?;
    let done = owner.json(&["import", "--from", "jira", &big, "--keep-numbers"])?;
    assert_eq!(
        (done["imported"].as_u64(), done["keyed"].as_u64()),
        (Some(3000), Some(3000)),
        "{done}"
    );
    let tasks = server_tasks(&server.url, &account.token)?;
    let mut keys: Vec<String> = tasks.iter().filter_map(|t| t.key.clone()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 3000, "each issue once");
    for n in [1, 1500, 3000] {
        let shown = owner.json(&["show", &format!("BIG-{n}")])?;
        assert_eq!(shown["description"], format!("Issue number {n}"));
        assert_eq!(shown["assignee"], "mei", "assignees map to members");
    }
    Ok(())
}
