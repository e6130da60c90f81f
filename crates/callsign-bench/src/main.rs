//! `callsign-bench`: the figures of issues 6, 26 and 42 on loopback, each beside its baseline
//! measured in the same run, as a Markdown table on stdout and JSON in `--json`; the `pg-*`
//! sections (issue 21) measure the same on a throwaway PostgreSQL (fsync on) that the tool
//! starts and stops; `import` (issue 42) times the `callsign` CLI importing a Jira export;
//! `git-hook` (issue 43) what the git hooks add to a commit.
//!
//! `cargo run --release -p callsign-bench -- [--runs 3] [--quick] [--only drain,lookup]
//! [--json target/bench.json]`
mod figures;
mod git_hook;
mod import;
mod import_phases;
mod jira_export;
mod load;
mod metrics;
mod pg;
mod pg_drain;
mod pg_throughput;
mod pg_waits;
mod proc;
mod sections;
mod server;
mod soak;
mod stats;
mod tcalone;
mod teammates;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Parser;
use server::Backend;
use stats::{table, Figure};

const SECTIONS: [&str; 12] = [
    "drain",
    "throughput",
    "create-to-key",
    "local",
    "lookup",
    "memory",
    "teammates",
    "import",
    "git-hook",
    "pg-throughput",
    "pg-create-to-key",
    "pg-drain",
];

#[derive(Parser)]
#[command(about = "Callsign benchmarks on 127.0.0.1, each beside its baseline")]
struct Args {
    /// Runs per figure (median and spread are over these).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Smaller counts: a smoke check, not the figures.
    #[arg(long)]
    quick: bool,
    /// Only these sections (comma-separated): drain, throughput, create-to-key, local, lookup,
    /// memory, teammates, import, git-hook, pg-throughput, pg-create-to-key, pg-drain (the pg-* ones start a
    /// throwaway PostgreSQL with fsync on, stopped at the end).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Concurrent clients in the throughput sections (the figure is at 64).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=1024))]
    clients: u16,
    /// Also write the figures as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Instead of the figures: run the server at a fixed data size this long (e.g. 30m, 1h)
    /// with steady edits, replays, pulls and creates, sampling its RSS and open files.
    #[arg(long, value_parser = humantime::parse_duration)]
    soak: Option<std::time::Duration>,
    /// Soak: concurrent clients.
    #[arg(long, default_value_t = 8)]
    soak_clients: usize,
    /// Soak: tasks in the account.
    #[arg(long, default_value_t = 3_000)]
    soak_tasks: usize,
    /// Soak: the server's idempotency window (short, so the purge runs throughout).
    #[arg(long, default_value = "2m")]
    soak_window: String,
    /// Write the `import` section's Jira export (10,000 issues; 1,000 with --quick) here and
    /// stop: to import it by hand.
    #[arg(long, value_name = "FILE")]
    write_jira_export: Option<PathBuf>,
    /// Internal: open an engine on this store, list it, print RSS before/after.
    #[arg(long, hide = true)]
    hold: Option<PathBuf>,
}

fn med(xs: &[f64]) -> f64 {
    stats::percentile(xs, 50.0)
}

