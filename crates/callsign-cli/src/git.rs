//! `callsign branch` and `callsign git install|uninstall|hook` (docs/CLI.md "Git"): branches
//! named by keys, and the hooks through which commits act on tasks. Git does the git work
//! (`git` on the PATH, in the current directory); the engine reads and records
//! ([`callsign_sync::Engine::record_commits`]).
//!
//! A hook never stops or slows a commit on Callsign's account: the script runs the hook that was
//! there before (kept beside it as `HOOK.pre-callsign`, and its outcome is the script's), then
//! `callsign git hook HOOK`, which works on the local store only (the change syncs like any
//! other) and turns every failure of its own into one line on stderr and exit 0.
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};
use callsign_core::git::{branch_name, key_in_branch, read_message};
use callsign_core::{Prefix, TaskKey};
use callsign_sync::{Commit, CommitReport, Engine};

/// The hooks `install` puts in place.
pub const HOOKS: [&str; 4] = ["commit-msg", "post-commit", "post-merge", "post-rewrite"];
/// The line that marks a hook as Callsign's.
const MARK: &str = "# callsign git hook";
/// Where a hook that was there before is kept, beside ours.
const CHAINED: &str = ".pre-callsign";
/// The most commits one merge or rebase hands to the engine (a pull of years of history is
/// not read commit by commit on someone's `git pull`).
const MAX_COMMITS: usize = 500;

/// Runs git in the current directory; its output, or its first line of complaint.
fn git(args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("running git (is it installed?)")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().next().unwrap_or("").trim();
        let line = line.strip_prefix("fatal: ").unwrap_or(line);
        bail!("git {}: {}", args.first().unwrap_or(&""), line);
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .trim_end_matches('\n')
        .to_owned())
}

/// The repository's hooks directory (`core.hooksPath` when set), made if missing.
fn hooks_dir() -> Result<PathBuf> {
    let dir = git(&["rev-parse", "--path-format=absolute", "--git-path", "hooks"])
        .map_err(|e| anyhow!("not in a git repository? ({e})"))?;
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("making {}", dir.display()))?;
    Ok(dir)
}

/// `'…'` for sh.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The script of one hook: the earlier hook first, then Callsign, whose failure never counts.
fn script(hook: &str, exe: &Path, data_dir: Option<&Path>) -> String {
    let mut s = format!(
        "#!/bin/sh\n{MARK} ({hook}): installed by `callsign git install`, removed by \
         `callsign git uninstall`.\n# The hook that was here before runs first, as \
         {hook}{CHAINED}; Callsign never fails a commit.\n"
    );
    s += &format!(
        "CALLSIGN={}\n[ -x \"$CALLSIGN\" ] || CALLSIGN=callsign\n",
        quoted(&exe.to_string_lossy())
    );
    if let Some(d) = data_dir {
        s += &format!(
            "CALLSIGN_DATA_DIR={}\nexport CALLSIGN_DATA_DIR\n",
            quoted(&d.to_string_lossy())
        );
    }
    s += &format!("chained=\"$0{CHAINED}\"\n");
    s += &match hook {
        // Its verdict on the message is the earlier hook's to give.
        "commit-msg" => format!(
            "if [ -x \"$chained\" ]; then \"$chained\" \"$@\" || exit $?; fi\n\
             \"$CALLSIGN\" git hook {hook} \"$@\" </dev/null || true\nexit 0\n"
        ),
        // Git hands the rewritten commits on stdin: both read it.
        "post-rewrite" => format!(
            "input=$(cat)\nstatus=0\n\
             if [ -x \"$chained\" ]; then printf '%s\\n' \"$input\" | \"$chained\" \"$@\"; \
             status=$?; fi\n\
             printf '%s\\n' \"$input\" | \"$CALLSIGN\" git hook {hook} \"$@\" || true\n\
             exit $status\n"
        ),
        _ => format!(
            "status=0\nif [ -x \"$chained\" ]; then \"$chained\" \"$@\"; status=$?; fi\n\
             \"$CALLSIGN\" git hook {hook} \"$@\" </dev/null || true\nexit $status\n"
        ),
    };
    s
}

fn is_ours(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .is_ok_and(|s| s.lines().nth(1).is_some_and(|l| l.starts_with(MARK)))
}

fn write_executable(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", path.display()))?;
    }
    Ok(())
}

