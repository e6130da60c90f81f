//! The real Taskwarrior 3.5 `task` binary syncing with the real server, the Callsign side the
//! real `callsign` CLI: the flow of `taskwarrior.rs`, driven through Taskwarrior's own command
//! line instead of TaskChampion's library.
//!
//! Runs when `CALLSIGN_TASK3` names a `task` to run (`scripts/taskwarrior3.sh` fetches one from
//! Debian unstable and prints its path; `scripts/test.sh` sets the variable when it can);
//! otherwise the test says so and passes.
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;

use crate::cli::Cli;
use crate::fixture::{server_tasks, TestServer};

/// The environment variable that names the Taskwarrior 3 binary (or wrapper) to run.
const TASK3_ENV: &str = "CALLSIGN_TASK3";

/// How long one `task` command may take.
const TASK_LIMIT: Duration = Duration::from_secs(60);

/// The real `task` on a throwaway TASKRC and TASKDATA, set up to sync with one server.
struct Task3 {
    bin: PathBuf,
    _dir: tempfile::TempDir,
    rc: PathBuf,
    data: PathBuf,
}

impl Task3 {
    /// A fresh Taskwarrior: its rc file holds the sync settings, the `key` UDA and a `keyed`
    /// report that shows it.
    fn new(bin: &Path, url: &str, client_id: uuid::Uuid, secret: &str) -> Result<Task3> {
        let dir = tempfile::tempdir()?;
        let rc = dir.path().join("taskrc");
        let data = dir.path().join("data");
        std::fs::create_dir(&data)?;
        let settings = [
            "confirmation=off".to_owned(),
            "news.version=3.5.0".to_owned(),
            "color=off".to_owned(),
            format!("sync.server.url={url}"),
            format!("sync.server.client_id={client_id}"),
            format!("sync.encryption_secret={secret}"),
            "uda.key.type=string".to_owned(),
            "uda.key.label=Key".to_owned(),
            "report.keyed.description=Tasks with their Callsign keys".to_owned(),
            "report.keyed.columns=id,key,project,status,description".to_owned(),
            "report.keyed.labels=ID,Key,Project,Status,Description".to_owned(),
            "report.keyed.filter=status:pending or status:completed".to_owned(),
            "report.keyed.sort=entry+".to_owned(),
        ];
        std::fs::write(&rc, settings.join("\n") + "\n")?;
        Ok(Task3 {
            bin: bin.to_owned(),
            _dir: dir,
            rc,
            data,
        })
    }

    /// `task ARGS…` (with `rc.confirmation=off rc.news.version=3.5.0`), which must succeed
    /// within [`TASK_LIMIT`]; returns stdout.
    fn run(&self, args: &[&str]) -> Result<String> {
        let mut child = Command::new(&self.bin)
            .args(["rc.confirmation=off", "rc.news.version=3.5.0"])
            .args(args)
            .env("TASKRC", &self.rc)
            .env("TASKDATA", &self.data)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("running {} ({TASK3_ENV})", self.bin.display()))?;
        let readers = [
            read_all(child.stdout.take().expect("piped stdout")),
            read_all(child.stderr.take().expect("piped stderr")),
        ];
        let end = Instant::now() + TASK_LIMIT;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if Instant::now() > end {
                let _ = child.kill();
                let _ = child.wait();
                bail!("task {args:?} did not finish within {TASK_LIMIT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let [out, err] = readers.map(|r| r.join().unwrap_or_default());
        if !status.success() {
            bail!("task {args:?} failed ({status}):\nstdout: {out}\nstderr: {err}");
        }
        Ok(out)
    }

    /// `task sync`.
    fn sync(&self) -> Result<()> {
        let out = self.run(&["sync"]).context("task sync")?;
        eprintln!("task sync: {}", out.trim());
        Ok(())
    }

    /// `task add ARGS…`.
    fn add(&self, args: &[&str]) -> Result<()> {
        let mut all = vec!["add"];
        all.extend_from_slice(args);
        self.run(&all)?;
        Ok(())
    }

    /// `task export`: every task as Taskwarrior holds it.
    fn export(&self) -> Result<Vec<Value>> {
        match serde_json::from_str(&self.run(&["rc.verbose=nothing", "export"])?)? {
            Value::Array(v) => Ok(v),
            other => bail!("task export is not an array: {other}"),
        }
    }

    /// The exported task with `uuid`.
    fn task(&self, uuid: &str) -> Result<Value> {
        self.export()?
            .into_iter()
            .find(|t| t["uuid"] == uuid)
            .ok_or_else(|| anyhow!("task {uuid} is not in Taskwarrior"))
    }
}

/// Reads a pipe to its end on a thread of its own (so a full pipe cannot stall the child).
fn read_all(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// A field of an exported task, as a string ("" if absent).
fn field<'a>(task: &'a Value, name: &str) -> &'a str {
    task[name].as_str().unwrap_or_default()
}