struct Sizes {
    runs: usize,
    backlog: usize,
    create_to_key: usize,
    local: usize,
    big: usize,
    clients: usize,
    /// Sequential PUTs timed for the PostgreSQL drain's baseline.
    pg_puts: usize,
    /// Creates spread over the team's devices in the teammates section.
    team_creates: usize,
    /// Held change requests in the teammates section, and how long their CPU is measured.
    held: usize,
    held_window: std::time::Duration,
    /// Issues in the `import` section's Jira export, and the `callsign add` processes timed for
    /// its baseline.
    import: usize,
    import_adds: usize,
    /// Commits timed per run and device in the `git-hook` section.
    git_commits: usize,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let a = Args::parse();
    if let Some(dir) = &a.hold {
        let (before, after) = figures::hold(dir)?;
        println!("{before} {after}");
        return Ok(());
    }
    if let Some(duration) = a.soak {
        return soak::run(soak::Plan {
            duration,
            clients: a.soak_clients.max(1),
            tasks: a.soak_tasks.max(1),
            sample: std::time::Duration::from_secs(5),
            window: a.soak_window.clone(),
        })
        .await;
    }
    if let Some(bad) = a.only.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
        bail!(
            "unknown section {bad:?}; sections are {}",
            SECTIONS.join(", ")
        );
    }
    let q = a.quick;
    let z = Sizes {
        runs: a.runs.max(1),
        backlog: if q { 1_000 } else { 10_000 },
        create_to_key: if q { 100 } else { 500 },
        local: if q { 300 } else { 2_000 },
        big: if q { 10_000 } else { 100_000 },
        clients: a.clients.into(),
        pg_puts: if q { 100 } else { 1_000 },
        team_creates: if q { 20 } else { 100 },
        held: if q { 200 } else { 1_000 },
        held_window: std::time::Duration::from_secs(if q { 3 } else { 10 }),
        import: if q { 1_000 } else { 10_000 },
        import_adds: if q { 100 } else { 500 },
        git_commits: if q { 20 } else { 200 },
    };
    if let Some(path) = &a.write_jira_export {
        std::fs::write(path, jira_export::export(z.import).csv)
            .with_context(|| format!("writing {}", path.display()))?;
        return Ok(());
    }
    let want = |s: &str| a.only.is_empty() || a.only.iter().any(|o| o == s);
    let mut out: Vec<Figure> = Vec::new();
    if want("drain") {
        eprintln!(
            "drain: {} offline tasks, one sync; sequential PUTs; the task store alone",
            z.backlog
        );
        out.extend(sections::drain(&z).await?);
    }
    if want("throughput") {
        eprintln!(
            "throughput: {} concurrent clients, 5 s a run; the raw commit rate",
            z.clients
        );
        out.extend(sections::throughput(&z).await?);
    }
    if want("create-to-key") {
        eprintln!(
            "create-to-key: {} creates with a running sync loop",
            z.create_to_key
        );
        out.extend(sections::create_to_key(&z, &Backend::Sqlite, "").await?);
    }
    if want("local") {
        eprintln!("local: {} creates", z.local);
        out.extend(sections::local(&z)?);
    }
    if want("lookup") {
        eprintln!("lookup: at 1,000 and {} tasks", z.big);
        out.extend(sections::lookup(&z).await?);
    }
    if want("memory") {
        eprintln!("memory: an engine holding {} tasks", z.big);
        out.extend(sections::memory(&z)?);
    }
    if want("teammates") {
        eprintln!(
            "teammates: {} creates over 10 devices of 5 members; {} held requests",
            z.team_creates, z.held
        );
        out.extend(sections::teammates(&z).await?);
    }
    if want("import") {
        eprintln!(
            "import: a {}-issue Jira export through `callsign import`; {} `callsign add` processes",
            z.import, z.import_adds
        );
        out.extend(import::section(&z).await?);
    }
    if want("git-hook") {
        eprintln!(
            "git-hook: {} commits a run, the hooks beside git's own time; server up, dead, none",
            z.git_commits
        );
        out.extend(git_hook::section(&z).await?);
    }
    if SECTIONS.iter().any(|s| s.starts_with("pg-") && want(s)) {
        let pg = pg::Pg::start()?;
        eprintln!("postgres: {}", pg.describe().await?);
        out.extend(postgres(&z, &pg, &want).await?);
    }
    println!("{}", table(&out));
    if let Some(path) = &a.json {
        write_json(path, &z, q, &out)?;
    }
    Ok(())
}

/// The pg-* sections, on one cluster.
async fn postgres(z: &Sizes, pg: &pg::Pg, want: &dyn Fn(&str) -> bool) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    if want("pg-throughput") {
        eprintln!(
            "pg-throughput: {} clients, 1 node and 3 nodes, 5 s a run; the raw counter commit",
            z.clients
        );
        let (mut one, mut three) = (Vec::new(), Vec::new());
        for _ in 0..z.runs {
            one.push(pg_throughput::run(pg, 1, z.clients, 5.0).await?);
            three.push(pg_throughput::run(pg, 3, z.clients, 5.0).await?);
        }
        out.extend(pg_throughput::figures(1, z.clients, &one));
        out.extend(pg_throughput::figures(3, z.clients, &three));
    }
    if want("pg-create-to-key") {
        eprintln!(
            "pg-create-to-key: {} creates with a running sync loop",
            z.create_to_key
        );
        out.extend(sections::create_to_key(z, &pg.backend(), "PG: ").await?);
    }
    if want("pg-drain") {
        eprintln!(
            "pg-drain: {} offline tasks, one sync; {} sequential PUTs",
            z.backlog, z.pg_puts
        );
        out.extend(pg_drain::section(z, pg).await?);
    }
    Ok(out)
}

fn write_json(path: &Path, z: &Sizes, quick: bool, figures: &[Figure]) -> Result<()> {
    let doc = serde_json::json!({
        "runs": z.runs,
        "quick": quick,
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        "figures": figures,
    });
    std::fs::write(path, serde_json::to_string_pretty(&doc)?)
        .with_context(|| format!("writing {}", path.display()))
}
