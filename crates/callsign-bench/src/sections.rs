//! The rows of the SQLite sections, and of `pg-create-to-key` (`create_to_key` takes the
//! backend): each measurement of `figures` repeated `--runs` times, with its baseline and target.
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::server::Backend;
use crate::stats::Figure;
use crate::{figures, med, metrics, tcalone, Sizes};

pub async fn drain(z: &Sizes) -> Result<Vec<Figure>> {
    let (mut drain, mut base) = (Vec::new(), Vec::new());
    let (mut tc, mut inline) = (Vec::new(), Vec::new());
    for _ in 0..z.runs {
        let (d, per_put) = figures::drain(&Backend::Sqlite, z.backlog, z.backlog).await?;
        drain.push(d);
        base.push(per_put * z.backlog as f64);
        use tcalone::Storage;
        tc.push(tcalone::taskchampion_alone(Storage::TaskChampion, z.backlog, 500).await?);
        inline.push(tcalone::taskchampion_alone(Storage::Inline, z.backlog, 500).await?);
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

pub async fn throughput(z: &Sizes) -> Result<Vec<Figure>> {
    let mut tp = Vec::new();
    for _ in 0..z.runs {
        tp.push(figures::throughput(z.clients, 5.0).await?);
    }
    let pick = |f: fn(&figures::Throughput) -> f64| tp.iter().map(f).collect::<Vec<_>>();
    let raw = med(&pick(|t| t.raw_commits_per_s));
    let c = format!("{} clients", z.clients);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let mut figures = vec![
        Figure::new(
            &format!("{c}: creates/s (numbers checked 1..N)"),
            "/s",
            pick(|t| t.creates_per_s),
        )
        .baseline(format!(
            "{raw:.0} raw durable commits/s (WAL, synchronous=FULL)"
        ))
        .target("≥ 0.5 × raw commit rate", |m| m >= 0.5 * raw),
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
    figures.extend(metrics::stage_figures(&c, &tp, |t| t.per_create.stages_ms));
    figures.push(Figure::new(
        "server RSS after the throughput run",
        "MiB",
        pick(|t| t.server_rss_mib),
    ));
    Ok(figures)
}

pub async fn create_to_key(z: &Sizes, backend: &Backend, label: &str) -> Result<Vec<Figure>> {
    let (mut p50, mut p99) = (Vec::new(), Vec::new());
    for _ in 0..z.runs {
        let (a, b) = figures::create_to_key(backend, z.create_to_key).await?;
        p50.push(a);
        p99.push(b);
    }
    Ok(vec![
        Figure::new(&format!("{label}create-to-key p50"), "ms", p50)
            .target("≤ 20 ms", |m| m <= 20.0),
        Figure::new(&format!("{label}create-to-key p99"), "ms", p99)
            .target("≤ 100 ms", |m| m <= 100.0),
    ])
}

pub fn local(z: &Sizes) -> Result<Vec<Figure>> {
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

pub async fn lookup(z: &Sizes) -> Result<Vec<Figure>> {
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
pub fn memory(z: &Sizes) -> Result<Vec<Figure>> {
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

/// Issue 26: a teammate's new key on the other devices, and what held requests cost.
pub async fn teammates(z: &Sizes) -> Result<Vec<Figure>> {
    use crate::teammates;
    use callsign_sync::sync_loop::PERIOD;
    let (members, per_member) = (5, 2);
    let (mut p50, mut p99) = (Vec::new(), Vec::new());
    let mut held = Vec::new();
    for _ in 0..z.runs {
        let v = teammates::visibility(members, per_member, z.team_creates).await?;
        p50.push(v.p50());
        p99.push(v.p99());
        held.push(teammates::held(z.held, z.held_window).await?);
    }
    // Polling every PERIOD, a create lands at a uniformly random point of the other device's
    // wait: its p-th percentile is p % of the period (plus a pass, left out here).
    let period_ms = PERIOD.as_secs_f64() * 1000.0;
    let devices = members * per_member;
    let team = format!("{devices} devices of {members} members");
    let pick = |f: fn(&teammates::Held) -> f64| held.iter().map(f).collect::<Vec<_>>();
    let n = z.held;
    let secs = z.held_window.as_secs();
    Ok(vec![
        Figure::new(
            &format!("teammate's key on another device p50, {team}"),
            "ms",
            p50,
        )
        .baseline(format!(
            "{:.0} ms polling every {} s (half the period)",
            period_ms * 0.5,
            PERIOD.as_secs()
        ))
        .target("≤ 1 s", |m| m <= 1000.0),
        Figure::new(
            &format!("teammate's key on another device p99, {team}"),
            "ms",
            p99,
        )
        .baseline(format!(
            "{:.0} ms polling every {} s (99 % of the period)",
            period_ms * 0.99,
            PERIOD.as_secs()
        ))
        .target("≤ 2 s", |m| m <= 2000.0),
        Figure::new(
            &format!("server CPU, {n} held requests, no writes, {secs} s"),
            "% of a core",
            pick(|h| h.held_cpu_pct),
        )
        .baseline(format!(
            "{:.2} % with {n} devices polling every {} s instead",
            med(&pick(|h| h.polling_cpu_pct)),
            PERIOD.as_secs()
        ))
        .target("≈ 0 (< 0.5 %)", |m| m < 0.5),
        Figure::new(
            "server memory per held request",
            "KiB",
            pick(|h| h.kib_per_request),
        )
        .baseline(format!(
            "{:.1} MiB RSS with none held",
            med(&pick(|h| h.idle_rss_mib))
        )),
        Figure::new(
            &format!("one commit answers all {n} held requests"),
            "ms",
            pick(|h| h.fan_out_ms),
        ),
    ])
}
