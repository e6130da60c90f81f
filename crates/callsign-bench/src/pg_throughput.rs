//! `pg-throughput`: concurrent clients creating in one project through 1 or more
//! `callsign-server` nodes on one PostgreSQL, beside the raw rate of a single-row
//! counter-update commit on the same cluster, measured just before and just after each run.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;

use crate::figures::check_numbers;
use crate::metrics;
use crate::pg::{Pg, RawPg};
use crate::pg_waits::{self, Waits};
use crate::proc::{self, Usage};
use crate::server::Server;
use crate::stats::{percentile, Figure};
use crate::{load, med};

/// Seconds of each baseline measurement (one before, one after the run).
const RAW_SECS: f64 = 2.0;

/// One run with `nodes` nodes.
pub struct PgThroughput {
    pub creates_per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The baseline: mean of the measurements before and after the run.
    pub raw_per_s: f64,
    /// The two baseline measurements.
    pub raw: [RawPg; 2],
    /// Transactions committed in the cluster per create (`pg_stat_database.xact_commit`).
    pub xact_per_create: f64,
    /// WAL flushes per create (`pg_stat_wal.wal_sync`).
    pub wal_syncs_per_create: f64,
    /// Every node together, from the first client's start until the keys were written.
    pub server_per_create: Usage,
    /// PostgreSQL's processes, over the same time.
    pub pg_per_create: Usage,
    /// TCP segments with data the nodes sent to PostgreSQL, per create (≈ round trips).
    pub segments_per_create: f64,
    /// The machine's busy CPU share (0..1) while the clients ran.
    pub machine_busy: f64,
    /// What PostgreSQL's backends were doing while the clients ran.
    pub waits: Waits,
    /// Mean ms in each of [`metrics::STAGES`] (every node's creates).
    pub stages_ms: [f64; 3],
}

/// `clients` clients, round robin over `nodes` nodes of one fresh schema, create for `secs`;
/// numbers checked 1..N.
pub async fn run(pg: &Pg, nodes: usize, clients: usize, secs: f64) -> Result<PgThroughput> {
    let raw_before = pg.raw_counter_commits(clients, RAW_SECS).await?;
    let s = Server::start_on(&pg.backend(), &[])?;
    let mut others = Vec::new();
    for _ in 1..nodes {
        others.push(s.another_node(&[])?);
    }
    let mut at = vec![(s.url.clone(), s.pid())];
    at.extend(others.iter().map(|n| (n.url.clone(), n.pid())));
    let mut conns = Vec::with_capacity(clients);
    for c in 0..clients {
        conns.push(load::Client::connect_to(&at[c % at.len()].0, &s.token).await?);
    }
    let http = reqwest::Client::new();
    let mut before = Vec::new();
    for (url, _) in &at {
        before.push(metrics::metrics(&http, url).await?);
    }
    let meter = pg.meter(at.iter().map(|(_, pid)| *pid).collect()).await?;
    let cpu0 = proc::machine_cpu()?;
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn(pg_waits::sample_waits(pg.url().to_owned(), stop.clone()));
    let ran = load::run(conns, secs).await?;
    stop.store(true, Ordering::Relaxed);
    let busy = proc::busy_between(cpu0, proc::machine_cpu()?);
    let waits = sampler.await??;
    let (mut creates, mut stage_sums) = (0.0, [0.0; 3]);
    for ((url, _), before) in at.iter().zip(&before) {
        let (k, st) = metrics::stages(before, &metrics::metrics(&http, url).await?)?;
        creates += k;
        for (sum, ms) in stage_sums.iter_mut().zip(st) {
            *sum += ms * k;
        }
    }
    let n = check_numbers(&s, ran.latencies_ms.len()).await?;
    metrics::settle(&http, &s).await?;
    let spent = meter
        .finish(pg, || {
            drop(others);
            drop(s);
        })
        .await?;
    let raw_after = pg.raw_counter_commits(clients, RAW_SECS).await?;
    let k = n as f64;
    let lat = &ran.latencies_ms;
    Ok(PgThroughput {
        creates_per_s: k / ran.elapsed_s,
        p50_ms: percentile(lat, 50.0),
        p99_ms: percentile(lat, 99.0),
        raw_per_s: (raw_before.per_s + raw_after.per_s) / 2.0,
        raw: [raw_before, raw_after],
        xact_per_create: spent.xact / k,
        wal_syncs_per_create: spent.wal_syncs / k,
        server_per_create: spent.server.per(k),
        pg_per_create: spent.pg.per(k),
        segments_per_create: spent.segments / k,
        machine_busy: busy,
        waits,
        stages_ms: stage_sums.map(|s| s / creates.max(1.0)),
    })
}

