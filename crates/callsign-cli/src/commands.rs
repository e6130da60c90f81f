//! One function per command; each opens the engine, acts, and prints through [`crate::render`].
use std::io::Read;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use callsign_core::dto::{TaskPatch, TaskStatus};
use callsign_core::{Role, LOCAL_PROJECT};
use callsign_sync::paths::default_data_dir;
use callsign_sync::reason::sync_problem;
use callsign_sync::{Engine, NewTaskInput, TaskQuery, Token};

use crate::render::{self, Out};
use crate::{Cli, Command, GitCommand, ProjectCommand};

/// How long a git hook may take before it gives up (a commit is never held longer).
const HOOK_LIMIT: Duration = Duration::from_secs(10);

pub async fn run(cli: Cli) -> Result<()> {
    // A data dir named on the command line (or in the environment) is written into git hooks.
    let explicit_dir = cli
        .data_dir
        .as_deref()
        .map(std::path::absolute)
        .transpose()?;
    let dir = match cli.data_dir {
        Some(d) => d,
        None => default_data_dir().ok_or_else(|| {
            anyhow!("no home directory: pass --data-dir or set CALLSIGN_DATA_DIR")
        })?,
    };
    if let Command::Git {
        command: GitCommand::Hook { name, args },
    } = &cli.command
    {
        // A hook never fails or holds up a commit: whatever goes wrong is one line, and one that
        // has not finished in HOOK_LIMIT gives up (a write cut short is rolled back).
        let hook = name.clone();
        std::thread::spawn(move || {
            std::thread::sleep(HOOK_LIMIT);
            eprintln!(
                "callsign: git hook {hook}: gave up after {} s",
                HOOK_LIMIT.as_secs()
            );
            std::process::exit(0);
        });
        let done = Engine::open(&dir)
            .with_context(|| format!("opening {}", dir.display()))
            .and_then(|engine| crate::git::hook(&engine, name, args));
        if let Err(e) = done {
            eprintln!(
                "callsign: git hook {name}: {}",
                render::safe_block(&format!("{e:#}"))
            );
        }
        return Ok(());
    }
    let engine = Engine::open(&dir).with_context(|| format!("opening {}", dir.display()))?;
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let out = Out {
        json: cli.json,
        colour: render::colour(
            terminal,
            std::env::var("NO_COLOR").ok().as_deref(),
            std::env::var("CLICOLOR_FORCE").ok().as_deref(),
        ),
        width: crate::table::limit(std::env::var("COLUMNS").ok().as_deref(), || {
            let (terminal_size::Width(w), _) =
                terminal_size::terminal_size_of(std::io::stdout()).filter(|_| terminal)?;
            Some(usize::from(w))
        }),
    };
    match cli.command {
        Command::Login {
            server,
            token,
            token_stdin,
            device,
        } => {
            let token = login_token(token, token_stdin)?;
            let report = engine.login(&server, token, device).await?;
            out.login(&server, &report)
        }
        Command::Join {
            server,
            code,
            name,
            device,
        } => {
            let report = engine.join(&server, &code, &name, device).await?;
            out.joined(&server, &report)
        }
        Command::Invite { owner, hours } => {
            let role = if owner { Role::Owner } else { Role::Member };
            let invite = engine.invite(role, hours).await?;
            out.invite(&invite)
        }
        Command::Assign { task, name, nobody } => {
            let name = match (name, nobody) {
                (Some(n), false) => Some(n),
                (None, true) => None,
                _ => {
                    return Err(anyhow!(
                        "assign: give a member's name (`assign DEV-12 @bob`) or --nobody"
                    ))
                }
            };
            let t = engine.assign(&task, name.as_deref())?;
            out.task(&engine, &t)
        }
        Command::Standup { since } => {
            let report = engine.standup(since.as_deref())?;
            out.standup(&report, engine.me()?.as_ref())
        }
        Command::Members => {
            let members = engine.members().await?;
            out.members(&members, engine.me()?.as_ref())
        }
        Command::Add {
            text,
            project,
            tags,
            notes,
            due,
            priority,
            parent,
        } => {
            let due = due
                .as_deref()
                .map(|d| engine.parse_due(d))
                .transpose()?
                .flatten();
            let (words, assignee) = engine.take_assignee(&text)?;
            let task = engine.create(NewTaskInput {
                description: words.join(" "),
                project,
                notes: notes.unwrap_or_default(),
                tags,
                due,
                priority: priority.and_then(|p| p.0),
                parent,
                assignee,
            })?;
            out.task(&engine, &task)
        }
        Command::Next {
            project,
            filter,
            report,
        } => {
            let f = engine.parse_filter(&filter_words(filter, project, false, false))?;
            let mut tasks = if report.sort.is_some() {
                // `next`'s tasks (pending, not blocked) sorted from capture order, as `list` is,
                // so that ties keep it: read in that order, not leaf-first and put back.
                let mut tasks = engine.filter(&f, &[TaskStatus::Pending])?;
                tasks.retain(|t| t.status == TaskStatus::Pending && !t.is_blocked());
                tasks
            } else {
                let mut tasks = engine.next(&TaskQuery::default())?;
                tasks.retain(|t| callsign_sync::matches_filter(&f, t, &[TaskStatus::Pending]));
                tasks
            };
            if report.mine {
                tasks = engine.mine(tasks)?;
            }
            crate::report::sort(report.sort, &mut tasks);
            out.list(&engine, &tasks, &report.columns)
        }
        Command::List {
            all,
            failed,
            project,
            filter,
            report,
        } => {
            let f = engine.parse_filter(&filter_words(filter, project, all, failed))?;
            let mut tasks = engine.filter(&f, &[TaskStatus::Pending])?;
            if report.mine {
                tasks = engine.mine(tasks)?;
            }
            crate::report::sort(report.sort, &mut tasks);
            out.list(&engine, &tasks, &report.columns)
        }
        Command::Modify { args } => {
            let (refs, words) = split_refs(args);
            if refs.is_empty() {
                return Err(anyhow!(
                    "modify: name the tasks first (a key such as DEV-12, a UUID or a ~id), \
                     then the change"
                ));
            }
            let change = engine.parse_modification(&words)?;
            let tasks = engine.modify(&refs, &change)?;
            match tasks.as_slice() {
                [one] => out.task(&engine, one),
                many => out.list(&engine, many, &[]),
            }
        }
        Command::Import {
            from: Some(format),
            file: Some(file),
            project,
            keep_numbers,
            dry_run,
            timeout,
            ..
        } => {
            let args = crate::import_from::Args {
                format,
                file,
                keep_numbers,
                project,
                dry_run,
                timeout: Duration::from_secs(timeout),
            };
            crate::import_from::run(&engine, &out, args).await
        }
        Command::Import { jsonl, project, .. } => {
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .context("reading stdin")?;
            let due = |d: &str| Ok(engine.parse_due(d)?);
            let tasks = crate::import::parse(&input, jsonl, project.as_deref(), &due)?;
            let uuids = engine.create_many(tasks).context("nothing was imported")?;
            out.imported(&uuids)
        }
        Command::Show { task } => out.task(&engine, &engine.get(&task)?),
        Command::Done { task } => out.task(&engine, &engine.complete(&task)?),
        Command::Delete { task } => out.task(&engine, &engine.delete(&task)?),
        Command::Reopen { task } => out.task(&engine, &engine.reopen(&task)?),
        Command::Annotate { task, text } => {
            out.task(&engine, &engine.annotate(&task, &text.join(" "))?)
        }
        Command::Edit {
            task,
            description,
            notes,
            project,
            due,
            priority,
        } => {
            let patch = TaskPatch {
                description,
                notes,
                due: due.as_deref().map(|d| engine.parse_due(d)).transpose()?,
                priority: priority.map(|p| p.0),
                ..TaskPatch::default()
            };
            if patch.is_empty() && project.is_none() {
                return Err(anyhow!(
                    "nothing to change: pass --description, --notes, --due, --priority or \
                     --project"
                ));
            }
            let t = engine.edit_and_move(&task, project.as_deref(), patch)?;
            out.task(&engine, &t)
        }
        Command::Move { task, project } => out.task(&engine, &engine.set_project(&task, &project)?),
        Command::Resolve {
            task,
            n,
            restore,
            keep: _,
        } => {
            let t = engine.get(&task)?;
            let i = match (n, t.conflicts.len()) {
                (_, 0) => return Err(anyhow!("{} has no conflicts", t.label())),
                (Some(n), len) if n == 0 || n > len => {
                    return Err(anyhow!("{} has conflicts 1 to {len}, not {n}", t.label()))
                }
                (Some(n), _) => n - 1,
                (None, 1) => 0,
                (None, len) => {
                    return Err(anyhow!(
                        "{} has {len} conflicts: say which (`callsign show {}` lists them)",
                        t.label(),
                        t.label()
                    ))
                }
            };
            let uuid = t.uuid.to_string();
            let after = if restore {
                engine.restore_conflict(&uuid, i)?
            } else {
                engine.dismiss_conflicts(&uuid, t.conflicts[i].field)?
            };
            out.resolved(&engine, &after, restore)
        }
        Command::Undo => out.undone(&engine, &engine.undo()?),
        Command::Branch { task, print } => {
            let name = crate::git::branch_for(&engine, &task)?;
            let created = !print && crate::git::switch_to(&name)?;
            out.branch(&name, print, created)
        }
        Command::Git { command } => {
            let installed = matches!(command, GitCommand::Install);
            let (dir, hooks) = match command {
                GitCommand::Install => crate::git::install(explicit_dir.as_deref())?,
                GitCommand::Uninstall => crate::git::uninstall()?,
                GitCommand::Hook { .. } => unreachable!("handled before the engine opens"),
            };
            out.hooks(installed, &dir, &hooks)
        }
        Command::Retry { task } => out.task(&engine, &engine.retry(&task)?),
        Command::Discard { task } => {
            let before = engine.get(&task)?;
            let after = engine.discard(&task)?;
            out.discarded(&engine, &before, after.as_ref())
        }
        Command::Inbox {
            send_to: None,
            report,
        } => {
            let mut tasks = engine.query(&TaskQuery {
                project: Some(LOCAL_PROJECT.into()),
                ..TaskQuery::default()
            })?;
            if report.mine {
                tasks = engine.mine(tasks)?;
            }
            crate::report::sort(report.sort, &mut tasks);
            out.list(&engine, &tasks, &report.columns)
        }
        Command::Inbox {
            send_to: Some(project),
            report: _,
        } => {
            let n = engine.send_inbox(&project)?;
            out.inbox_sent(n, &project)
        }
        Command::Project {
            command:
                ProjectCommand::Rename {
                    from,
                    to,
                    allow_similar,
                },
        } => {
            let project = engine
                .rename_project(&from, &to, allow_similar)
                .await
                .map_err(|e| Coded::wrap(e.code(), rename_refused(&from, &to, e)))?;
            out.project_renamed(&from, &project)
        }
        Command::Project {
            command:
                ProjectCommand::Add {
                    name,
                    prefix,
                    allow_similar,
                },
        } => {
            let project = engine
                .create_project(&name, &prefix, allow_similar)
                .await
                .map_err(|e| Coded::wrap(e.code(), project_refused(&prefix, e)))?;
            out.project_added(&project)
        }
        Command::Project {
            command: ProjectCommand::List,
        } => {
            let list = engine.projects().await?;
            out.projects(&list)
        }
        Command::Completions { .. } => unreachable!("answered before the store is opened"),
        Command::Sync { timeout } => {
            let status = engine
                .sync_until_drained(Duration::from_secs(timeout))
                .await
                .map_err(|e| sync_failed(&engine, &e))?;
            out.synced(&status)
        }
        Command::Status => out.status(&engine),
        Command::Watch => watch(&engine, &out).await,
    }
}

