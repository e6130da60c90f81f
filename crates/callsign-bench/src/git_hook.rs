//! `git-hook` (issue 43): what Callsign's git hooks add to a commit, measured on the real `git`,
//! the real `callsign` binary and its installed hook scripts, beside the commit itself.
//!
//! Each commit is made by git with hooks off (`core.hooksPath=/dev/null`: the baseline, git's
//! own time), then the two hooks git runs on a commit are run as git runs them, in the
//! repository: `commit-msg` on a copy of the message, then `post-commit`; the figure is their
//! time together. Messages cycle through the grammar's forms (closing lists, a smart commit, a
//! linking trailer, a message that names nothing on a branch named by a key, which takes the
//! `Refs:` trailer), each naming tasks the device holds (10,000 of them, imported: the hook's
//! work must not grow with them). Three devices:
//! - **server up**: logged in to a running server that numbered its tasks;
//! - **dead server**: the same after the server is killed (the address refuses connections);
//! - **no server**: a data dir never logged in (its tasks in the local inbox; the keys named
//!   are no project of it, so the hook reads, finds nothing and says so).
//!
//! The hooks never touch the network, so the three should match: the figures show it.
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::server::{self, Server, PREFIX};
use crate::stats::{percentile, Figure};
use crate::Sizes;

/// Tasks the device holds; the messages name the first `TASKS` of them.
const HELD: usize = 10_000;
const TASKS: usize = 60;
/// The target for the hook's time per commit.
const TARGET_MS: f64 = 50.0;

fn run(c: &mut Command) -> Result<String> {
    let o = c.output().with_context(|| format!("{c:?}"))?;
    if !o.status.success() {
        bail!("{c:?}: {} {}", o.status, String::from_utf8_lossy(&o.stderr));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

fn callsign(home: &Path, cwd: &Path, args: &[&str]) -> Result<Command> {
    let mut c = Command::new(server::cli_bin()?);
    c.args(args)
        .current_dir(cwd)
        .env("CALLSIGN_DATA_DIR", home)
        .env_remove("CALLSIGN_TOKEN")
        .env_remove("CALLSIGN_LOG");
    Ok(c)
}

/// Git's environment here: no user or system config, a fixed author.
const GIT_ENV: [(&str, &str); 6] = [
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ("GIT_AUTHOR_NAME", "Bench"),
    ("GIT_AUTHOR_EMAIL", "bench@example.org"),
    ("GIT_COMMITTER_NAME", "Bench"),
    ("GIT_COMMITTER_EMAIL", "bench@example.org"),
];

fn git(repo: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("git");
    c.args(args).current_dir(repo).envs(GIT_ENV);
    c
}

/// A hook script run as git runs it: in the repository, with the same environment.
fn hook(repo: &Path, script: &Path) -> Command {
    let mut c = Command::new(script);
    c.current_dir(repo).envs(GIT_ENV);
    c
}

/// The i-th message: the grammar's forms in turn, over the tasks `BEN-1..=TASKS`.
fn message(i: usize) -> String {
    const P: &str = PREFIX;
    let k = |d: usize| (i + d) % TASKS + 1;
    match i % 5 {
        0 => format!("Fixes {P}-{}", k(0)),
        1 => format!("Closes {P}-{}, {P}-{} and {P}-{}", k(0), k(1), k(2)),
        2 => format!("Tidy the form\n\nThe longer story.\n\nRefs: {P}-{}", k(0)),
        3 => format!("{P}-{} #comment looked at it", k(0)),
        _ => "Tidy the form (names no task: the branch gives Refs)".to_owned(),
    }
}

/// A repository with the hooks installed for the device at `home`, on a branch named by a key.
fn repo(home: &Path) -> Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix("callsign-bench-git-")
        .tempdir()?;
    run(&mut git(dir.path(), &["init", "-q", "-b", "main"]))?;
    run(&mut git(
        dir.path(),
        &[
            "switch",
            "-q",
            "-c",
            &format!("{}-1-the-first-task", PREFIX.to_ascii_lowercase()),
        ],
    ))?;
    run(&mut git(
        dir.path(),
        &["commit", "-q", "--allow-empty", "-m", "Start"],
    ))?;
    run(&mut callsign(home, dir.path(), &["git", "install"])?)?;
    Ok(dir)
}

/// `commits` commits: (git's own ms, the hooks' ms) each.
fn commits(home: &Path, commits: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let r = repo(home)?;
    let dir = r.path();
    let hooks = dir.join(".git/hooks");
    let msg = dir.join(".git/BENCH_MSG");
    let (mut plain, mut hooked) = (Vec::new(), Vec::new());
    for i in 0..commits {
        std::fs::write(&msg, message(i))?;
        let t = Instant::now();
        let plain_commit = [
            "-c",
            "core.hooksPath=/dev/null",
            "commit",
            "-q",
            "--allow-empty",
        ];
        run(git(dir, &plain_commit).arg("-F").arg(&msg))?;
        plain.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        run(hook(dir, &hooks.join("commit-msg")).arg(&msg))?;
        run(&mut hook(dir, &hooks.join("post-commit")))?;
        hooked.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok((plain, hooked))
}

/// A device's data dir holding `HELD` tasks; logged in to `server` and synced (so its tasks
/// have keys), or with no server at all.
fn device(prefix: &str, server: Option<&Server>) -> Result<tempfile::TempDir> {
    let home = tempfile::Builder::new().prefix(prefix).tempdir()?;
    let here = std::env::temp_dir();
    if let Some(s) = server {
        let mut login = callsign(home.path(), &here, &["login", "--server", &s.url])?;
        run(login.env("CALLSIGN_TOKEN", &s.token))?;
    }
    // One `import` of HELD lines: a device with a working history, not a fresh one.
    let lines: String = (1..=HELD).map(|i| format!("Task {i}\n")).collect();
    let mut import = callsign(home.path(), &here, &["import"])?;
    let mut child = import
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()?;
    child
        .stdin
        .take()
        .context("stdin")?
        .write_all(lines.as_bytes())?;
    if !child.wait()?.success() {
        bail!("callsign import of {HELD} tasks failed");
    }
    if server.is_some() {
        run(&mut callsign(
            home.path(),
            &here,
            &["sync", "--timeout", "300"],
        )?)?;
    }
    Ok(home)
}

pub async fn section(z: &Sizes) -> Result<Vec<Figure>> {
    let n = z.git_commits;
    let mut server = Some(Server::start()?);
    let up = device("callsign-bench-git-up-", server.as_ref())?;
    let none = device("callsign-bench-git-none-", None)?;
    let mut base = Vec::new();
    let mut figures = Vec::new();
    for (label, home) in [
        ("server up", up.path()),
        ("dead server", up.path()),
        ("no server", none.path()),
    ] {
        if label == "dead server" {
            // Killed: its address refuses connections.
            drop(server.take());
        }
        let mut p99s = Vec::new();
        for _ in 0..z.runs {
            let (plain, hooked) = commits(home, n)?;
            base.push(percentile(&plain, 50.0));
            p99s.push(percentile(&hooked, 99.0));
        }
        figures.push((label, p99s));
    }
    let baseline = format!("git commit without hooks: p50 {:.1} ms", crate::med(&base));
    let target = format!("p99 ≤ {TARGET_MS:.0} ms");
    Ok(figures
        .into_iter()
        .map(|(label, p99s)| {
            let name = format!("git hooks per commit p99 ({n} commits), {label}");
            Figure::new(&name, "ms", p99s)
                .baseline(baseline.clone())
                .target(target.clone(), |x| x <= TARGET_MS)
        })
        .collect())
}
