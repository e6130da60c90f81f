//! Keys where the work happens (docs/CLI.md "Git"): a real `git` in temp repositories, the real
//! CLI's hooks and a real server, with two devices. Every commit below is made by git itself;
//! the hooks act on the local store only, and the changes reach the teammate's device through
//! the server afterwards (the commits are all made "offline": nothing syncs until `sync`).
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Result};
use serde_json::Value;

use crate::cli::Cli;
use crate::fixture::{create_project, TestServer};

const AUTHOR: &str = "Ann Author <ann@example.org>";

/// `git ARGS` in `repo` with a config of its own (no user or system config): output, or why not.
fn git_in(repo: &Path, home: &Path, args: &[&str]) -> Result<std::process::Output> {
    Ok(Command::new("git")
        .args(args)
        .current_dir(repo)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Ann Author")
        .env("GIT_AUTHOR_EMAIL", "ann@example.org")
        .env("GIT_COMMITTER_NAME", "Ann Author")
        .env("GIT_COMMITTER_EMAIL", "ann@example.org")
        .env_remove("CALLSIGN_DATA_DIR")
        .output()?)
}

/// A repository and the device whose hooks it runs.
struct Repo<'a> {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
    cli: &'a Cli,
}

impl<'a> Repo<'a> {
    fn new(cli: &'a Cli) -> Result<Repo<'a>> {
        let r = Repo {
            dir: tempfile::tempdir()?,
            home: tempfile::tempdir()?,
            cli,
        };
        r.git(&["init", "-q", "-b", "main"])?;
        r.git(&["commit", "-q", "--allow-empty", "-m", "Start"])?;
        Ok(r)
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs git; fails unless it succeeds. Returns stdout and stderr.
    fn git(&self, args: &[&str]) -> Result<(String, String)> {
        let out = git_in(self.path(), self.home.path(), args)?;
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        if !out.status.success() {
            bail!("git {args:?} failed ({}): {stderr}", out.status);
        }
        Ok((stdout, stderr))
    }

    /// A commit of a change to `file`; returns git's stderr (where the hooks speak).
    fn commit(&self, file: &str, message: &str) -> Result<String> {
        std::fs::write(self.path().join(file), message)?;
        self.git(&["add", file])?;
        Ok(self.git(&["commit", "-q", "-m", message])?.1)
    }

    fn head(&self) -> Result<String> {
        Ok(self.git(&["rev-parse", "HEAD"])?.0.trim().to_owned())
    }

    /// `callsign ARGS` in the repository.
    fn callsign(&self, args: &[&str]) -> Result<String> {
        let out = self
            .cli
            .command(args)
            .current_dir(self.path())
            .env("HOME", self.home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()?;
        if !out.status.success() {
            bail!(
                "callsign {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8(out.stdout)?)
    }

    fn hook(&self, name: &str) -> Result<String> {
        let hooks = self.git(&["rev-parse", "--path-format=absolute", "--git-path", "hooks"])?;
        Ok(std::fs::read_to_string(
            Path::new(hooks.0.trim()).join(name),
        )?)
    }
}

fn task(cli: &Cli, key: &str) -> Result<Value> {
    cli.json(&["show", key])
}

/// The commit links of a task as `(short hash, action)`.
fn links(t: &Value) -> Vec<(String, String)> {
    t["commits"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    (
                        c["hash"].as_str().unwrap_or("")[..7].to_owned(),
                        c["action"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn short(hash: &str) -> String {
    hash[..7].to_owned()
}

#[test]
fn commits_close_and_link_tasks_and_a_teammate_sees_them() -> Result<()> {
    let (server, account) = TestServer::start("SYN")?;
    let homes = [tempfile::tempdir()?, tempfile::tempdir()?];
    let ann = Cli::new(homes[0].path());
    let ben = Cli::new(homes[1].path());
    ann.login(&server.url, &account.token)?;
    ben.login(&server.url, &server.token(&account, "ben-laptop")?)?;
    create_project(&server.url, &account.token, "OPS")?;
    ann.ok(&["project", "list"])?;
    for i in 1..=14 {
        ann.add(&format!("Task number {i}"), &[])?;
    }
    ann.add("Has a subtask", &[])?;
    ann.add("Done on a teammate's branch", &[])?;
    ann.ok(&["sync"])?;
    ann.add("The open subtask", &["--parent", "SYN-15"])?;
    // SYN-9 moves to OPS: its old key still closes it.
    ann.ok(&["move", "SYN-9", "OPS"])?;
    ann.ok(&["sync"])?;
    assert_eq!(task(&ann, "SYN-9")?["key"], "OPS-1");

    let repo = Repo::new(&ann)?;
    // A hook already there: it keeps running, first.
    let hooks = repo.path().join(".git/hooks");
    std::fs::write(
        hooks.join("post-commit"),
        "#!/bin/sh\necho ran >> \"$(git rev-parse --git-dir)/earlier-hook-ran\"\n",
    )?;
    std::fs::write(
        hooks.join("commit-msg"),
        "#!/bin/sh\nif grep -q WIP \"$1\"; then echo 'no WIP commits' >&2; exit 1; fi\n",
    )?;
    for h in ["post-commit", "commit-msg"] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(hooks.join(h), std::fs::Permissions::from_mode(0o755))?;
    }
    let installed = repo.callsign(&["git", "install"])?;
    assert!(
        installed.contains("post-commit (the hook that was there runs first)"),
        "{installed}"
    );
    // Again: the same hooks, the earlier ones still kept once.
    let first = repo.hook("post-commit")?;
    repo.callsign(&["git", "install"])?;
    assert_eq!(repo.hook("post-commit")?, first);
    assert!(repo
        .hook("post-commit.pre-callsign")?
        .contains("earlier-hook-ran"));

    // A branch from a key; a commit on it that names no task gets `Refs: SYN-1`.
    let name = repo.callsign(&["branch", "SYN-1", "--print"])?;
    assert_eq!(name.trim(), "syn-1-task-number-1");
    repo.callsign(&["branch", "SYN-1"])?;
    assert_eq!(
        repo.git(&["rev-parse", "--abbrev-ref", "HEAD"])?.0.trim(),
        "syn-1-task-number-1"
    );
    repo.commit("form", "Tidy the form")?;
    let message = repo.git(&["log", "-1", "--format=%B"])?.0;
    assert!(message.contains("\n\nRefs: SYN-1"), "{message:?}");
    let t = task(&ann, "SYN-1")?;
    assert_eq!(
        (t["status"].as_str(), links(&t)),
        (Some("pending"), vec![(short(&repo.head()?), "refs".into())])
    );
    assert!(
        repo.path().join(".git/earlier-hook-ran").exists(),
        "the earlier hook ran"
    );

    // Every closing form and list form completes the right tasks.
    repo.git(&["switch", "-q", "main"])?;
    let forms = [
        ("Fixes SYN-2", vec!["SYN-2"]),
        ("closed: SYN-3", vec!["SYN-3"]),
        ("Resolving syn 4", vec!["SYN-4"]),
        (
            "Closes SYN-5, SYN-6 and SYN-7",
            vec!["SYN-5", "SYN-6", "SYN-7"],
        ),
        ("Implemented SYN-8 & SYN-10", vec!["SYN-8", "SYN-10"]),
        ("SYN-11 #done", vec!["SYN-11"]),
        // The moved task, by its old key.
        ("Fixes SYN-9", vec!["OPS-1"]),
    ];
    for (i, (message, closed)) in forms.iter().enumerate() {
        let said = repo.commit(&format!("f{i}"), message)?;
        let hash = repo.head()?;
        for key in closed {
            let t = task(&ann, key)?;
            assert_eq!(t["status"], "completed", "{message}: {key} {t}");
            assert_eq!(
                links(&t),
                [(short(&hash), "closes".to_owned())],
                "{message}"
            );
            assert!(
                said.contains(&format!("{key} completed by {}", short(&hash))),
                "{said}"
            );
        }
    }
    // Read again after someone reopened it, it stays open; a revert of the commit only links.
    ann.ok(&["reopen", "OPS-1"])?;
    repo.callsign(&["git", "hook", "post-commit"])?;
    assert_eq!(task(&ann, "OPS-1")?["status"], "pending");
    repo.git(&["revert", "--no-edit", "HEAD"])?;
    let revert = repo.head()?;
    let t = task(&ann, "OPS-1")?;
    assert_eq!(t["status"], "pending", "a revert closes nothing");
    assert!(
        links(&t).contains(&(short(&revert), "refs".to_owned())),
        "{t}"
    );
    ann.ok(&["done", "OPS-1"])?;

    // A linking commit links, and does not close; a smart comment keeps its text.
    repo.commit("l1", "Part of SYN-12\n\nSYN-13 #comment looked at the logs")?;
    for key in ["SYN-12", "SYN-13"] {
        let t = task(&ann, key)?;
        assert_eq!(
            (t["status"].as_str(), links(&t).len()),
            (Some("pending"), 1),
            "{key}"
        );
    }
    assert_eq!(
        task(&ann, "SYN-13")?["commits"][0]["comment"],
        "looked at the logs"
    );
    // A task with an open subtask is linked, not completed; unknown keys are named, ignored;
    // none of it stops the commit.
    let said = repo.commit("u1", "Fixes SYN-15, ABC-12 and SYN-99")?;
    assert!(said.contains("SYN-15 linked to"), "{said}");
    assert!(
        said.contains("not completed: it has open subtasks"),
        "{said}"
    );
    assert!(
        said.contains("ABC-12: no project ABC here; ignored"),
        "{said}"
    );
    assert!(
        said.contains("SYN-99: no such task here; ignored"),
        "{said}"
    );
    assert_eq!(task(&ann, "SYN-15")?["status"], "pending");
    // The earlier commit-msg hook still refuses what it refused.
    std::fs::write(repo.path().join("w"), "w")?;
    repo.git(&["add", "w"])?;
    assert!(repo.git(&["commit", "-q", "-m", "WIP on SYN-14"]).is_err());
    assert!(links(&task(&ann, "SYN-14")?).is_empty());
    repo.git(&["reset", "-q", "HEAD", "w"])?;

    // Reading the same commit again changes nothing.
    let before = task(&ann, "SYN-15")?;
    repo.callsign(&["git", "hook", "post-commit"])?;
    let after = task(&ann, "SYN-15")?;
    assert_eq!(after["modified_at"], before["modified_at"]);
    assert_eq!(links(&after).len(), 1);

    // An amend replaces the commit it rewrote: one link, the new hash.
    repo.commit("a1", "Refs SYN-14")?;
    let old = repo.head()?;
    repo.git(&["commit", "-q", "--amend", "-m", "Refs SYN-14, amended"])?;
    let new = repo.head()?;
    assert_ne!(old, new);
    assert_eq!(
        links(&task(&ann, "SYN-14")?),
        [(short(&new), "refs".to_owned())]
    );
    // So does a rebase.
    repo.git(&["switch", "-q", "-c", "topic"])?;
    repo.commit("r1", "Refs SYN-12 again")?;
    let before_rebase = repo.head()?;
    repo.git(&["switch", "-q", "main"])?;
    repo.commit("m1", "Unrelated work")?;
    repo.git(&["switch", "-q", "topic"])?;
    repo.git(&["rebase", "-q", "main"])?;
    let rebased = repo.head()?;
    assert_ne!(before_rebase, rebased);
    let hashes: Vec<String> = links(&task(&ann, "SYN-12")?)
        .into_iter()
        .map(|l| l.0)
        .collect();
    assert!(hashes.contains(&short(&rebased)), "{hashes:?}");
    assert!(!hashes.contains(&short(&before_rebase)), "{hashes:?}");
    assert_eq!(
        hashes.len(),
        2,
        "the Part of commit and the rebased one: {hashes:?}"
    );

    // A merge brings in a commit made where no hook ran (a teammate's): it acts here.
    repo.git(&["switch", "-q", "main"])?;
    repo.git(&["switch", "-q", "-c", "theirs"])?;
    std::fs::write(repo.path().join("t1"), "theirs")?;
    repo.git(&["add", "t1"])?;
    repo.git(&[
        "-c",
        "core.hooksPath=/dev/null",
        "commit",
        "-q",
        "-m",
        "Fixes SYN-16",
    ])?;
    let theirs = repo.head()?;
    assert!(
        links(&task(&ann, "SYN-16")?).is_empty(),
        "no hook ran for it"
    );
    repo.git(&["switch", "-q", "main"])?;
    repo.git(&["merge", "-q", "--no-ff", "-m", "Merge theirs", "theirs"])?;
    let t = task(&ann, "SYN-16")?;
    assert_eq!(t["status"], "completed", "{t}");
    assert_eq!(links(&t), [(short(&theirs), "closes".to_owned())]);
    // An emptied message still cancels the commit on a key's branch (no trailer makes it one).
    repo.git(&["switch", "-q", "syn-1-task-number-1"])?;
    let before_cancel = repo.head()?;
    assert!(repo
        .git(&["commit", "-q", "--allow-empty", "-m", ""])
        .is_err());
    assert_eq!(repo.head()?, before_cancel);
    // The trailer turned off: a commit on a key's branch stays as written.
    repo.git(&["config", "callsign.refsTrailer", "false"])?;
    repo.git(&["switch", "-q", "syn-1-task-number-1"])?;
    repo.commit("quiet", "No trailer wanted")?;
    let message = repo.git(&["log", "-1", "--format=%B"])?.0;
    assert_eq!(message.trim(), "No trailer wanted");

    // All of it was offline; it syncs, and the teammate sees each completion with its author.
    ann.ok(&["sync"])?;
    ben.ok(&["sync"])?;
    assert_eq!(task(&ben, "OPS-1")?["status"], "completed");
    for key in ["SYN-2", "SYN-7", "SYN-11"] {
        let t = task(&ben, key)?;
        assert_eq!(t["status"], "completed", "{key} on the teammate's device");
        assert_eq!(t["commits"][0]["author"], AUTHOR, "{key}");
        assert_eq!(t["commits"][0]["action"], "closes", "{key}");
    }
    assert_eq!(
        links(&task(&ben, "SYN-14")?),
        [(short(&new), "refs".to_owned())]
    );
    let with = ben.json(&["list", "commits:any", "status:all"])?;
    assert_eq!(with.as_array().map(Vec::len), Some(16), "{with}");
    let shown = ben.ok(&["show", "SYN-2"])?;
    assert!(
        shown.contains("Fixes SYN-2") && shown.contains(AUTHOR),
        "{shown}"
    );

    // Uninstalled: the earlier hooks are back as they were.
    repo.callsign(&["git", "uninstall"])?;
    assert!(repo.hook("post-commit")?.contains("earlier-hook-ran"));
    assert!(!repo
        .path()
        .join(".git/hooks/post-commit.pre-callsign")
        .exists());
    assert!(!repo.path().join(".git/hooks/post-merge").exists());
    Ok(())
}

#[test]
fn hooks_go_where_core_hooks_path_says_and_a_failing_hook_never_blocks() -> Result<()> {
    let (server, account) = TestServer::start("SYN")?;
    let home = tempfile::tempdir()?;
    let ann = Cli::new(home.path());
    ann.login(&server.url, &account.token)?;
    ann.add("First", &[])?;
    ann.ok(&["sync"])?;

    let repo = Repo::new(&ann)?;
    repo.git(&["config", "core.hooksPath", "shared-hooks"])?;
    repo.callsign(&["git", "install"])?;
    assert!(repo.path().join("shared-hooks/post-commit").exists());
    assert!(!repo.path().join(".git/hooks/post-commit").exists());
    repo.commit("a", "Fixes SYN-1")?;
    assert_eq!(task(&ann, "SYN-1")?["status"], "completed");

    // The device's store unreadable: the hook says so in one line, and the commit is made.
    let db = home.path().join("callsign.sqlite3");
    std::fs::write(&db, "not a database")?;
    for wal in ["callsign.sqlite3-wal", "callsign.sqlite3-shm"] {
        let _ = std::fs::remove_file(home.path().join(wal));
    }
    let before = repo.head()?;
    let said = repo.commit("b", "Refs SYN-1")?;
    assert_ne!(repo.head()?, before, "the commit was made");
    let lines: Vec<&str> = said.lines().filter(|l| l.contains("callsign")).collect();
    assert_eq!(
        lines.len(),
        2,
        "one line per hook that ran (commit-msg, post-commit): {said}"
    );
    assert!(
        lines.iter().all(|l| l.starts_with("callsign: git hook")),
        "{said}"
    );
    Ok(())
}
