//! The server's `/metrics`, waiting for it to settle after a run, and the table's rows of its
//! create-stage timings.
use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::server::{Server, Store};
use crate::stats::Figure;

/// The server's `/metrics` samples: `name{labels}` to value (buckets left out).
pub async fn metrics(http: &reqwest::Client, url: &str) -> Result<HashMap<String, f64>> {
    let text = http
        .get(format!("{url}/metrics"))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    Ok(parse_metrics(&text))
}

/// Waits until the server has finished writing in the background (the keys of the tasks it
/// has answered for, and their `in_store` marks) and emptied its WALs: until neither writer's
/// commit counter has moved for 1.5 s. Fails after a minute of commits. On PostgreSQL (no
/// writer threads): until every key is marked `in_store`.
pub async fn settle(http: &reqwest::Client, s: &Server) -> Result<()> {
    if let Store::Postgres(url) = &s.store {
        return crate::pg::settle(url).await;
    }
    const QUIET: Duration = Duration::from_millis(1500);
    const POLL: Duration = Duration::from_millis(250);
    const MAX: Duration = Duration::from_secs(60);
    let commits = |m: HashMap<String, f64>| {
        [
            "callsign_alloc_db_group_commits_total",
            "callsign_task_store_group_commits_total",
        ]
        .map(|k| m.get(k).copied().unwrap_or(0.0))
    };
    let start = Instant::now();
    let mut last = commits(metrics(http, &s.url).await?);
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < QUIET {
        if start.elapsed() > MAX {
            bail!("the server kept committing for {MAX:?} after its last request");
        }
        tokio::time::sleep(POLL).await;
        let now = commits(metrics(http, &s.url).await?);
        if now != last {
            last = now;
            quiet_since = Instant::now();
        }
    }
    Ok(())
}

/// The server's own account of a throughput run, per create.
pub struct PerCreate {
    pub alloc_commits: f64,
    pub alloc_jobs_per_commit: f64,
    pub store_commits: f64,
    pub store_jobs_per_commit: f64,
    /// Mean ms a create waited in each of [`STAGES`].
    pub stages_ms: [f64; 3],
}

impl PerCreate {
    pub fn between(a: &HashMap<String, f64>, b: &HashMap<String, f64>) -> Result<PerCreate> {
        let d = |k: &str| delta(a, b, k);
        let (creates, stages_ms) = stages(a, b)?;
        let (ac, aj) = (
            d("callsign_alloc_db_group_commits_total")?,
            d("callsign_alloc_db_group_commit_jobs_total")?,
        );
        let (sc, sj) = (
            d("callsign_task_store_group_commits_total")?,
            d("callsign_task_store_group_commit_jobs_total")?,
        );
        Ok(PerCreate {
            alloc_commits: ac / creates,
            alloc_jobs_per_commit: aj / ac.max(1.0),
            store_commits: sc / creates,
            store_jobs_per_commit: sj / sc.max(1.0),
            stages_ms,
        })
    }
}

/// How far sample `k` moved from `a` to `b`, two readings of one node's `/metrics`. A sample
/// missing from `a` had not been counted yet: 0; one missing from `b` is an error.
fn delta(a: &HashMap<String, f64>, b: &HashMap<String, f64>, k: &str) -> Result<f64> {
    let after = b
        .get(k)
        .with_context(|| format!("the server's /metrics has no {k}"))?;
    Ok(after - a.get(k).unwrap_or(&0.0))
}

/// The create stages the server times, in the order of [`stages`]' array (and so of every
/// `stages_ms`): each one's `stage` label on `/metrics` and its name in the table.
pub const STAGES: [(&str, &str); 3] = [
    ("phase1", "phase 1 (slot)"),
    ("task_store", "the task store"),
    ("phase2", "phase 2 (number)"),
];

/// Creates counted between two samples of one node's `/metrics`, and the mean ms each waited
/// in each of [`STAGES`] (any backend).
pub fn stages(a: &HashMap<String, f64>, b: &HashMap<String, f64>) -> Result<(f64, [f64; 3])> {
    let d = |k: &str| delta(a, b, k);
    let creates = d("callsign_creates_total{result=\"numbered\"}")?;
    if creates < 1.0 {
        bail!("the server counted no creates");
    }
    let stage = |s: &str| -> Result<f64> {
        let sum = d(&format!(
            "callsign_create_stage_seconds_sum{{stage=\"{s}\"}}"
        ))?;
        let n = d(&format!(
            "callsign_create_stage_seconds_count{{stage=\"{s}\"}}"
        ))?;
        Ok(1000.0 * sum / n.max(1.0))
    };
    let mut ms = [0.0; 3];
    for (m, (label, _)) in ms.iter_mut().zip(STAGES) {
        *m = stage(label)?;
    }
    Ok((creates, ms))
}

/// One row per stage, `{c}: mean wait in {stage}`, each run's `stages_ms` picked by `ms`.
pub fn stage_figures<T>(c: &str, runs: &[T], ms: impl Fn(&T) -> [f64; 3]) -> Vec<Figure> {
    STAGES
        .iter()
        .enumerate()
        .map(|(i, (_, stage))| {
            Figure::new(
                &format!("{c}: mean wait in {stage}"),
                "ms",
                runs.iter().map(|t| ms(t)[i]).collect(),
            )
        })
        .collect()
}

fn parse_metrics(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.contains("_bucket{"))
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_owned(), value.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn metrics_text_is_read_by_name_and_labels() {
        let m = super::parse_metrics(
            "# HELP x y\ncallsign_alloc_db_group_commits_total 12\n\
             callsign_create_stage_seconds_sum{stage=\"phase1\"} 0.5\n\
             callsign_create_stage_seconds_bucket{le=\"0.1\",stage=\"phase1\"} 3\n# EOF\n",
        );
        assert_eq!(m["callsign_alloc_db_group_commits_total"], 12.0);
        assert_eq!(
            m["callsign_create_stage_seconds_sum{stage=\"phase1\"}"],
            0.5
        );
        assert_eq!(m.len(), 2);
    }
}
