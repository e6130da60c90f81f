//! `callsign`: the command line on top of callsign-sync (DESIGN.md section 5).
//!
//! Every command works on a data dir (`--data-dir`, `CALLSIGN_DATA_DIR`, or the platform data dir
//! shared with the desktop app). Local commands (`add`, `list`, `show`, `done`, `edit`) never touch
//! the network. `sync` talks to the server unless another process (the app) owns the data dir's
//! sync loop, in which case it waits for that loop to drain the outbox. `watch` runs the loop in
//! the foreground, as the desktop app does.
mod commands;
mod import;
mod render;

use std::path::PathBuf;
use std::process::ExitCode;

use callsign_core::Priority;
use callsign_sync::Sort;
use clap::{Parser, Subcommand};

/// A priority, or none (clap reads a bare `Option<Option<_>>` as an optional flag value).
#[derive(Debug, Clone, Copy)]
pub struct PriorityOrNone(pub Option<Priority>);

fn parse_priority_or_none(s: &str) -> Result<PriorityOrNone, String> {
    callsign_core::when::parse_priority_or_none(s)
        .map(PriorityOrNone)
        .map_err(|e| e.to_string())
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
    /// Print machine-readable JSON.
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
        /// Only this project (prefix).
        #[arg(long)]
        project: Option<String>,
        /// Only tasks whose description, notes or key contain TEXT.
        text: Option<String>,
    },
    /// List pending tasks (`--all`: completed and deleted too).
    List {
        #[arg(long)]
        all: bool,
        /// Only tasks the server refused (any status): fix them with `edit` or `discard`.
        #[arg(long)]
        failed: bool,
        /// Only this project (prefix).
        #[arg(long)]
        project: Option<String>,
        /// Only tasks whose description, notes or key contain TEXT.
        text: Option<String>,
        /// The order: created (capture order), due (soonest first, none last) or priority.
        #[arg(long, default_value = "created", value_name = "ORDER")]
        sort: Sort,
    },
    /// Show one task by key, UUID, or unique UUID prefix (8+ characters).
    Show { task: String },
    /// Capture many tasks at once from stdin: one description per line, or with `--jsonl` one
    /// JSON object per line (description, and optionally project, notes, tags). All or nothing.
    Import {
        /// Read JSON lines instead of plain descriptions.
        #[arg(long)]
        jsonl: bool,
        /// Project prefix of every line that names none (default: the one saved at login).
        #[arg(long)]
        project: Option<String>,
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
    /// Send a failed task again (with a new idempotency key).
    Retry { task: String },
    /// Drop what the server refused: a task it never accepted is removed from this device; a
    /// task with a key loses its refused changes.
    Discard { task: String },
    /// List the local INBOX (tasks captured before there was a server), or send them all to a
    /// server project with `--send-to PFX`.
    Inbox {
        #[arg(long, value_name = "PFX")]
        send_to: Option<String>,
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
pub enum ProjectCommand {
    /// The account's projects (from the server when it answers, else as last seen).
    List,
    /// Create a project on the server (needs the server; the prefix is checked there: 2-10
    /// letters or digits, a letter first, not one any project of the account has or had).
    Add {
        /// Its name, as people call it.
        name: String,
        /// Its key prefix (any case; stored upper-case): PFX-1, PFX-2, …
        #[arg(long)]
        prefix: String,
    },
    /// Give a project a new prefix (needs the server): SYN-42 becomes SYX-42 on every device
    /// at its next sync, and SYN-42 still finds the task. No prefix a project had before can be
    /// taken by another (but a project may take back its own).
    Rename {
        /// The project's prefix now.
        from: String,
        /// Its new prefix (2-10 letters or digits, a letter first).
        to: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
    // Two workers: a sync sends the next batch while it records the answers to the last one.
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("callsign: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("callsign: {}", render::safe_block(&format!("{e:#}")));
            exit_code(&e)
        }
    }
}

/// The exit codes (docs/CLI.md): 0 done; 1 an error (refused, not found, invalid); 2 a usage
/// error (clap's); 3 saved on this device, not yet synced (the server could not be reached
/// or did not answer in time; nothing is lost, try again later).
fn exit_code(e: &anyhow::Error) -> ExitCode {
    if e.downcast_ref::<commands::NotSynced>().is_some() {
        ExitCode::from(commands::NotSynced::EXIT)
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::{Cli, Command};

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
}
