//! `callsign-bench`: the figures of issue 6 on loopback, each beside its baseline measured in
//! the same run, as a Markdown table on stdout and JSON in `--json`.
//!
//! `cargo run --release -p callsign-bench -- [--runs 3] [--quick] [--json target/bench.json]`
mod figures;
mod server;
mod stats;

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::Parser;
use stats::{table, Figure};

#[derive(Parser)]
#[command(about = "Callsign benchmarks on 127.0.0.1, each beside its baseline")]
struct Args {
    /// Runs per figure (median and spread are over these).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Smaller counts: a smoke check, not the figures.
    #[arg(long)]
    quick: bool,
    /// Also write the figures as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Internal: open an engine on this store, list it, print RSS before/after.
    #[arg(long, hide = true)]
    hold: Option<PathBuf>,
}

fn med(xs: &[f64]) -> f64 {
    stats::percentile(xs, 50.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let a = Args::parse();
    if let Some(dir) = &a.hold {
        let (before, after) = figures::hold(dir)?;
        println!("{before} {after}");
        return Ok(());
    }
    let runs = a.runs.max(1);
    let q = a.quick;
    let backlog = if q { 1_000 } else { 10_000 };
    let (c2k, local) = if q { (100, 300) } else { (500, 2_000) };
    let big = if q { 10_000 } else { 100_000 };
    let mut out: Vec<Figure> = Vec::new();

    eprintln!("1/6 offline backlog drain ({backlog} tasks) and sequential-PUT baseline");
    let (mut drain, mut base) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (d, b) = figures::drain(backlog).await?;
        drain.push(d);
        base.push(b);
    }
    let (bm, dm) = (med(&base), med(&drain));
    out.push(
        Figure::new(
            &format!("offline backlog drain, {backlog} tasks, one sync"),
            "s",
            drain,
        )
        .baseline(format!(
            "{bm:.2} s as {backlog} sequential PUTs ({:.1}× faster)",
            bm / dm
        ))
        .target("≤ 3 s and ≥ 10× baseline", |m| {
            m <= 3.0 && bm / m >= 10.0
        }),
    );

    eprintln!("2/6 64 concurrent clients, 5 s each run, and the raw commit rate");
    let mut tp = Vec::new();
    for _ in 0..runs {
        tp.push(figures::throughput(64, 5.0).await?);
    }
    let raw: Vec<f64> = tp.iter().map(|t| t.raw_commits_per_s).collect();
    let rawm = med(&raw);
    let rate: Vec<f64> = tp.iter().map(|t| t.creates_per_s).collect();
    out.push(
        Figure::new("64 clients: creates/s (numbers checked 1..N)", "/s", rate)
            .baseline(format!(
                "{rawm:.0} raw durable commits/s (WAL, synchronous=FULL)"
            ))
            .target("≥ 1.0 × raw commit rate", |m| m >= rawm),
    );
    out.push(Figure::new(
        "64 clients: create latency p50",
        "ms",
        tp.iter().map(|t| t.p50_ms).collect(),
    ));
    out.push(Figure::new(
        "64 clients: create latency p99",
        "ms",
        tp.iter().map(|t| t.p99_ms).collect(),
    ));

    eprintln!("3/6 create-to-key with a running sync loop ({c2k} creates)");
    let (mut p50, mut p99) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (a, b) = figures::create_to_key(c2k).await?;
        p50.push(a);
        p99.push(b);
    }
    out.push(Figure::new("create-to-key p50", "ms", p50).target("≤ 20 ms", |m| m <= 20.0));
    out.push(Figure::new("create-to-key p99", "ms", p99).target("≤ 100 ms", |m| m <= 100.0));

    eprintln!("4/6 local create ({local} creates)");
    let (mut p50, mut p99) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (a, b) = figures::local_create(local)?;
        p50.push(a);
        p99.push(b);
    }
    out.push(Figure::new("local create p50 (durable)", "ms", p50).target("≤ 2 ms", |m| m <= 2.0));
    out.push(Figure::new("local create p99 (durable)", "ms", p99));

    eprintln!("5/6 key lookup at 1,000 and {big} tasks");
    let sizes = [1_000, big];
    let looked = figures::lookups(&sizes, 1_000, runs).await?;
    let small_p99 = |f: fn(&figures::Lookup) -> (f64, f64)| {
        med(&looked[0].1.iter().map(|l| f(l).1).collect::<Vec<_>>())
    };
    let key_small = small_p99(|l| l.by_key);
    let uuid_small = small_p99(|l| l.by_uuid);
    for (size, per_run) in &looked {
        for (what, pick, small) in [
            (
                "GET /v1/tasks/BEN-n",
                (|l: &figures::Lookup| l.by_key) as fn(&figures::Lookup) -> (f64, f64),
                key_small,
            ),
            (
                "GET /v1/tasks/{uuid}",
                |l: &figures::Lookup| l.by_uuid,
                uuid_small,
            ),
        ] {
            out.push(Figure::new(
                &format!("{what} at {size} tasks, p50"),
                "ms",
                per_run.iter().map(|l| pick(l).0).collect(),
            ));
            let fig = Figure::new(
                &format!("{what} at {size} tasks, p99"),
                "ms",
                per_run.iter().map(|l| pick(l).1).collect(),
            );
            out.push(if *size == sizes[0] {
                fig.target("≤ 5 ms", |m| m <= 5.0)
            } else {
                fig.baseline(format!("{small:.2} ms at 1,000 tasks"))
                    .target("≤ 5 ms, no growth", |m| {
                        m <= 5.0 && m <= small * 1.5 + 0.2
                    })
            });
        }
    }

    eprintln!("6/6 memory");
    out.push(Figure::new(
        "server RSS after the throughput run",
        "MiB",
        tp.iter().map(|t| t.server_rss_mib).collect(),
    ));
    let store = tempfile::tempdir()?;
    figures::seed_store(store.path(), big)?;
    let (mut held, mut empty) = (Vec::new(), Vec::new());
    for _ in 0..runs {
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
    out.push(
        Figure::new(
            &format!("client engine RSS holding {big} tasks (listed)"),
            "MiB",
            held,
        )
        .baseline(format!(
            "{:.1} MiB the same process before opening the engine",
            med(&empty)
        )),
    );

    let t = table(&out);
    println!("{t}");
    if let Some(path) = &a.json {
        let doc = serde_json::json!({
            "runs": runs,
            "quick": q,
            "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
            "figures": out,
        });
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