/// What `install` or `uninstall` did to one hook.
#[derive(Debug, serde::Serialize)]
pub struct HookChange {
    pub hook: &'static str,
    /// The path of the hook.
    pub path: PathBuf,
    /// The hook that was there before, now run first (install) or back in place (uninstall).
    pub chained: bool,
}

/// Installs the hooks in the current repository (again: brings them up to date). A hook that
/// is not Callsign's is kept as `HOOK.pre-callsign` and runs first.
pub fn install(data_dir: Option<&Path>) -> Result<(PathBuf, Vec<HookChange>)> {
    let dir = hooks_dir()?;
    let exe = std::env::current_exe().context("finding the callsign binary")?;
    let mut out = Vec::new();
    for hook in HOOKS {
        let path = dir.join(hook);
        let chained_path = dir.join(format!("{hook}{CHAINED}"));
        if path.exists() && !is_ours(&path) {
            if chained_path.exists() {
                bail!(
                    "{} and {} are both there and neither is Callsign's: move one away first",
                    path.display(),
                    chained_path.display()
                );
            }
            std::fs::rename(&path, &chained_path).with_context(|| {
                format!("keeping {} as {}", path.display(), chained_path.display())
            })?;
        }
        write_executable(&path, &script(hook, &exe, data_dir))?;
        out.push(HookChange {
            hook,
            chained: chained_path.exists(),
            path,
        });
    }
    Ok((dir, out))
}

/// Removes Callsign's hooks from the current repository and puts back the ones they chained.
pub fn uninstall() -> Result<(PathBuf, Vec<HookChange>)> {
    let dir = hooks_dir()?;
    let mut out = Vec::new();
    for hook in HOOKS {
        let path = dir.join(hook);
        if !is_ours(&path) {
            continue;
        }
        std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        let chained_path = dir.join(format!("{hook}{CHAINED}"));
        let chained = chained_path.exists();
        if chained {
            std::fs::rename(&chained_path, &path)
                .with_context(|| format!("putting back {}", path.display()))?;
        }
        out.push(HookChange {
            hook,
            path,
            chained,
        });
    }
    Ok((dir, out))
}

/// The branch name for a task (it must have its key: branches are named by keys).
pub fn branch_for(engine: &Engine, task_ref: &str) -> Result<String> {
    let task = engine.get(task_ref)?;
    let key = task.key.as_deref().ok_or_else(|| {
        let why = if task.is_local() {
            "it waits in this device's inbox for a project (`callsign inbox --send-to PFX`)"
        } else {
            "it is provisional until the server numbers it (run `callsign sync`)"
        };
        anyhow!(
            "{} has no key yet, and a branch is named by its key: {why}",
            task.label()
        )
    })?;
    let key = TaskKey::parse(key).map_err(|e| anyhow!("{e}"))?;
    Ok(branch_name(&key, &task.description))
}

/// Creates the branch and switches to it (or switches to it, if it is there already).
/// Returns whether it was made.
pub fn switch_to(name: &str) -> Result<bool> {
    let exists = git(&[
        "rev-parse",
        "--verify",
        "--quiet",
        &format!("refs/heads/{name}"),
    ])
    .is_ok();
    let args: &[&str] = if exists {
        &["switch", name]
    } else {
        &["switch", "-c", name]
    };
    git(args)?;
    Ok(!exists)
}

/// `callsign git hook HOOK ARGS`: what each hook does. Errors are the caller's to turn into
/// one line.
pub fn hook(engine: &Engine, name: &str, args: &[String]) -> Result<()> {
    match name {
        "commit-msg" => {
            let file = args.first().ok_or_else(|| anyhow!("no message file"))?;
            refs_trailer(engine, Path::new(file))
        }
        "post-commit" => record(engine, &commits(&["-1", "HEAD"])?, |_| None),
        "post-merge" => {
            // What the merge brought in; without ORIG_HEAD, the merge commit alone.
            let max = format!("--max-count={MAX_COMMITS}");
            let mut found =
                commits(&[&max, "ORIG_HEAD..HEAD"]).or_else(|_| commits(&["-1", "HEAD"]))?;
            found.reverse(); // oldest first
            record(engine, &found, |_| None)
        }
        "post-rewrite" => {
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .context("reading the rewritten commits")?;
            let pairs: Vec<(&str, &str)> = input
                .lines()
                .filter_map(|l| {
                    let mut it = l.split_whitespace();
                    Some((it.next()?, it.next()?))
                })
                .filter(|(old, new)| old != new)
                .take(MAX_COMMITS)
                .collect();
            if pairs.is_empty() {
                return Ok(());
            }
            let mut spec = vec!["--no-walk=unsorted"];
            spec.extend(pairs.iter().map(|(_, new)| *new));
            let recorded = commits(&spec).and_then(|rewritten| {
                record(engine, &rewritten, |c| {
                    let pair = pairs.iter().find(|(_, new)| *new == c.hash);
                    pair.map(|(old, _)| *old)
                })
            });
            // Always: the old commits are gone from the history, so from the tasks.
            for (old, _) in &pairs {
                if let Err(e) = engine.unlink_commit(old) {
                    eprintln!("callsign: {}: {e}", &old[..old.len().min(7)]);
                }
            }
            recorded
        }
        other => bail!("no such hook: {other} (Callsign has {})", HOOKS.join(", ")),
    }
}

