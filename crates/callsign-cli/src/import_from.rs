//! `callsign import --from FORMAT FILE`: another tracker's export in, every key kept. The
//! engine reads, plans and queues it (`Engine::import_export`, which says what needs the
//! server); this prints the dry run's plan, or syncs with a progress bar on a terminal and
//! ends with a summary.
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use callsign_sync::{
    Engine, ImportClash, ImportFormat as Format, ImportOutcome, ImportProgress,
    ImportReport as Report, ImportRequest,
};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::commands::{NotSynced, Reported};
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
    let outcome = engine
        .import_export(ImportRequest {
            format: args.format,
            bytes,
            keep_numbers: args.keep_numbers,
            project: args.project.clone(),
            dry_run: args.dry_run,
        })
        .await
        .map_err(|e| anyhow!("{}: {e}", args.file.display()))?;
    if args.dry_run {
        return dry_run(out, &args, &outcome);
    }
    let synced = sync_with_progress(engine, &outcome.uuids, args.timeout).await;
    let progress = engine.import_progress(&outcome.uuids)?;
    print_summary(out, &args, &outcome, &progress)?;
    let (message, exit) = match synced {
        Err(e) => (
            format!(
                "{} task(s) still wait for their keys: {e}; they stay queued, run `callsign \
                 sync` again later",
                progress.waiting
            ),
            NotSynced::EXIT,
        ),
        Ok(()) if progress.failed.is_empty() => return Ok(()),
        Ok(()) => (
            format!(
                "the server refused {} task(s); `callsign list status:failed` lists them",
                progress.failed.len()
            ),
            1,
        ),
    };
    // With --json the summary is the one document on stdout; it lists what failed.
    if out.json {
        return Err(anyhow::Error::new(Reported { message, exit }));
    }
    if exit == NotSynced::EXIT {
        return Err(anyhow::Error::new(NotSynced(message)));
    }
    Err(anyhow!(message))
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

fn print_summary(
    out: &Out,
    args: &Args,
    outcome: &ImportOutcome,
    p: &ImportProgress,
) -> Result<()> {
    let present = outcome.queued.present;
    if out.json {
        let failed: Vec<Value> = p
            .failed
            .iter()
            .map(|(k, e)| json!({ "key": k, "error": e }))
            .collect();
        return crate::render::print_json(&json!({
            "imported": p.total,
            "already_here": present,
            "keyed": p.keyed,
            "waiting": p.waiting,
            "failed": failed,
            "plan": &outcome.report,
            "clashes": &outcome.clashes,
        }));
    }
    println!(
        "imported {} task(s) from {} ({}): {} keyed, {} already here before{}{}",
        p.total,
        args.format.as_str(),
        args.file.display(),
        p.keyed,
        present,
        if p.waiting > 0 {
            format!(", {} waiting for the server", p.waiting)
        } else {
            String::new()
        },
        if p.failed.is_empty() {
            String::new()
        } else {
            format!(", {} refused", p.failed.len())
        }
    );
    print_report(&outcome.report);
    print_clashes(&outcome.clashes);
    for (key, why) in p.failed.iter().take(20) {
        println!("  refused {key}: {why}");
    }
    if p.failed.len() > 20 {
        println!("  … and {} more", p.failed.len() - 20);
    }
    Ok(())
}

fn dry_run(out: &Out, args: &Args, outcome: &ImportOutcome) -> Result<()> {
    let (report, online) = (&outcome.report, outcome.online);
    if out.json {
        return crate::render::print_json(&json!({
            "dry_run": true,
            "server_answered": online,
            "plan": report,
            "clashes": &outcome.clashes,
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
    print_clashes(&outcome.clashes);
    Ok(())
}

/// Keys of the file that name another task here: those issues are refused, the rest go ahead.
fn print_clashes(clashes: &[ImportClash]) {
    if clashes.is_empty() {
        return;
    }
    let listed: Vec<String> = clashes
        .iter()
        .take(20)
        .map(|c| format!("{} (is {})", c.key, c.task))
        .collect();
    println!(
        "  {} key(s) name another task here already, and those issues will be refused: {}{}",
        clashes.len(),
        listed.join(", "),
        if clashes.len() > 20 { " …" } else { "" }
    );
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

/// `--from`'s value.
pub fn format_arg(s: &str) -> std::result::Result<Format, String> {
    Format::parse(s).ok_or_else(|| "one of jira, linear, github, taskwarrior".to_owned())
}
