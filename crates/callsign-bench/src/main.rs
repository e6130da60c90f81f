//! `callsign-bench`: the figures of issue 6 on loopback, each beside its baseline measured in
//! the same run, as a Markdown table on stdout and JSON in `--json`.
//!
//! `cargo run --release -p callsign-bench -- [--runs 3] [--quick] [--only drain,lookup]
//! [--json target/bench.json]`
mod figures;
mod load;
mod server;
mod soak;
mod stats;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::Parser;
use stats::{table, Figure};

const SECTIONS: [&str; 6] = [
    "drain",
    "throughput",
    "create-to-key",
    "local",
    "lookup",
    "memory",
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
    /// memory.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Concurrent clients in the throughput section (the figure is at 64).
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
    };
    let want = |s: &str| a.only.is_empty() || a.only.iter().any(|o| o == s);
    let mut out: Vec<Figure> = Vec::new();
    if want("drain") {
        eprintln!(
            "drain: {} offline tasks, one sync; sequential PUTs; the task store alone",
            z.backlog
        );
        out.extend(drain(&z).await?);
    }
    if want("throughput") {
        eprintln!(
            "throughput: {} concurrent clients, 5 s a run; the raw commit rate",
            z.clients
        );
        out.extend(throughput(&z).await?);
    }
    if want("create-to-key") {
        eprintln!(
            "create-to-key: {} creates with a running sync loop",
            z.create_to_key
        );
        out.extend(create_to_key(&z).await?);
    }
    if want("local") {
        eprintln!("local: {} creates", z.local);
        out.extend(local(&z)?);
    }
    if want("lookup") {
        eprintln!("lookup: at 1,000 and {} tasks", z.big);
        out.extend(lookup(&z).await?);
    }
    if want("memory") {
        eprintln!("memory: an engine holding {} tasks", z.big);
        out.extend(memory(&z)?);
    }
    println!("{}", table(&out));
    if let Some(path) = &a.json {
        write_json(path, &z, q, &out)?;
    }
    Ok(())
}

async fn drain(z: &Sizes) -> Result<Vec<Figure>> {
    let (mut drain, mut base) = (Vec::new(), Vec::new());
    let (mut tc, mut inline) = (Vec::new(), Vec::new());
    for _ in 0..z.runs {
        let (d, b) = figures::drain(z.backlog).await?;
        drain.push(d);
        base.push(b);
        use figures::Storage;
        tc.push(figures::taskchampion_alone(Storage::TaskChampion, z.backlog, 500).await?);
        inline.push(figures::taskchampion_alone(Storage::Inline, z.backlog, 500).await?);
    }
    let (bm, dm) = (med(&base), med(&drain));
    let n = z.backlog;
    Ok(vec![
        Figure::new(
            &format!("offline backlog drain, {n} tasks, one sync"),
            "s",
            drain,
        )
        .baseline(format!(
            "{bm:.2} s as {n} sequential PUTs ({:.1}× faster)",
            bm / dm
        ))
        .target("≤ 3 s and ≥ 10× baseline", |m| {
            m <= 3.0 && bm / m >= 10.0
        }),
        Figure::new(
            "bound: the server's task store alone, create + key write, per task (500 a commit)",
            "µs",
            inline,
        )
        .baseline(format!(
            "{:.0} µs with TaskChampion's Replica + SqliteStorage",
            med(&tc)
        )),
    ])
}

async fn throughput(z: &Sizes) -> Result<Vec<Figure>> {
    let mut tp = Vec::new();
    for _ in 0..z.runs {
        tp.push(figures::throughput(z.clients, 5.0).await?);
    }
    let pick = |f: fn(&figures::Throughput) -> f64| tp.iter().map(f).collect::<Vec<_>>();
    let raw = med(&pick(|t| t.raw_commits_per_s));
    let c = format!("{} clients", z.clients);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let stages = ["phase 1 (slot)", "the task store", "phase 2 (number)"]
        .iter()
        .enumerate()
        .map(|(i, stage)| {
            let waits = tp.iter().map(|t| t.per_create.stages_ms[i]).collect();
            Figure::new(&format!("{c}: mean wait in {stage}"), "ms", waits)
        });
    let mut figures = vec![
        Figure::new(
            &format!("{c}: creates/s (numbers checked 1..N)"),
            "/s",
            pick(|t| t.creates_per_s),
        )
        .baseline(format!(
            "{raw:.0} raw durable commits/s (WAL, synchronous=FULL)"
        ))
        .target("≥ 1.0 × raw commit rate", |m| m >= raw),
        Figure::new(
            &format!("{c}: creates/s ÷ that run's raw commit rate"),
            "×",
            pick(|t| t.creates_per_s / t.raw_commits_per_s),
        )
        .baseline("raw rate: mean of 1.5 s before and 1.5 s after the run"),
        Figure::new(
            &format!("{c}: create latency p50"),
            "ms",
            pick(|t| t.p50_ms),
        ),
        Figure::new(
            &format!("{c}: create latency p99"),
            "ms",
            pick(|t| t.p99_ms),
        ),
        Figure::new(
            "bound: allocation DB group commits per create",
            "",
            pick(|t| t.per_create.alloc_commits),
        )
        .baseline(format!(
            "{:.1} jobs a commit (phase 1, phase 2, key marks)",
            med(&pick(|t| t.per_create.alloc_jobs_per_commit))
        )),
        Figure::new(
            "bound: task store group commits per create",
            "",
            pick(|t| t.per_create.store_commits),
        )
        .baseline(format!(
            "{:.1} commands a commit (creates, key writes)",
            med(&pick(|t| t.per_create.store_jobs_per_commit))
        )),
        Figure::new(
            "bound: creates/s if each of those commits cost one raw commit",
            "/s",
            pick(|t| {
                t.raw_commits_per_s / (t.per_create.alloc_commits + t.per_create.store_commits)
            }),
        )
        .baseline("the raw commit rate ÷ commits per create".to_owned()),
        Figure::new(
            "bound: server CPU time per create (until settled)",
            "µs",
            pick(|t| t.server_per_create.cpu_secs * 1e6),
        )
        .baseline(format!(
            "{cores} cores ÷ the raw commit rate: {:.0} µs; the {c} themselves used {:.0} µs",
            cores as f64 / raw * 1e6,
            med(&pick(|t| t.clients_per_create.cpu_secs)) * 1e6
        )),
        Figure::new(
            "bound: KiB the server hands to write calls per create (until settled)",
            "KiB",
            pick(|t| t.server_per_create.written_bytes / 1024.0),
        )
        .baseline(format!(
            "{:.1} KiB per raw commit",
            med(&pick(|t| t.raw_per_commit.written_bytes)) / 1024.0
        )),
        Figure::new(
            "bound: write calls per create (until settled)",
            "",
            pick(|t| t.server_per_create.write_calls),
        )
        .baseline(format!(
            "{:.1} per raw commit",
            med(&pick(|t| t.raw_per_commit.write_calls))
        )),
    ];
    figures.extend(stages);
    figures.push(Figure::new(
        "server RSS after the throughput run",
        "MiB",
        pick(|t| t.server_rss_mib),
    ));
    Ok(figures)
}

