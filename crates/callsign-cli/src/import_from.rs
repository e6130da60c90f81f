//! `callsign import --from FORMAT FILE`: another tracker's export in, every key kept.
//!
//! The file is read and planned before anything is made ([`callsign_import`]): `--dry-run`
//! stops there and prints the plan, offline too (from what this device last heard of the
//! team). A real import needs the server once, to confirm the caller is an owner (an import
//! claims keys in the account), to read the team and its projects, and to make the projects
//! that kept numbers need. Then every task is queued here in one transaction under a UUID and
//! an idempotency key derived from the source, so running the same file again makes nothing
//! new and a run cut short goes on where it stopped; the sync that follows shows its progress
//! on a terminal, and a summary ends it.
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use callsign_core::dto::Project;
use callsign_core::Role;
use callsign_import::plan::{self, Member, Options, Report};
use callsign_import::{build, Format, SourceIssue};
use callsign_sync::{Engine, ImportTask, LocalTask, SyncState, TaskFilter};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::commands::NotSynced;
use crate::render::Out;

/// What `import --from` was asked.
pub struct Args {
    pub format: Format,
    pub file: PathBuf,
    pub keep_numbers: bool,
    pub project: Option<String>,
    pub dry_run: bool,
    /// How long the sync after queueing may take.
    pub timeout: Duration,
}

pub async fn run(engine: &Engine, out: &Out, args: Args) -> Result<()> {
    let bytes =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let issues = callsign_import::parse(args.format, &bytes)
        .map_err(|e| anyhow!("{}: {e}", args.file.display()))?;
    // Online when the server answers; the dry run makes do with what this device knows.
    let online = engine.members().await;
    let (members, projects) = match &online {
        Ok(m) => (m.clone(), engine.projects().await?),
        Err(e) if !args.dry_run => {
            return Err(anyhow!(
                "an import needs the server once, to check you are an owner and to read the \
                 team and its projects; it did not answer ({e}). `--dry-run` works offline."
            ))
        }
        Err(_) => (
            engine.known_members()?.unwrap_or_default(),
            engine.projects().await?,
        ),
    };
    if online.is_ok() && !args.dry_run {
        owner_only(engine, &members)?;
    }
    let opts = Options {
        keep_numbers: args.keep_numbers,
        project: args.project.clone(),
    };
    let team: Vec<Member> = members
        .iter()
        .map(|m| Member {
            name: m.name.clone(),
            email: None,
        })
        .collect();
    let prefixes: Vec<String> = projects
        .iter()
        .flat_map(|p| std::iter::once(&p.prefix).chain(&p.previous_prefixes))
        .cloned()
        .collect();
    let resumable = resumable(engine, args.format, &issues, &projects)?;
    let plan = plan::plan(&issues, &opts, &team, &prefixes, &resumable)?;
    if args.dry_run {
        return dry_run(out, &args, &plan.report, online.is_ok());
    }
    for p in plan.report.projects.iter().filter(|p| p.new) {
        engine
            .create_project(&p.prefix, &p.prefix, true)
            .await
            .with_context(|| format!("making project {}", p.prefix))?;
    }
    let due = |d: chrono::NaiveDate| engine.parse_due(&d.to_string()).ok().flatten();
    let made = build::creates(args.format, &issues, &plan, &due);
    let uuids: Vec<Uuid> = made.iter().map(|m| m.uuid).collect();
    let items = made
        .into_iter()
        .map(|m| ImportTask {
            uuid: m.uuid,
            idempotency_key: m.idempotency_key,
            body: m.body,
        })
        .collect();
    let queued = engine.import(items).context("nothing was imported")?;
    let synced = sync_with_progress(engine, &uuids, args.timeout).await;
    let tasks = uuids
        .iter()
        .map(|u| engine.get(&u.to_string()))
        .collect::<callsign_sync::Result<Vec<LocalTask>>>()?;
    let summary = Summary::of(&tasks, queued.present);
    summary.print(out, &args, &plan.report)?;
    if let Err(e) = synced {
        return Err(anyhow::Error::new(NotSynced(format!(
            "{} task(s) still wait for their keys: {e}; they stay queued, run `callsign sync` \
             again later",
            summary.waiting
        ))));
    }
    if summary.failed.is_empty() {
        Ok(())
    } else {
        Err(anyhow!(
            "the server refused {} task(s); `callsign list status:failed` lists them",
            summary.failed.len()
        ))
    }
}