/// The table's rows for the runs with `nodes` nodes.
pub fn figures(nodes: usize, clients: usize, runs: &[PgThroughput]) -> Vec<Figure> {
    let pick = |f: &dyn Fn(&PgThroughput) -> f64| runs.iter().map(f).collect::<Vec<_>>();
    let raw_mean = |f: &dyn Fn(&RawPg) -> f64| {
        med(&pick(&|t: &PgThroughput| {
            (f(&t.raw[0]) + f(&t.raw[1])) / 2.0
        }))
    };
    let raw = med(&pick(&|t| t.raw_per_s));
    let c = format!(
        "PG, {nodes} node{}, {clients} clients",
        if nodes == 1 { "" } else { "s" }
    );
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    let mut out = vec![
        Figure::new(
            &format!("{c}: creates/s (numbers checked 1..N)"),
            "/s",
            pick(&|t| t.creates_per_s),
        )
        .baseline(format!(
            "{raw:.0} raw counter-update commits/s ({clients} connections, same cluster)"
        ))
        .target("≥ 0.8 × raw commit rate", |m| m >= 0.8 * raw),
        Figure::new(
            &format!("{c}: creates/s ÷ that run's raw commit rate"),
            "×",
            pick(&|t| t.creates_per_s / t.raw_per_s),
        )
        .baseline(format!(
            "raw rate: mean of {RAW_SECS} s before and {RAW_SECS} s after the run"
        ))
        .target("≥ 0.8 ×", |m| m >= 0.8),
        Figure::new(
            &format!("{c}: create latency p50"),
            "ms",
            pick(&|t| t.p50_ms),
        ),
        Figure::new(
            &format!("{c}: create latency p99"),
            "ms",
            pick(&|t| t.p99_ms),
        ),
        Figure::new(
            &format!("{c}: bound: PG transactions committed per create"),
            "",
            pick(&|t| t.xact_per_create),
        )
        .baseline(format!(
            "{:.2} per raw commit",
            raw_mean(&|r| r.xact_per_commit)
        )),
        Figure::new(
            &format!("{c}: bound: PG WAL flushes (fdatasync) per create"),
            "",
            pick(&|t| t.wal_syncs_per_create),
        )
        .baseline(format!(
            "{:.2} per raw commit",
            raw_mean(&|r| r.wal_syncs_per_commit)
        )),
        Figure::new(
            &format!("{c}: bound: creates/s if each WAL flush took a raw commit's time"),
            "/s",
            pick(&|t| t.raw_per_s / t.wal_syncs_per_create),
        )
        .baseline("that run's raw commit rate ÷ WAL flushes per create"),
        Figure::new(
            &format!("{c}: bound: server CPU per create (every node, until keys written)"),
            "µs",
            pick(&|t| t.server_per_create.cpu_secs * 1e6),
        )
        .baseline(format!(
            "{cores} cores ÷ the raw commit rate: {:.0} µs",
            cores / raw * 1e6
        )),
        Figure::new(
            &format!("{c}: bound: PostgreSQL CPU per create (same time)"),
            "µs",
            pick(&|t| t.pg_per_create.cpu_secs * 1e6),
        )
        .baseline(format!(
            "{:.0} µs per raw commit (its {clients} clients: {:.0} µs more)",
            raw_mean(&|r| r.pg_per_commit.cpu_secs) * 1e6,
            raw_mean(&|r| r.client_per_commit.cpu_secs) * 1e6
        )),
        Figure::new(
            &format!("{c}: bound: TCP segments with data the nodes sent to PG per create"),
            "",
            pick(&|t| t.segments_per_create),
        )
        .baseline(format!(
            "{:.2} per raw commit (BEGIN, the INSERT, COMMIT)",
            raw_mean(&|r| r.segments_per_commit)
        )),
        Figure::new(
            &format!("{c}: bound: machine CPU busy while the clients ran"),
            "%",
            pick(&|t| t.machine_busy * 100.0),
        )
        .baseline(format!(
            "{:.0} % during the raw loop",
            raw_mean(&|r| r.machine_busy) * 100.0
        )),
    ];
    type Pick = fn(&Waits) -> f64;
    let waits: [(&str, Pick); 6] = [
        ("running", |w| w.running),
        ("waiting for a row lock", |w| w.row_lock),
        ("waiting for an advisory lock", |w| w.advisory_lock),
        ("writing or flushing WAL", |w| w.wal),
        ("in a transaction, waiting for the node", |w| {
            w.in_transaction
        }),
        ("other waits", |w| w.other),
    ];
    for (what, f) in waits {
        out.push(Figure::new(
            &format!("{c}: bound: PG backends {what} (mean of samples)"),
            "",
            pick(&|t| f(&t.waits)),
        ));
    }
    out.extend(metrics::stage_figures(&c, runs, |t| t.stages_ms));
    out
}