/// The filter words of `list`/`next` with their flags folded in (`--project P` is `#P`,
/// `--all` `status:all`, `--failed` `status:failed`).
fn filter_words(
    mut words: Vec<String>,
    project: Option<String>,
    all: bool,
    failed: bool,
) -> Vec<String> {
    words.extend(project.map(|p| format!("project:{p}")));
    if all {
        words.push("status:all".into());
    }
    if failed {
        words.push("status:failed".into());
    }
    words
}

/// `modify`'s arguments: the leading task references, then the change. A reference is a
/// UUID, a `~id`, or a key written with its `-` (`DEV-12`, `dev-4.1`), so a change that starts
/// with a plain word (`mp3 player`) is not taken for one; `--` ends the references.
fn split_refs(args: Vec<String>) -> (Vec<String>, Vec<String>) {
    let mut refs = Vec::new();
    let mut rest = args.into_iter();
    for a in rest.by_ref() {
        if a == "--" {
            break;
        }
        if is_ref(&a) {
            refs.push(a);
        } else {
            let mut words = vec![a];
            words.extend(rest);
            return (refs, words);
        }
    }
    (refs, rest.collect())
}

fn is_ref(a: &str) -> bool {
    use callsign_core::TaskRef;
    match TaskRef::parse(a) {
        Ok(TaskRef::Uuid(_)) => true,
        Ok(TaskRef::Key(_)) => a.contains('-') && !a.starts_with('-'),
        Err(_) => a
            .strip_prefix('~')
            .is_some_and(|h| h.len() >= 8 && h.chars().all(|c| c.is_ascii_hexdigit() || c == '-')),
    }
}

