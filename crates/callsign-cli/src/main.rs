//! `callsign`: the command line on top of callsign-sync (DESIGN.md section 5).
//!
//! Every command works on a data dir (`--data-dir`, `CALLSIGN_DATA_DIR`, or the platform data dir
//! shared with the desktop app). Local commands (`add`, `list`, `show`, `done`, `edit`) never touch
//! the network. `sync` talks to the server unless another process (the app) owns the data dir's
//! sync loop, in which case it waits for that loop to drain the outbox. `watch` runs the loop in
//! the foreground, as the desktop app does.
mod commands;
mod git;
mod import;
mod import_from;
mod render;
mod report;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

use callsign_core::Priority;
use clap::{Parser, Subcommand};

use crate::report::ReportArgs;

/// A priority, or none (clap reads a bare `Option<Option<_>>` as an optional flag value).
#[derive(Debug, Clone, Copy)]
pub struct PriorityOrNone(pub Option<Priority>);

fn parse_priority_or_none(s: &str) -> Result<PriorityOrNone, String> {
    callsign_core::when::parse_priority_or_none(s)
        .map(PriorityOrNone)
        .map_err(|e| e.to_string())
}

/// Stands for the `-` of a word such as `-ui` between [`words_not_options`] and clap, which
/// would take the word for an option it does not know.
const MINUS: char = '\u{E000}';

/// Marks the `-tag` words after `list`, `next` and `modify` (and `modify`'s `--`) as words: Taskwarrior's
/// `-tag` must reach the filter or the change, while options such as `--all` or `--json` stay
/// options wherever they are. `-h` stays help.
fn words_not_options(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter();
    out.extend(it.next()); // the program
    let mut command = None;
    while let Some(a) = it.next() {
        let text = a.to_str().map(str::to_owned);
        match (command.as_deref(), text.as_deref()) {
            (None, Some("--data-dir")) => {
                out.push(a);
                out.extend(it.next());
                continue;
            }
            (None, Some(t)) if !t.starts_with('-') => command = Some(t.to_owned()),
            (Some(c @ ("list" | "next" | "modify")), Some(t))
                if (t == "--" && c == "modify")
                    || (t.starts_with('-') && !t.starts_with("--") && t != "-h" && t.len() > 1) =>
            {
                out.push(format!("{MINUS}{}", &t[1..]).into());
                continue;
            }
            _ => {}
        }
        out.push(a);
    }
    out
}

/// A word of a filter or a change, its `-` back (see [`words_not_options`]).
fn word(s: &str) -> Result<String, std::convert::Infallible> {
    Ok(match s.strip_prefix(MINUS) {
        Some(rest) => format!("-{rest}"),
        None => s.to_owned(),
    })
}