/// Refused at once unless this device's member is an owner.
fn owner_only(engine: &Engine, members: &[callsign_core::dto::Member]) -> Result<()> {
    let me = engine.me()?;
    let role = me
        .as_ref()
        .and_then(|me| members.iter().find(|m| m.name == me.name))
        .map(|m| m.role);
    match (me, role) {
        (Some(me), Some(r)) if r != Role::Owner => Err(anyhow!(
            "only the team's owners import (an import claims keys in the account); {} is a \
             member: ask an owner",
            me.name
        )),
        _ => Ok(()),
    }
}

/// The prefixes of projects that hold tasks of this very file (a run before, cut short or
/// not): kept numbers may go on there. A number another task took meanwhile is refused by the
/// server for its issue alone (`key_taken`), never doubled.
fn resumable(
    engine: &Engine,
    format: Format,
    issues: &[SourceIssue],
    projects: &[Project],
) -> Result<Vec<String>> {
    let ours: BTreeSet<Uuid> = issues.iter().map(|i| build::uuid_of(format, i)).collect();
    let holding: BTreeSet<String> = engine
        .list(TaskFilter { all: true })?
        .into_iter()
        .filter(|t| ours.contains(&t.uuid))
        .map(|t| t.project)
        .collect();
    Ok(projects
        .iter()
        .filter(|p| holding.contains(&p.prefix))
        .map(|p| p.prefix.clone())
        .collect())
}

/// Syncs until every imported task has its key (or is refused), showing how many have on a
/// terminal.
async fn sync_with_progress(
    engine: &Engine,
    uuids: &[Uuid],
    timeout: Duration,
) -> callsign_sync::Result<()> {
    let total = uuids.len() as u64;
    let bar = std::io::IsTerminal::is_terminal(&std::io::stderr()).then(|| {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} keyed {pos}/{len} [{bar:30}] {elapsed_precise} {msg}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        bar
    });
    let drain = engine.sync_until_drained(timeout);
    tokio::pin!(drain);
    let result = loop {
        tokio::select! {
            r = &mut drain => break r,
            () = tokio::time::sleep(Duration::from_millis(200)) => {
                if let Some(bar) = &bar {
                    if let Ok(s) = engine.status() {
                        let waiting = s.pending + s.in_flight;
                        bar.set_position(total.saturating_sub(waiting));
                    }
                }
            }
        }
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    result.map(|_| ())
}

/// How the imported tasks stand at the end.
struct Summary {
    total: usize,
    keyed: usize,
    present: usize,
    waiting: usize,
    failed: Vec<(String, String)>,
}

impl Summary {
    fn of(tasks: &[LocalTask], present: usize) -> Summary {
        let mut s = Summary {
            total: tasks.len(),
            keyed: 0,
            present,
            waiting: 0,
            failed: Vec::new(),
        };
        for t in tasks {
            match t.sync_state {
                SyncState::Synced => s.keyed += 1,
                SyncState::Provisional => s.waiting += 1,
                SyncState::Failed => s.failed.push((
                    t.origin
                        .as_ref()
                        .and_then(|o| o.key.clone())
                        .unwrap_or_else(|| t.label()),
                    t.last_error.clone().unwrap_or_default(),
                )),
            }
        }
        s
    }

