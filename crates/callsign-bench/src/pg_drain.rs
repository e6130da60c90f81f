//! `pg-drain`: one sync of a 10,000-task offline backlog into a server on PostgreSQL, beside
//! sequential `PUT`s to another, with what the drain spent per task (the figure's bound).
use anyhow::Result;

use crate::figures::{drain_on, sequential_puts};
use crate::metrics;
use crate::pg::{Pg, Spend};
use crate::server::Server;
use crate::stats::Figure;
use crate::{med, Sizes};

/// One run: drain seconds, seconds per sequential PUT, what the drain spent.
struct Run {
    secs: f64,
    per_put: f64,
    spent: Spend,
}

async fn run(pg: &Pg, n: usize, puts: usize) -> Result<Run> {
    let s = Server::start_on(&pg.backend(), &[])?;
    let meter = pg.meter(vec![s.pid()]).await?;
    let secs = drain_on(&s, n).await?;
    metrics::settle(&reqwest::Client::new(), &s).await?;
    let spent = meter.finish(pg, || drop(s)).await?;
    let per_put = sequential_puts(&pg.backend(), puts).await?;
    Ok(Run {
        secs,
        per_put,
        spent,
    })
}

/// The section's rows over `z.runs` runs.
pub async fn section(z: &Sizes, pg: &Pg) -> Result<Vec<Figure>> {
    let mut runs = Vec::with_capacity(z.runs);
    for _ in 0..z.runs {
        runs.push(run(pg, z.backlog, z.pg_puts).await?);
    }
    let n = z.backlog;
    let k = n as f64;
    let pick = |f: &dyn Fn(&Run) -> f64| runs.iter().map(f).collect::<Vec<_>>();
    let per_put = med(&pick(&|r| r.per_put));
    let per_task = |what: &str, unit: &str, f: &dyn Fn(&Spend) -> f64| {
        Figure::new(
            &format!("PG drain: bound: {what} per task (until keys written)"),
            unit,
            pick(&|r| f(&r.spent) / k),
        )
    };
    Ok(vec![
        Figure::new(
            &format!("PG: offline backlog drain, {n} tasks, one sync"),
            "s",
            pick(&|r| r.secs),
        )
        .baseline(format!(
            "{:.2} ms a sequential PUT ({} timed): {:.1} s for {n} at that rate",
            per_put * 1e3,
            z.pg_puts,
            per_put * k
        ))
        .target("≤ 3 s", |m| m <= 3.0),
        Figure::new("PG drain: time per task", "ms", pick(&|r| r.secs * 1e3 / k))
            .baseline(format!("{:.2} ms a sequential PUT", per_put * 1e3)),
        per_task("PG transactions committed", "", &|s| s.xact),
        per_task("PG WAL flushes", "", &|s| s.wal_syncs),
        per_task("TCP segments with data sent to PG", "", &|s| s.segments),
        per_task("server CPU", "µs", &|s| s.server.cpu_secs * 1e6),
        per_task("PostgreSQL CPU", "µs", &|s| s.pg.cpu_secs * 1e6),
    ])
}