#[test]
fn the_real_task_binary_gets_keys_in_one_sync_and_edits_flow_both_ways() -> Result<()> {
    let Some(bin) = std::env::var_os(TASK3_ENV).filter(|v| !v.is_empty()) else {
        eprintln!(
            "{TASK3_ENV} is unset: skipping the real-Taskwarrior test \
             (CALLSIGN_TASK3=$(bash scripts/taskwarrior3.sh) runs it)"
        );
        return Ok(());
    };
    let (mut server, account) = TestServer::prepare("SYN")?;
    let (client_id, secret) = server.link_taskwarrior(&account)?;
    server.serve(0)?;
    let task = Task3::new(Path::new(&bin), &server.url, client_id, &secret)?;
    let version = task.run(&["_version"])?;
    eprintln!("{TASK3_ENV}: Taskwarrior {}", version.trim());
    let cli_dir = tempfile::tempdir()?;
    let cli = Cli::new(cli_dir.path());
    cli.login(&server.url, &account.token)?;

    // Created in Taskwarrior, keyed by one `task sync`.
    task.add(&["Write the release notes", "project:SYN"])?;
    task.add(&["Book the venue"])?;
    task.sync()?;
    let tasks = task.export()?;
    assert_eq!(tasks.len(), 2, "two tasks in Taskwarrior: {tasks:?}");
    let by_description = |d: &str| {
        tasks
            .iter()
            .find(|t| t["description"] == d)
            .ok_or_else(|| anyhow!("no task {d:?} in {tasks:?}"))
    };
    let (a, b) = (
        by_description("Write the release notes")?,
        by_description("Book the venue")?,
    );
    assert_eq!(field(a, "project"), "SYN");
    let (ua, ub) = (field(a, "uuid").to_owned(), field(b, "uuid").to_owned());
    let (ka, kb) = (field(a, "key").to_owned(), field(b, "key").to_owned());
    let numbers: BTreeSet<u64> = [&ka, &kb]
        .iter()
        .map(|k| {
            k.strip_prefix("SYN-")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| anyhow!("key {k:?} is not SYN-N"))
        })
        .collect::<Result<_>>()?;
    assert_eq!(numbers, BTreeSet::from([1, 2]), "distinct keys: {ka} {kb}");

    // The CLI sees them with the same keys.
    cli.ok(&["sync"])?;
    let shown = cli.json(&["show", &ka])?;
    assert_eq!(shown["description"], "Write the release notes");
    assert_eq!(shown["uuid"], ua);
    assert_eq!(cli.json(&["show", &kb])?["uuid"], ub);

    // Created by the CLI, it reaches Taskwarrior with its key.
    let c = cli.add("Send the invoices", &[])?;
    cli.ok(&["sync"])?;
    let kc = cli.json(&["show", &c])?["key"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(kc, "SYN-3");
    task.sync()?;
    let tc = task.task(&c)?;
    assert_eq!(
        (field(&tc, "description"), field(&tc, "key")),
        ("Send the invoices", kc.as_str())
    );

    // `task UUID modify` reaches the CLI.
    task.run(&[&ua, "modify", "Write the release notes for 2.0"])?;
    task.sync()?;
    cli.ok(&["sync"])?;
    assert_eq!(
        cli.json(&["show", &ka])?["description"],
        "Write the release notes for 2.0"
    );

    // `callsign done` reaches Taskwarrior.
    cli.ok(&["done", &kc])?;
    cli.ok(&["sync"])?;
    task.sync()?;
    assert_eq!(field(&task.task(&c)?, "status"), "completed");

    // `key` is the server's: a Taskwarrior edit of it is put back.
    task.run(&[&ub, "modify", "key:HACK-1"])?;
    task.sync()?;
    assert_eq!(field(&task.task(&ub)?, "key"), kb);
    assert_eq!(server_tasks(&server.url, &account.token)?.len(), 3);

    eprintln!("task keyed:\n{}", task.run(&["keyed"])?);
    Ok(())
}