/// The token for `login`: the first line of stdin with `--token-stdin`, else the argument (or
/// `CALLSIGN_TOKEN`, which clap reads into it).
fn login_token(arg: Option<String>, stdin: bool) -> Result<Token> {
    let token = if stdin {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .context("reading the token from stdin")?;
        line.trim().to_owned()
    } else {
        arg.map(|t| t.trim().to_owned()).unwrap_or_default()
    };
    if token.is_empty() {
        return Err(anyhow!(
            "no token: pipe it in with --token-stdin (it then never shows in `ps` or the shell \
             history), set CALLSIGN_TOKEN, or pass --token"
        ));
    }
    Ok(Token::new(token))
}

/// Why `sync` stopped, in plain words first, with what stays on this device and the detail.
fn sync_failed(engine: &Engine, e: &callsign_sync::Error) -> anyhow::Error {
    let plain = sync_problem(Some(e.code()), &e.to_string());
    let status = engine.status().unwrap_or_default();
    let mut msg = plain.summary;
    let queued = status.pending + status.in_flight;
    if queued > 0 {
        msg.push_str(&format!(
            "\n  {queued} task(s) stay queued; run `callsign sync` again later"
        ));
    }
    if status.local > 0 {
        msg.push_str(&format!(
            "\n  {} task(s) are kept in this device's {LOCAL_PROJECT} (`callsign inbox`)",
            status.local
        ));
    }
    if !matches!(e, callsign_sync::Error::NotLoggedIn) {
        msg.push_str(&format!("\n  detail: {}", plain.detail));
    }
    if queued > 0 {
        anyhow::Error::new(NotSynced(msg))
    } else {
        anyhow::Error::new(Coded {
            code: e.code(),
            message: msg,
        })
    }
}