#[derive(Debug, Parser)]
#[command(
    name = "callsign",
    version,
    about = "Offline-first tasks with short, speakable keys"
)]
pub struct Cli {
    /// Where the local store lives (shared with the desktop app by default).
    #[arg(long, env = "CALLSIGN_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Print machine-readable JSON: one document (`watch`: one per line); on an error, also
    /// `{"error": {"message", "code", "exit"}}`.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Save the server URL and this device's token; fetch the account's projects.
    ///
    /// The token is read from stdin with `--token-stdin` (best: it never shows in `ps` or the
    /// shell history), else from `CALLSIGN_TOKEN`, else from `--token`.
    Login {
        #[arg(long)]
        server: String,
        /// The token itself (visible to other users in `ps`; prefer --token-stdin).
        #[arg(long, env = "CALLSIGN_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Read the token from the first line of stdin.
        #[arg(long)]
        token_stdin: bool,
        #[arg(long)]
        device: Option<String>,
    },
    /// Join a team with an invite code from one of its owners: makes you a member with a
    /// handle of your own and logs this device in (as `login` does) with your new token.
    Join {
        #[arg(long)]
        server: String,
        /// The invite code (XXXX-XXXX-XXXX-XXXX; case and dashes do not matter).
        #[arg(long)]
        code: String,
        /// Your handle in the team (1-32 letters, digits, . _ -; a letter first): `@name`.
        #[arg(long)]
        name: String,
        #[arg(long)]
        device: Option<String>,
    },
    /// Make an invite code for a new teammate (owners only): single use, valid 24 hours
    /// unless `--hours` says otherwise (1-168).
    Invite {
        /// Invite another owner instead of a member.
        #[arg(long)]
        owner: bool,
        #[arg(long)]
        hours: Option<u32>,
    },
    /// The team's members and their roles (needs the server); `*` marks you.
    Members,
    /// What each member completed and created since the last working day (Friday on a
    /// Monday), and what is open and assigned to them: each line as it is said aloud, keys
    /// first. From the tasks on this device (run `sync` first for the latest).
    Standup {
        /// The first day to count: yesterday, a date (2026-11-20), mon, ...
        #[arg(long)]
        since: Option<String>,
    },
    /// Assign a task to a member of the team (`callsign assign DEV-12 @bob`), or to nobody
    /// with `--nobody`; synced like any edit. `@bob` in `add` assigns too.
    Assign {
        task: String,
        /// The member's name, with or without `@`.
        name: Option<String>,
        #[arg(long, conflicts_with = "name")]
        nobody: bool,
    },
    /// Capture a task (saved at once; provisional until the server numbers it).
    Add {
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
        /// Project prefix (default: the one saved at login; with no server, the local INBOX).
        #[arg(long)]
        project: Option<String>,
        #[arg(long = "tag")]
        tags: Vec<String>,
        #[arg(long)]
        notes: Option<String>,
        /// When it is due: a date (2026-12-01, 2026-12-01T14:30), a day (today, tomorrow,
        /// fri), an end (eod, eow, eom, eoy) or a span from now (3d, 2w, 4h, 1mo).
        #[arg(long, value_name = "WHEN")]
        due: Option<String>,
        /// H, M or L (`none`: no priority).
        #[arg(long, value_name = "H|M|L", value_parser = parse_priority_or_none)]
        priority: Option<PriorityOrNone>,
        /// Make it a subtask of this task (key, UUID or provisional id): it takes the parent's
        /// project, and its key is the parent's and its own number (SYN-42.1).
        #[arg(long, value_name = "TASK")]
        parent: Option<String>,
    },
    /// What to do next: pending tasks that are not blocked by open subtasks, leaf-first
    /// (subtasks before their parents, deepest first, then by number).
    Next {
        /// Only this project (prefix; the same as `#PFX` in the filter).
        #[arg(long)]
        project: Option<String>,
        /// Filter words, as `list` takes them.
        #[arg(value_name = "FILTER", value_parser = word)]
        filter: Vec<String>,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// List tasks: pending ones, narrowed by a filter (docs/CLI.md "Filters"):
    /// words, +tag, -tag, #PFX, status:pending|completed|deleted|all|failed|provisional,
    /// due:WHEN, due.before:WHEN, due.after:WHEN, due.none:, priority:H|M|L|none, keys and key
    /// ranges (DEV-12, DEV-10..20). The app's filter bar reads the same words.
    List {
        /// Every status (the same as `status:all`).
        #[arg(long)]
        all: bool,
        /// Only tasks the server refused, any status (`status:failed`): fix them with `edit`
        /// or `discard`.
        #[arg(long)]
        failed: bool,
        /// Only this project (prefix; the same as `#PFX`).
        #[arg(long)]
        project: Option<String>,
        /// Filter words (quote a phrase: "fix login").
        #[arg(value_name = "FILTER", value_parser = word)]
        filter: Vec<String>,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// Show one task by key, UUID, or unique UUID prefix (8+ characters).
    Show { task: String },
    /// Capture many tasks at once from stdin: one description per line, or with `--jsonl` one
    /// JSON object per line (description, and optionally project, notes, tags). All or nothing.
    /// With `--from FORMAT FILE`: another tracker's export (jira, linear, github, taskwarrior),
    /// every key kept (owners only; docs/CLI.md "Import").
    Import {
        /// Read JSON lines instead of plain descriptions.
        #[arg(long, conflicts_with = "from")]
        jsonl: bool,
        /// Project prefix of every line that names none (default: the one saved at login).
        /// With `--from`: the project to import into (each task takes its next number there,
        /// its old key still finds it), or with `--keep-numbers` the prefix for GitHub's `#N`.
        #[arg(long)]
        project: Option<String>,
        /// Import another tracker's export: jira (CSV), linear (CSV), github (`gh issue list
        /// --json`), taskwarrior (`task export`).
        #[arg(long, value_name = "FORMAT", value_parser = crate::import_from::format_arg, requires = "file")]
        from: Option<callsign_sync::ImportFormat>,
        /// The export to read (with `--from`).
        #[arg(value_name = "FILE", requires = "from")]
        file: Option<std::path::PathBuf>,
        /// Each task keeps its very number (`ENG-42` stays `ENG-42`) in a project made for it;
        /// the project's counter goes on after the highest.
        #[arg(long, requires = "from")]
        keep_numbers: bool,
        /// Print what the import would do, and make nothing (works offline).
        #[arg(long, requires = "from")]
        dry_run: bool,
        /// How long to wait, in seconds, for the server to key the imported tasks (they stay
        /// queued after it).
        #[arg(long, default_value_t = 300, requires = "from")]
        timeout: u64,
    },
    /// Mark a task completed (refused while it has open subtasks).
    Done { task: String },
    /// Mark a task deleted (its key stays taken: keys are never reused).
    Delete { task: String },
    /// Make a completed or deleted task pending again.
    Reopen { task: String },
    /// Append a line to a task's notes, stamped with the local date and time.
    Annotate {
        task: String,
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
    },
    /// Change a task's description, notes, due date, priority or project. A task the server
    /// refused is sent again with the change.
    Edit {
        task: String,
        #[arg(long)]
        description: Option<String>,
        #[arg(long)]
        notes: Option<String>,
        /// Another project: moves the task there (as `move` does).
        #[arg(long)]
        project: Option<String>,
        /// A new due date (the forms `add --due` takes), or `none` to clear it.
        #[arg(long, value_name = "WHEN")]
        due: Option<String>,
        /// H, M or L, or `none` to clear it.
        #[arg(long, value_name = "H|M|L|none", value_parser = parse_priority_or_none)]
        priority: Option<PriorityOrNone>,
    },
    /// Change one or more tasks in Taskwarrior's words: `callsign modify DEV-12 DEV-14 +bug
    /// -ui due:fri priority:H`. Plain words replace the description; +tag and -tag add and
    /// remove tags; #PFX moves the task (a numbered one gets the next key there); due:none and
    /// priority:none clear. Each task's change is one change sent to the server.
    ///
    /// The tasks come first: keys (DEV-12), UUIDs or ~ids; the first other word starts the
    /// change (`--` ends the tasks when the change starts with a key-like word).
    Modify {
        #[arg(required = true, num_args = 1.., value_name = "TASK... WORDS", value_parser = word)]
        args: Vec<String>,
    },
    /// Move a task (and its subtasks) to another project: once synced it has the next key
    /// there, and its old key still finds it. Before it has a key, it just changes project.
    Move {
        task: String,
        /// The project's prefix.
        project: String,
    },
    /// Settle a conflict that `show` lists (two devices changed one field; the server kept the
    /// later value): `--restore` brings the other value back, `--keep` keeps what is there.
    #[command(group(clap::ArgGroup::new("how").required(true).args(["restore", "keep"])))]
    Resolve {
        task: String,
        /// The conflict's number as `show` lists it (may be left out when there is one).
        n: Option<usize>,
        /// Bring the other value back.
        #[arg(long)]
        restore: bool,
        /// Keep the current value; the field's conflicts go.
        #[arg(long)]
        keep: bool,
    },
    /// Revert this device's last change (add, edit, done, delete, reopen, annotate, resolve,
    /// move, import) as a new change that syncs like any edit; again: the change before it.
    ///
    /// Keys are never reused: an undone add is a deleted task, and an undone move of a numbered
    /// task gets a new number in its old project. Changes made on other devices are not undone.
    Undo,
    /// Create a branch named by a task's key and switch to it: `syn-42-fix-the-login-form`
    /// (the key in lower case, then the description's words, at most 60 characters). Commits
    /// on it that name no task get `Refs: SYN-42` (docs/CLI.md "Git").
    Branch {
        task: String,
        /// Print the name only (to copy it, or for `git switch -c "$(callsign branch SYN-42
        /// --print)"`).
        #[arg(long)]
        print: bool,
    },
    /// Let commits act on tasks: `Fixes SYN-42` completes it, `Refs SYN-42` links the commit
    /// (docs/CLI.md "Git" has the whole grammar).
    Git {
        #[command(subcommand)]
        command: GitCommand,
    },
    /// Send a failed task again (with a new idempotency key).
    Retry { task: String },
    /// Drop what the server refused: a task it never accepted is removed from this device; a
    /// task with a key loses its refused changes.
    Discard { task: String },
    /// List the local INBOX (tasks captured before there was a server), or send them all to a
    /// server project with `--send-to PFX`.
    Inbox {
        #[arg(long, value_name = "PFX", conflicts_with_all = ["sort", "columns"])]
        send_to: Option<String>,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// The account's projects on the server.
    Project {
        #[command(subcommand)]
        command: ProjectCommand,
    },
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell) to stdout.
    ///
    /// For example `callsign completions bash > ~/.local/share/bash-completion/completions/callsign`;
    /// the Debian package installs them.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Push the outbox and pull changes; exit 0 once nothing is pending.
    Sync {
        /// Give up waiting for retried requests after this many seconds.
        #[arg(long, default_value_t = 60)]
        timeout: u64,
    },
    /// Outbox counts, last sync, server, online or not.
    Status,
    /// Run the sync loop in the foreground until interrupted (what the desktop app does).
    Watch,
}

#[derive(Debug, Subcommand)]
pub enum GitCommand {
    /// Install Callsign's hooks in this repository (where `core.hooksPath` says, if set):
    /// commit-msg, post-commit, post-merge and post-rewrite. A hook already there is kept and
    /// runs first; running it again brings the hooks up to date. A hook never fails a commit.
    Install,
    /// Remove Callsign's hooks from this repository and put back the ones they ran first.
    Uninstall,
    /// What a hook runs (`callsign git hook post-commit`); always exits 0.
    #[command(hide = true)]
    Hook {
        name: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProjectCommand {
    /// The account's projects (from the server when it answers, else as last seen).
    List,
    /// Create a project on the server (needs the server; the prefix is checked there: 2-10
    /// letters or digits, a letter first, not one any project of the account has or had, and
    /// not one that sounds like another project's: SIN beside SYN).
    Add {
        /// Its name, as people call it.
        name: String,
        /// Its key prefix (any case; stored upper-case): PFX-1, PFX-2, …
        #[arg(long)]
        prefix: String,
        /// Take the prefix even if it sounds like another project's.
        #[arg(long)]
        allow_similar: bool,
    },
    /// Give a project a new prefix (needs the server): SYN-42 becomes SYX-42 on every device
    /// at its next sync, and SYN-42 still finds the task. No prefix a project had before can be
    /// taken by another (but a project may take back its own).
    Rename {
        /// The project's prefix now.
        from: String,
        /// Its new prefix (2-10 letters or digits, a letter first).
        to: String,
        /// Take the new prefix even if it sounds like another project's.
        #[arg(long)]
        allow_similar: bool,
    },
}

fn main() -> ExitCode {
    // A reader that stops early (`| head`) ends this process quietly, as it would `ls`.
    sigpipe::reset();
    let cli = match Cli::try_parse_from(words_not_options(std::env::args_os().collect())) {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    if let Command::Completions { shell } = cli.command {
        use clap::CommandFactory;
        use std::io::Write;
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "callsign", &mut script);
        // A closed pipe (`| head`) is not an error worth a message.
        let _ = std::io::stdout().write_all(&script);
        return ExitCode::SUCCESS;
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CALLSIGN_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
    let json = cli.json;
    // Two workers: a sync sends the next batch while it records the answers to the last one.
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return failed(json, &format!("cannot start: {e}"), None, 1),
    };
    match rt.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<commands::Reported>() {
            Some(r) => {
                eprintln!("callsign: {}", render::safe_block(&r.message));
                ExitCode::from(r.exit)
            }
            None => failed(json, &format!("{e:#}"), error_code(&e), exit_code(&e)),
        },
    }
}

/// An error: in words on stderr, and with `--json` also as one JSON document on stdout, so a
/// script reading stdout always gets JSON: `{"error": {"message", "code", "exit"}}`.
fn failed(json: bool, message: &str, code: Option<&str>, exit: u8) -> ExitCode {
    eprintln!("callsign: {}", render::safe_block(message));
    if json {
        use std::io::Write;
        let doc = error_json(message, code, exit);
        let mut out = std::io::stdout().lock();
        // stdout closed: the words on stderr and the exit code still tell.
        let _ = writeln!(out, "{doc}").and_then(|()| out.flush());
    }
    ExitCode::from(exit)
}

fn error_json(message: &str, code: Option<&str>, exit: u8) -> serde_json::Value {
    serde_json::json!({ "error": { "message": message, "code": code, "exit": exit } })
}

/// A command line clap refused (exit 2), or `--help`/`--version` (exit 0, printed as clap does).
/// With `--json` among the arguments a refusal is also a JSON error with code `usage`.
fn usage_error(e: &clap::Error) -> ExitCode {
    use std::io::Write;
    let exit = u8::try_from(e.exit_code()).unwrap_or(2);
    if e.use_stderr() && json_asked(std::env::args_os().skip(1)) {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default();
        let message = first.strip_prefix("error: ").unwrap_or(first);
        let doc = error_json(message, Some("usage"), exit);
        let _ = writeln!(std::io::stdout(), "{doc}");
    }
    // A closed pipe, for the JSON, the help or the usage message: the exit code still tells.
    let _ = e.print();
    ExitCode::from(exit)
}

/// Whether `--json` is among the options (the command line did not parse, so clap cannot say);
/// after `--` everything is text.
fn json_asked(args: impl IntoIterator<Item = std::ffi::OsString>) -> bool {
    args.into_iter()
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

/// The exit codes (docs/CLI.md): 0 done; 1 an error (refused, not found, invalid); 2 a usage
/// error (clap's); 3 saved on this device, not yet synced (the server could not be reached
/// or did not answer in time; nothing is lost, try again later).
fn exit_code(e: &anyhow::Error) -> u8 {
    if e.downcast_ref::<commands::NotSynced>().is_some() {
        commands::NotSynced::EXIT
    } else {
        1
    }
}

/// The machine code of a JSON error: `not_synced` for exit 3, else the engine's code
/// (`not_found`, `invalid`, `task_blocked`, `unreachable`, …, or the server's, such as
/// `prefix_taken`) when the engine said no; none for the CLI's own refusals.
fn error_code(e: &anyhow::Error) -> Option<&'static str> {
    if e.downcast_ref::<commands::NotSynced>().is_some() {
        return Some("not_synced");
    }
    e.chain().find_map(|c| {
        c.downcast_ref::<commands::Coded>()
            .map(|c| c.code)
            .or_else(|| c.downcast_ref::<callsign_sync::Error>().map(|e| e.code()))
    })
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::{error_code, json_asked, Cli, Command};

    /// The command line as `main` hands it to clap.
    fn argv(args: &[&str]) -> Vec<std::ffi::OsString> {
        super::words_not_options(args.iter().map(Into::into).collect())
    }

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(argv(args)).unwrap()
    }

    #[test]
    fn minus_words_are_words_and_options_stay_options_anywhere() {
        match parse(&[
            "callsign",
            "--data-dir",
            "/x",
            "list",
            "-ui",
            "+bug",
            "--all",
            "-h2",
        ])
        .command
        {
            Command::List { filter, all, .. } => {
                assert_eq!(filter, ["-ui", "+bug", "-h2"]);
                assert!(all);
            }
            other => panic!("parsed as {other:?}"),
        }
        let cli = parse(&["callsign", "modify", "DEV-1", "--", "-x", "DEV-2", "--json"]);
        assert!(cli.json);
        match cli.command {
            Command::Modify { args } => assert_eq!(args, ["DEV-1", "--", "-x", "DEV-2"]),
            other => panic!("parsed as {other:?}"),
        }
        assert!(
            Cli::try_parse_from(argv(&["callsign", "list", "--no-such-flag"])).is_err(),
            "an unknown option stays an error"
        );
        assert!(
            Cli::try_parse_from(argv(&["callsign", "add", "x", "-y"])).is_err(),
            "only list, next and modify take -words"
        );
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn add_joins_words_and_takes_repeated_tags() {
        let cli = Cli::try_parse_from([
            "callsign", "--json", "add", "Buy", "milk", "--tag", "home", "--tag", "errand",
        ])
        .unwrap();
        assert!(cli.json);
        match cli.command {
            Command::Add { text, tags, .. } => {
                assert_eq!(text.join(" "), "Buy milk");
                assert_eq!(tags, ["home", "errand"]);
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn report_flags_parse_and_unknown_columns_are_usage_errors() {
        use crate::report::Column;
        let cli = Cli::try_parse_from([
            "callsign",
            "list",
            "--sort",
            "key",
            "--columns",
            "due,key,description",
        ])
        .unwrap();
        match cli.command {
            Command::List { report, .. } => {
                assert_eq!(report.sort, Some(callsign_sync::Sort::Key));
                assert_eq!(
                    report.columns,
                    [Column::Due, Column::Key, Column::Description]
                );
            }
            other => panic!("parsed as {other:?}"),
        }
        let e = Cli::try_parse_from(["callsign", "next", "--columns", "key,size"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let text = e.to_string();
        assert!(
            text.contains("'size'") && text.contains("key, status, project, priority, due"),
            "{text}"
        );
        let e = Cli::try_parse_from(["callsign", "inbox", "--send-to", "DEV", "--sort", "key"])
            .unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
    }

    #[test]
    fn json_is_asked_before_the_end_of_options() {
        let args = |a: &[&str]| a.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert!(json_asked(args(&["list", "--json", "--bogus"])));
        assert!(!json_asked(args(&["add", "--", "--json"])));
        assert!(!json_asked(args(&["list", "--jsonl"])));
    }

    #[test]
    fn json_errors_carry_the_engines_code() {
        let not_found = anyhow::Error::from(callsign_sync::Error::NotFound("DEV-9".into()))
            .context("showing DEV-9");
        assert_eq!(error_code(&not_found), Some("not_found"));
        let not_synced = anyhow::Error::new(crate::commands::NotSynced("queued".into()));
        assert_eq!(error_code(&not_synced), Some("not_synced"));
        let explained = anyhow::Error::new(crate::commands::Coded {
            code: "prefix_taken",
            message: "cannot create SYN: taken".into(),
        });
        assert_eq!(error_code(&explained), Some("prefix_taken"));
        assert_eq!(error_code(&anyhow::anyhow!("nothing to change")), None);
    }
}
