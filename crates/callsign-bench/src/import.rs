//! `import` (issue 42): a 10,000-issue Jira export imported with its keys kept, through the real
//! `callsign` binary against the real server on 127.0.0.1, beside capturing as many tasks one
//! `callsign add` process each; with where the import's time goes.
//!
//! Each run, each on a fresh server (fresh data dir, the account's owner plus the members of
//! [`jira_export::TEAM`]) and a fresh CLI data dir logged in to it:
//! - **import**: `callsign --json import --from jira FILE --keep-numbers`, from spawn to exit 0;
//!   checked: its summary says every task is keyed, the server's current `ENG` numbers are
//!   exactly the file's, and a few `GET /v1/tasks/ENG-n` answer with the right parent (a gap's
//!   number is 404).
//! - **the baseline**: `adds` tasks of the same file (title, description, labels), one
//!   `callsign add` process each, then one `callsign sync`; checked: the server numbered them
//!   all. Fewer than the import's count when `adds` is smaller: the row says so and what that
//!   rate makes of the full count.
//! - **where the time goes**: the same file in this process ([`import_phases`]).
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;

use crate::import_phases::{self, Phases};
use crate::jira_export::{self, Export, PREFIX};
use crate::server::{self, Server};
use crate::stats::Figure;
use crate::{med, Sizes};

/// One run's seconds.
struct Run {
    /// The `callsign import` process.
    cli: f64,
    /// `adds` `callsign add` processes, and the one `callsign sync` after them.
    adds: f64,
    add_sync: f64,
    phases: Phases,
}

/// A fresh server with the team, and a fresh CLI data dir logged in to it.
struct Setup {
    server: Server,
    home: tempfile::TempDir,
}

/// A fresh server whose account has the members of [`jira_export::TEAM`] besides its owner.
pub fn team_server() -> Result<Server> {
    let server = Server::start()?;
    for name in jira_export::TEAM {
        server.add_member(name)?;
    }
    Ok(server)
}

fn setup() -> Result<Setup> {
    let server = team_server()?;
    let home = tempfile::Builder::new()
        .prefix("callsign-bench-cli-")
        .tempdir()?;
    let mut login = cli(
        home.path(),
        &["login", "--server", &server.url, "--device", "bench"],
    )?;
    ok(login.env("CALLSIGN_TOKEN", &server.token))?;
    Ok(Setup { server, home })
}

/// `callsign ARGS` on the data dir `home`.
fn cli(home: &Path, args: &[&str]) -> Result<Command> {
    let mut c = Command::new(server::cli_bin()?);
    c.args(args)
        .env("CALLSIGN_DATA_DIR", home)
        .env_remove("CALLSIGN_TOKEN")
        .env_remove("CALLSIGN_LOG");
    Ok(c)
}