/// Issue 42: what the real Taskwarrior 3.5 exports (`task export`) is imported with the CLI:
/// each task keeps its UUID, its status, due date, priority and tags, its project as a tag and
/// its annotations in its notes; a second import makes nothing.
#[test]
fn the_real_task_export_is_imported_keeping_uuids_and_fields() -> Result<()> {
    let Some(bin) = std::env::var_os(TASK3_ENV).filter(|v| !v.is_empty()) else {
        eprintln!("{TASK3_ENV} is unset: skipping the real-Taskwarrior import test");
        return Ok(());
    };
    let (server, account) = TestServer::start("HOME")?;
    // Never synced: its sync settings only fill the rc file.
    let task = Task3::new(
        Path::new(&bin),
        "http://127.0.0.1:9",
        uuid::Uuid::nil(),
        "x",
    )?;
    task.add(&[
        "Write the report",
        "project:Work.Reports",
        "due:2025-12-01",
        "priority:H",
        "+writing",
    ])?;
    task.add(&["Call the plumber", "+home"])?;
    task.add(&["An idea dropped"])?;
    task.run(&["3", "delete"])?;
    task.run(&["2", "done"])?;
    task.run(&["1", "annotate", "Draft is in the shared folder"])?;
    let exported = task.export()?;
    assert_eq!(exported.len(), 3, "{exported:?}");
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("export.json");
    std::fs::write(&file, task.run(&["rc.verbose=nothing", "export"])?)?;
    let file = file.display().to_string();

    let cli_dir = tempfile::tempdir()?;
    let cli = Cli::new(cli_dir.path());
    cli.login(&server.url, &account.token)?;
    let done = cli.json(&[
        "import",
        "--from",
        "taskwarrior",
        &file,
        "--project",
        "HOME",
    ])?;
    assert_eq!(
        (done["imported"].as_u64(), done["keyed"].as_u64()),
        (Some(3), Some(3)),
        "{done}"
    );
    let on_server = server_tasks(&server.url, &account.token)?;
    for t in &exported {
        let uuid = field(t, "uuid");
        let s = on_server
            .iter()
            .find(|s| s.uuid.to_string() == uuid)
            .ok_or_else(|| anyhow!("{uuid} was not imported with its UUID"))?;
        assert_eq!(s.description, field(t, "description"));
        assert_eq!(s.status.as_str(), field(t, "status"), "{s:?}");
        assert!(s.key.as_deref().is_some_and(|k| k.starts_with("HOME-")));
        assert_eq!(
            s.origin.as_ref().map(|o| o.tracker.as_str()),
            Some("taskwarrior")
        );
    }
    let written = exported
        .iter()
        .find(|t| field(t, "description") == "Write the report")
        .ok_or_else(|| anyhow!("no report task in {exported:?}"))?;
    let report = cli.json(&["show", field(written, "uuid")])?;
    let tags: BTreeSet<&str> = report["tags"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tags.contains("writing") && tags.contains("project-work.reports"),
        "{report}"
    );
    assert_eq!(report["priority"], "H", "{report}");
    assert!(
        report["due"]
            .as_str()
            .is_some_and(|d| d.starts_with("2025-1")),
        "{report}"
    );
    assert!(
        report["notes"]
            .as_str()
            .is_some_and(|n| n.contains("Draft is in the shared folder")),
        "{report}"
    );
    // Again: nothing new.
    let again = cli.json(&[
        "import",
        "--from",
        "taskwarrior",
        &file,
        "--project",
        "HOME",
    ])?;
    assert_eq!(again["already_here"].as_u64(), Some(3), "{again}");
    assert_eq!(server_tasks(&server.url, &account.token)?.len(), 3);
    Ok(())
}