/// Acts on `commits` in order (`from`: the commit a rewritten one was made from) and says what
/// each did.
fn record<'a>(
    engine: &Engine,
    commits: &[Commit],
    from: impl Fn(&Commit) -> Option<&'a str>,
) -> Result<()> {
    for (c, r) in commits.iter().zip(engine.record_commits(commits, from)?) {
        say(c, &r);
    }
    Ok(())
}

/// The commits `git log ARGS` lists.
fn commits(args: &[&str]) -> Result<Vec<Commit>> {
    // Signatures shown (`log.showSignature`) would come before each record.
    let mut full = vec![
        "-c",
        "log.showSignature=false",
        "log",
        "--format=%H%x00%an <%ae>%x00%aI%x00%B%x1e",
    ];
    full.extend_from_slice(args);
    let text = git(&full)?;
    let mut out = Vec::new();
    for record in text.split('\x1e') {
        let mut f = record.trim_start_matches('\n').splitn(4, '\0');
        let (Some(hash), Some(author), Some(at), Some(message)) =
            (f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let at = chrono::DateTime::parse_from_rfc3339(at)
            .with_context(|| format!("the date of {hash}: {at:?}"))?;
        out.push(Commit {
            hash: hash.to_owned(),
            author: author.to_owned(),
            at: at.with_timezone(&chrono::Utc),
            message: message.to_owned(),
        });
    }
    Ok(out)
}

/// One line on stderr per task a commit changed or named in vain.
fn say(c: &Commit, r: &CommitReport) {
    let what = format!("{} {}", c.short(), c.subject());
    for t in &r.closed {
        eprintln!("callsign: {t} completed by {what}");
    }
    for t in &r.linked {
        eprintln!("callsign: {t} linked to {what}");
    }
    for t in &r.blocked {
        eprintln!("callsign: {t} linked to {what}; not completed: it has open subtasks");
    }
    for i in &r.ignored {
        eprintln!("callsign: {i}; ignored");
    }
}

/// The message a person wrote, as git will keep it: without comment lines and what follows
/// the scissors line of `commit --verbose`.
fn written(message: &str) -> String {
    message
        .lines()
        .take_while(|l| !(l.starts_with("# -") && l.contains(">8")))
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// On a branch named by a key, adds `Refs: KEY` to a message that names no task (unless
/// `git config callsign.refsTrailer false`).
fn refs_trailer(engine: &Engine, file: &Path) -> Result<()> {
    if git(&["config", "--type=bool", "--get", "callsign.refsTrailer"]).is_ok_and(|v| v == "false")
    {
        return Ok(());
    }
    let Ok(branch) = git(&["symbolic-ref", "--short", "-q", "HEAD"]) else {
        return Ok(()); // detached: no branch to read
    };
    let prefixes = engine.commit_prefixes()?;
    let known = |p: &Prefix| prefixes.knows(p);
    let Some(key) = key_in_branch(&branch, known) else {
        return Ok(());
    };
    let message =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let written = written(&message);
    // An empty message is how a person cancels a commit: a trailer would make it one.
    if written.trim().is_empty() || !read_message(&written, known).is_empty() {
        return Ok(());
    }
    let file = file.to_string_lossy();
    git(&[
        "interpret-trailers",
        "--in-place",
        "--trailer",
        &format!("Refs: {key}"),
        &file,
    ])?;
    Ok(())
}
