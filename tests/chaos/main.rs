//! `chaos`: runs fault campaigns against the real server and CLI and prints the summary table.
//! `CALLSIGN_CHAOS_SEED=<n>` (or `--seed`) replays a run; every run prints its seed first.
use std::process::ExitCode;
use std::time::Duration;

use callsign_chaos::campaign::{self, Config, Summary};
use callsign_pgtest::{Cluster, Options};
use clap::Parser;

#[derive(Parser)]
#[command(
    about = "Fault campaign: crashes, lost requests and answers, duplicates; checks G1-G5 and \
             each task's created_by"
)]
struct Args {
    /// First seed (default: CALLSIGN_CHAOS_SEED, else from the clock); later runs use seed+1...
    #[arg(long)]
    seed: Option<u64>,
    /// Total time of chaos across runs (e.g. 30m); each run is at most --run-length.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Chaos time of one run before it heals and is checked.
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    run_length: Duration,
    /// Stop after this many acknowledged creates in all.
    #[arg(long, default_value_t = 20_000)]
    creates: u64,
    /// The short campaign's settings (what the test command runs).
    #[arg(long)]
    short: bool,
    #[arg(long, default_value_t = 4)]
    devices: usize,
    /// Members of the team (at most --devices): device i is member i mod --members's, logged
    /// in with its own token of theirs; the checker holds each task's created_by to it.
    #[arg(long, default_value_t = 3)]
    members: usize,
    /// Run the server as --nodes nodes on PostgreSQL: on a throwaway cluster this tool starts
    /// (initdb, removed at exit), or on the server --database names.
    #[arg(long)]
    postgres: bool,
    /// A PostgreSQL server to run on (`postgres://user@127.0.0.1:PORT/db`, a user that may
    /// create schemas); each run gets a fresh schema there, left behind. Implies --postgres.
    #[arg(long)]
    database: Option<String>,
    /// Server nodes on PostgreSQL (SQLite runs one).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=16))]
    nodes: u16,
    /// A Taskwarrior replica (TaskChampion's own) creates, edits and syncs beside the devices,
    /// and the checker holds it against the server's keys (`--taskwarrior false`: none).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    taskwarrior: bool,
    /// Each run restores a backup mid-run (SQLite; no Taskwarrior): taken a third of the way
    /// in, put back at two thirds, and checked with the lost numbers `recovery status` reports.
    #[arg(long, conflicts_with_all = ["postgres", "database"])]
    restore: bool,
}

fn main() -> ExitCode {
    let a = Args::parse();
    // Held to the end: dropping it stops the cluster.
    let mut cluster = None;
    let pg = match (&a.database, a.postgres) {
        (Some(url), _) => Some(callsign_pgtest::Server::new(url.clone())),
        (None, true) => match Cluster::start(Options::default()) {
            Ok(c) => Some(cluster.insert(c).server().clone()),
            Err(e) => {
                eprintln!("cannot start PostgreSQL: {e}");
                return ExitCode::FAILURE;
            }
        },
        (None, false) => None,
    };
    match &pg {
        Some(server) => println!("on {} PostgreSQL node(s) at {}", a.nodes, server.url()),
        None => println!("on SQLite (one node)"),
    }
    let mut seed = a.seed.unwrap_or_else(campaign::seed_from_env);
    let started = std::time::Instant::now();
    let mut total = Summary::default();
    let mut runs = 0;
    let mut failed = false;
    while started.elapsed() < a.duration && total.creates < a.creates {
        let left = a.duration.saturating_sub(started.elapsed());
        let mut cfg = if a.short {
            Config::short(seed)
        } else {
            Config::long(seed, a.run_length.min(left), a.creates - total.creates)
        };
        cfg.devices = a.devices;
        cfg.members = a.members;
        cfg.taskwarrior = a.taskwarrior && !a.restore;
        cfg.restore = a.restore;
        if let Some(server) = &pg {
            cfg = cfg.on_postgres(server.clone(), usize::from(a.nodes));
        }
        println!("CALLSIGN_CHAOS_SEED={seed}");
        let outcome = match campaign::run(cfg) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("seed {seed}: the campaign could not run: {e:#}");
                return ExitCode::FAILURE;
            }
        };
        println!("{}", outcome.summary);
        if a.restore {
            println!("lost: {:?}", outcome.lost);
        }
        if !outcome.violations.is_empty() {
            eprintln!("{}", outcome.report);
            if let Some(dir) = &outcome.kept {
                eprintln!("databases and events.log kept in {}", dir.display());
            }
            failed = true;
        }
        total.add(&outcome.summary);
        runs += 1;
        seed += 1;
        if failed {
            break;
        }
    }
    println!("all {runs} run(s):");
    println!("{total}");
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