async fn create_to_key(z: &Sizes) -> Result<Vec<Figure>> {
    let (mut p50, mut p99) = (Vec::new(), Vec::new());
    for _ in 0..z.runs {
        let (a, b) = figures::create_to_key(z.create_to_key).await?;
        p50.push(a);
        p99.push(b);
    }
    Ok(vec![
        Figure::new("create-to-key p50", "ms", p50).target("≤ 20 ms", |m| m <= 20.0),
        Figure::new("create-to-key p99", "ms", p99).target("≤ 100 ms", |m| m <= 100.0),
    ])
}

fn local(z: &Sizes) -> Result<Vec<Figure>> {
    let (mut p50, mut p99) = (Vec::new(), Vec::new());
    for _ in 0..z.runs {
        let (a, b) = figures::local_create(z.local)?;
        p50.push(a);
        p99.push(b);
    }
    Ok(vec![
        Figure::new("local create p50 (durable)", "ms", p50).target("≤ 2 ms", |m| m <= 2.0),
        Figure::new("local create p99 (durable)", "ms", p99),
    ])
}

async fn lookup(z: &Sizes) -> Result<Vec<Figure>> {
    type Pick = fn(&figures::Lookup) -> (f64, f64);
    let sizes = [1_000, z.big];
    let looked = figures::lookups(&sizes, 1_000, z.runs).await?;
    let small_p99 = |f: Pick| med(&looked[0].1.iter().map(|l| f(l).1).collect::<Vec<_>>());
    let by_key: Pick = |l| l.by_key;
    let by_uuid: Pick = |l| l.by_uuid;
    let mut out = Vec::new();
    for (size, per_run) in &looked {
        for (what, pick) in [
            ("GET /v1/tasks/BEN-n", by_key),
            ("GET /v1/tasks/{uuid}", by_uuid),
        ] {
            let small = small_p99(pick);
            out.push(Figure::new(
                &format!("{what} at {size} tasks, p50"),
                "ms",
                per_run.iter().map(|l| pick(l).0).collect(),
            ));
            let p99 = Figure::new(
                &format!("{what} at {size} tasks, p99"),
                "ms",
                per_run.iter().map(|l| pick(l).1).collect(),
            );
            out.push(if *size == sizes[0] {
                p99.target("≤ 5 ms", |m| m <= 5.0)
            } else {
                p99.baseline(format!("{small:.2} ms at 1,000 tasks"))
                    .target("≤ 5 ms, no growth", |m| {
                        m <= 5.0 && m <= small * 1.5 + 0.2
                    })
            });
        }
    }
    Ok(out)
}

/// The engine's RSS holding `big` tasks, measured in a fresh child process (`--hold`).
fn memory(z: &Sizes) -> Result<Vec<Figure>> {
    let store = tempfile::tempdir()?;
    figures::seed_store(store.path(), z.big)?;
    let (mut held, mut empty) = (Vec::new(), Vec::new());
    for _ in 0..z.runs {
        let o = Command::new(std::env::current_exe()?)
            .arg("--hold")
            .arg(store.path())
            .output()?;
        if !o.status.success() {
            bail!("--hold: {}", String::from_utf8_lossy(&o.stderr));
        }
        let text = String::from_utf8(o.stdout)?;
        let mut it = text.split_whitespace().map(str::parse::<f64>);
        let (b, h) = (it.next(), it.next());
        empty.push(b.context("RSS before")??);
        held.push(h.context("RSS held")??);
    }
    Ok(vec![Figure::new(
        &format!("client engine RSS holding {} tasks (listed)", z.big),
        "MiB",
        held,
    )
    .baseline(format!(
        "{:.1} MiB the same process before opening the engine",
        med(&empty)
    ))])
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