/// Runs a `callsign` command that must exit 0; its stdout.
fn ok(c: &mut Command) -> Result<Vec<u8>> {
    let o = c.output()?;
    if !o.status.success() {
        bail!(
            "{:?}: {} {}",
            c.get_args().take(3).collect::<Vec<_>>(),
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    Ok(o.stdout)
}

/// `$@` is the command; it is killed when the pipe on the shell's stdin closes (this process
/// ended first), else the shell exits with its status. A background command of a
/// non-interactive shell reads `/dev/null`, so the watcher reads the pipe through fd 3.
const GUARD: &str = r#"exec 3<&0
"$@" 3<&- &
pid=$!
( read -r _ <&3; kill -KILL "$pid" ) >/dev/null 2>&1 &
watch=$!
wait "$pid"
rc=$?
kill "$watch" 2>/dev/null
exit "$rc""#;

/// As [`ok`] on `callsign ARGS`, run under [`GUARD`]: a long command (the import, up to its
/// `--timeout`) does not outlive this process when it is killed.
fn guarded(home: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let mut child = Command::new("sh")
        .args(["-c", GUARD, "sh"])
        .arg(server::cli_bin()?)
        .args(args)
        .env("CALLSIGN_DATA_DIR", home)
        .env_remove("CALLSIGN_TOKEN")
        .env_remove("CALLSIGN_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Held open until the command has ended (`wait_with_output` would close it first).
    let pipe = child.stdin.take();
    let o = child.wait_with_output()?;
    drop(pipe);
    if !o.status.success() {
        bail!(
            "callsign {:?}: {} {}",
            args.iter().take(2).collect::<Vec<_>>(),
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    Ok(o.stdout)
}

/// The import through the CLI: seconds from spawn to exit, every task checked keyed.
async fn cli_import(e: &Export, file: &Path) -> Result<f64> {
    let s = setup()?;
    let path = file.to_str().context("a UTF-8 temp path")?;
    let args = [
        "--json",
        "import",
        "--from",
        "jira",
        path,
        "--keep-numbers",
        "--timeout",
        "600",
    ];
    let t = Instant::now();
    let out = guarded(s.home.path(), &args)?;
    let secs = t.elapsed().as_secs_f64();
    let summary: Value = serde_json::from_slice(&out)?;
    let n = e.issues.len() as u64;
    ensure!(
        summary["imported"].as_u64() == Some(n)
            && summary["keyed"].as_u64() == Some(n)
            && summary["waiting"].as_u64() == Some(0)
            && summary["failed"].as_array().is_some_and(Vec::is_empty),
        "the import's summary: {summary}"
    );
    check_server(&s.server, e).await?;
    Ok(secs)
}

/// The server holds exactly the file's numbers in `ENG`, and a few of its tasks by key, each
/// with its parent.
async fn check_server(s: &Server, e: &Export) -> Result<()> {
    let want: Vec<i64> = e.issues.iter().map(|i| i.number as i64).collect();
    let have = server::numbers_of(s, PREFIX).await?;
    ensure!(
        have == want,
        "the server's {PREFIX} numbers are not the file's ({} of {})",
        have.len(),
        want.len()
    );
    let http = reqwest::Client::new();
    let get = |key: String| {
        let req = http
            .get(format!("{}/v1/tasks/{key}", s.url))
            .bearer_auth(&s.token);
        async move {
            let resp = req.send().await?;
            let status = resp.status().as_u16();
            let v: Value = resp.json().await.unwrap_or_default();
            anyhow::Ok((status, v))
        }
    };
    let last = e.issues.len() - 1;
    let child = e.issues.iter().rposition(|i| i.kind == "Sub-task");
    for at in [0, last / 2, last].into_iter().chain(child) {
        let i = &e.issues[at];
        let (status, t) = get(i.key()).await?;
        ensure!(status == 200 && t["key"] == i.key(), "GET {}: {t}", i.key());
        if let Some(p) = i.parent {
            let (_, parent) = get(e.issues[p].key()).await?;
            ensure!(
                t["parent"] == parent["uuid"],
                "{}'s parent is not {}",
                i.key(),
                e.issues[p].key()
            );
        }
    }
    if let Some(gap) = (1..e.issues[last].number).find(|n| !want.contains(&(*n as i64))) {
        let (status, _) = get(format!("{PREFIX}-{gap}")).await?;
        ensure!(status == 404, "{PREFIX}-{gap}, never in the file: {status}");
    }
    Ok(())
}

/// The baseline: `adds` tasks of the file, one `callsign add` process each, then one sync;
/// (seconds of the adds, seconds of the sync), every one checked numbered on the server.
async fn one_add_each(e: &Export, adds: usize) -> Result<(f64, f64)> {
    let s = setup()?;
    let t = Instant::now();
    for i in e.issues.iter().take(adds) {
        let mut args = vec!["add", &i.title, "--project", server::PREFIX];
        if !i.description.is_empty() {
            args.extend(["--notes", &i.description]);
        }
        for l in &i.labels {
            args.extend(["--tag", l]);
        }
        ok(&mut cli(s.home.path(), &args)?)?;
    }
    let adds_secs = t.elapsed().as_secs_f64();
    let mut sync = cli(s.home.path(), &["sync", "--timeout", "600"])?;
    let t = Instant::now();
    ok(&mut sync)?;
    let sync_secs = t.elapsed().as_secs_f64();
    let numbered = server::numbers_of(&s.server, server::PREFIX).await?.len();
    ensure!(numbered == adds, "{numbered} of {adds} adds numbered");
    Ok((adds_secs, sync_secs))
}

/// The section's rows over `z.runs` runs.
pub async fn section(z: &Sizes) -> Result<Vec<Figure>> {
    let e = jira_export::export(z.import);
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("jira.csv");
    std::fs::write(&file, &e.csv)?;
    let adds = z.import_adds.min(z.import);
    let mut runs = Vec::with_capacity(z.runs);
    for _ in 0..z.runs {
        let cli = cli_import(&e, &file).await?;
        let (adds_secs, add_sync) = one_add_each(&e, adds).await?;
        runs.push(Run {
            cli,
            adds: adds_secs,
            add_sync,
            phases: import_phases::measure(&e).await?,
        });
    }
    let n = z.import;
    let k = n as f64;
    let kib = e.csv.len() as f64 / 1024.0;
    let pick = |f: &dyn Fn(&Run) -> f64| runs.iter().map(f).collect::<Vec<_>>();
    let per_add = med(&pick(&|r| (r.adds + r.add_sync) / adds as f64));
    let add_sync = med(&pick(&|r| r.add_sync));
    let sample = if adds == n {
        format!("{n} tasks one `callsign add` process each, then one `callsign sync`")
    } else {
        format!(
            "one `callsign add` process a task: {adds} adds + one sync timed, {:.1} ms a \
             task, × {n} = {:.0} s (extrapolated)",
            per_add * 1e3,
            per_add * k
        )
    };
    let cli = pick(&|r| r.cli);
    let mut out = vec![
        Figure::new(
            &format!(
                "`callsign import --from jira --keep-numbers`, {n} issues ({kib:.0} KiB), \
                 until every task is keyed"
            ),
            "s",
            cli.clone(),
        )
        .baseline(format!("{sample} ({:.1}× faster)", per_add * k / med(&cli)))
        .target("≤ 15 s", |m| m <= 15.0),
        Figure::new("import: time per task", "ms", pick(&|r| r.cli * 1e3 / k)).baseline(format!(
            "{:.1} ms a task one `add` each ({:.1} ms of it the one sync of {adds})",
            per_add * 1e3,
            add_sync * 1e3 / adds as f64
        )),
    ];
    let phases: Vec<Phases> = runs.into_iter().map(|r| r.phases).collect();
    out.extend(import_phases::figures(n, &phases, &cli));
    Ok(out)
}