    fn print(&self, out: &Out, args: &Args, report: &Report) -> Result<()> {
        if out.json {
            let failed: Vec<Value> = self
                .failed
                .iter()
                .map(|(k, e)| json!({ "key": k, "error": e }))
                .collect();
            return crate::render::print_json(&json!({
                "imported": self.total,
                "already_here": self.present,
                "keyed": self.keyed,
                "waiting": self.waiting,
                "failed": failed,
                "plan": report_json(report),
            }));
        }
        println!(
            "imported {} task(s) from {} ({}): {} keyed, {} already here before{}{}",
            self.total,
            args.format.as_str(),
            args.file.display(),
            self.keyed,
            self.present,
            if self.waiting > 0 {
                format!(", {} waiting for the server", self.waiting)
            } else {
                String::new()
            },
            if self.failed.is_empty() {
                String::new()
            } else {
                format!(", {} refused", self.failed.len())
            }
        );
        print_report(report);
        for (key, why) in self.failed.iter().take(20) {
            println!("  refused {key}: {why}");
        }
        if self.failed.len() > 20 {
            println!("  … and {} more", self.failed.len() - 20);
        }
        Ok(())
    }
}

fn dry_run(out: &Out, args: &Args, report: &Report, online: bool) -> Result<()> {
    if out.json {
        return crate::render::print_json(&json!({
            "dry_run": true,
            "server_answered": online,
            "plan": report_json(report),
        }));
    }
    let total = report.open + report.done + report.cancelled;
    println!(
        "dry run: {total} issue(s) in {} would be imported ({} open, {} done, {} cancelled); \
         nothing was made",
        args.file.display(),
        report.open,
        report.done,
        report.cancelled
    );
    if !online {
        println!(
            "  the server did not answer: this plan uses the team and projects this device \
             last heard of"
        );
    }
    print_report(report);
    Ok(())
}

/// The plan's facts, a line each.
fn print_report(report: &Report) {
    for p in &report.projects {
        let made = if p.new { "new project" } else { "project" };
        match p.highest {
            Some(h) => {
                println!(
                    "  {made} {}: {} task(s) keep their numbers; the next new task is {}-{}",
                    p.prefix,
                    p.tasks,
                    p.prefix,
                    h + 1
                );
                if p.unused_count > 0 {
                    let listed: Vec<String> = p
                        .unused
                        .iter()
                        .map(|n| format!("{}-{n}", p.prefix))
                        .collect();
                    let more = p.unused_count - p.unused.len() as u64;
                    println!(
                        "    {} number(s) the source never had stay unused: {}{}",
                        p.unused_count,
                        listed.join(", "),
                        if more > 0 {
                            format!(" … and {more} more")
                        } else {
                            String::new()
                        }
                    );
                }
            }
            None => println!(
                "  {made} {}: {} task(s) take its next numbers; their old keys still find them",
                p.prefix, p.tasks
            ),
        }
    }
    if !report.unmapped_assignees.is_empty() {
        let names: Vec<String> = report
            .unmapped_assignees
            .iter()
            .map(|(n, c)| format!("{n} ({c})"))
            .collect();
        println!("  left unassigned, no member matches: {}", names.join(", "));
    }
    if !report.missing_parents.is_empty() {
        println!(
            "  imported on their own (their parent is not in the file): {}",
            report.missing_parents.join(", ")
        );
    }
}

fn report_json(report: &Report) -> Value {
    let projects: Vec<Value> = report
        .projects
        .iter()
        .map(|p| {
            json!({
                "prefix": p.prefix,
                "new": p.new,
                "tasks": p.tasks,
                "highest_kept": p.highest,
                "unused_count": p.unused_count,
                "unused": p.unused,
            })
        })
        .collect();
    json!({
        "open": report.open,
        "done": report.done,
        "cancelled": report.cancelled,
        "projects": projects,
        "unmapped_assignees": report.unmapped_assignees,
        "missing_parents": report.missing_parents,
    })
}

/// `--from`'s value.
pub fn format_arg(s: &str) -> std::result::Result<Format, String> {
    Format::parse(s).ok_or_else(|| "one of jira, linear, github, taskwarrior".to_owned())
}