/// An error whose command printed its one JSON document already (`import --from`'s summary
/// lists what failed): only the words go to stderr, and the exit code.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Reported {
    pub message: String,
    pub exit: u8,
}

/// A command that waits for the server stopped with work saved on this device but not yet
/// acknowledged by the server: exit code [`NotSynced::EXIT`], so a script can tell "try again
/// later, nothing is lost" from a refusal.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotSynced(pub String);

impl NotSynced {
    pub const EXIT: u8 = 3;
}

/// An engine error explained in plain words for people that keeps the engine's machine code
/// (`prefix_taken`, `unreachable`, …) for `--json`'s error object.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Coded {
    pub code: &'static str,
    pub message: String,
}

impl Coded {
    fn wrap(code: &'static str, explained: anyhow::Error) -> anyhow::Error {
        anyhow::Error::new(Coded {
            code,
            message: format!("{explained:#}"),
        })
    }
}

/// Why `project add` did nothing, in plain words for each refusal.
fn project_refused(prefix: &str, e: callsign_sync::Error) -> anyhow::Error {
    use callsign_core::ErrorCode;
    use callsign_sync::Error;
    let prefix = prefix.trim().to_ascii_uppercase();
    let p = match e {
        Error::Server(p) => p,
        Error::Unreachable { url, reason } => {
            return anyhow!(
                "cannot create {prefix} now: the server at {url} cannot be reached ({reason}); \
                 a project is made on the server, and nothing was changed"
            )
        }
        other => return other.into(),
    };
    let detail = render::safe(&p.detail);
    match p.code {
        ErrorCode::PrefixTaken => anyhow!(
            "cannot create {prefix}: {detail}\n  a prefix names one project for good: choose \
             another (`callsign project list` shows the account's)"
        ),
        ErrorCode::PrefixSoundsAlike => anyhow!("cannot create {prefix}: {detail}\n  {ALIKE_HINT}"),
        _ => anyhow!("cannot create {prefix}: {detail}"),
    }
}

/// What to do about `prefix_sounds_alike`, after the server's detail (which names the project).
const ALIKE_HINT: &str = "choose a prefix that sounds different, or add --allow-similar to take \
                          this one anyway";

fn rename_refused(from: &str, to: &str, e: callsign_sync::Error) -> anyhow::Error {
    use callsign_core::ErrorCode;
    use callsign_sync::Error;
    let (from, to) = (
        from.trim().to_ascii_uppercase(),
        to.trim().to_ascii_uppercase(),
    );
    let p = match e {
        Error::Server(p) => p,
        Error::Unreachable { url, reason } => {
            return anyhow!(
                "cannot rename {from} now: the server at {url} cannot be reached ({reason}); a \
                 rename needs the server, and nothing was changed"
            )
        }
        other => return other.into(),
    };
    let detail = render::safe(&p.detail);
    match p.code {
        ErrorCode::PrefixTaken => anyhow!(
            "cannot rename {from} to {to}: {detail}\n  a prefix names one project for good (its \
             keys keep finding their tasks): choose another"
        ),
        ErrorCode::PrefixSoundsAlike => {
            anyhow!("cannot rename {from} to {to}: {detail}\n  {ALIKE_HINT}")
        }
        ErrorCode::InvalidPrefix => anyhow!("cannot rename {from} to {to}: {detail}"),
        ErrorCode::ProjectNotFound => anyhow!(
            "no project {from} on the server: {detail}\n  `callsign login` lists the projects"
        ),
        _ => anyhow!(
            "cannot rename {from} to {to}: {}",
            render::safe(&p.to_string())
        ),
    }
}

/// Runs the loop until Ctrl-C / SIGTERM, printing each status change (JSON lines with --json).
async fn watch(engine: &Engine, out: &Out) -> Result<()> {
    let mut events = engine.subscribe();
    engine.start();
    let stop = shutdown_signal();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            ev = events.recv() => match ev {
                Ok(ev) => out.event(&ev)?,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            },
        }
    }
    engine.stop().await;
    render::flush()
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::split_refs;

    fn split(args: &[&str]) -> (Vec<String>, Vec<String>) {
        split_refs(args.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn tasks_come_first_and_the_first_other_word_starts_the_change() {
        let (refs, words) = split(&["DEV-12", "dev-4.1", "~0a1b2c3d", "Fix", "DEV-3", "+bug"]);
        assert_eq!(refs, ["DEV-12", "dev-4.1", "~0a1b2c3d"]);
        assert_eq!(words, ["Fix", "DEV-3", "+bug"]);
        let (refs, words) = split(&["67e55044-10b1-426f-9247-bb680e5fe0c8", "mp3", "player"]);
        assert_eq!(refs.len(), 1);
        assert_eq!(
            words,
            ["mp3", "player"],
            "a key written without its dash is a word"
        );
        let (refs, words) = split(&["DEV-1", "--", "DEV-2", "fallout"]);
        assert_eq!(
            (refs, words),
            (vec!["DEV-1".into()], vec!["DEV-2".into(), "fallout".into()])
        );
        let (refs, words) = split(&["-ui", "DEV-1"]);
        assert!(refs.is_empty());
        assert_eq!(words, ["-ui", "DEV-1"]);
    }
}
