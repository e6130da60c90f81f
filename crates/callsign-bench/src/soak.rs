//! `--soak DURATION`: the server at a fixed data size for a long time (issue 27). Clients edit,
//! replay, pull and (rarely) create without pause; the server runs with a short idempotency
//! window so the reaper's purge works throughout. RSS and open files are sampled every few
//! seconds; the table shows them per minute, and the verdict compares the last 10 minutes with
//! minute 10 (the target: within 10 %). A cache that fills to its cap is fine; a climb to the
//! end is a leak.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use rand::Rng;
use serde_json::json;
use uuid::Uuid;

use crate::proc::{open_fds, rss_mib};
use crate::server::{fill, new_task, Server};

/// One sample of the server process.
struct Sample {
    at: Duration,
    rss_mib: f64,
    fds: usize,
    ops: u64,
}

/// Counts of what the clients did.
#[derive(Default)]
struct Ops {
    edits: AtomicU64,
    replays: AtomicU64,
    pulls: AtomicU64,
    creates: AtomicU64,
    errors: AtomicU64,
}

impl Ops {
    fn total(&self) -> u64 {
        [&self.edits, &self.replays, &self.pulls, &self.creates]
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }
}

pub struct Plan {
    pub duration: Duration,
    pub clients: usize,
    pub tasks: usize,
    pub sample: Duration,
    pub window: String,
}

pub async fn run(p: Plan) -> Result<()> {
    let s = Arc::new(Server::start_with(&[
        "--idempotency-window",
        &p.window,
        "--reaper-interval",
        "5s",
    ])?);
    let http = reqwest::Client::new();
    let uuids = Arc::new(fill(&http, &s, p.tasks).await?);
    eprintln!(
        "soak: {} tasks, {} clients, {:?}, window {}",
        p.tasks, p.clients, p.duration, p.window
    );
    let ops = Arc::new(Ops::default());
    let end = Instant::now() + p.duration;
    let mut workers = Vec::new();
    for _ in 0..p.clients {
        let (s, http, uuids, ops) = (s.clone(), http.clone(), uuids.clone(), ops.clone());
        workers.push(tokio::spawn(async move {
            client(&s, &http, &uuids, &ops, end).await
        }));
    }
    let start = Instant::now();
    let mut samples = Vec::new();
    while Instant::now() < end {
        samples.push(Sample {
            at: start.elapsed(),
            rss_mib: rss_mib(s.pid())?,
            fds: open_fds(s.pid())?,
            ops: ops.total(),
        });
        tokio::time::sleep(p.sample.min(end.saturating_duration_since(Instant::now()))).await;
    }
    for w in workers {
        w.await??;
    }
    samples.push(Sample {
        at: start.elapsed(),
        rss_mib: rss_mib(s.pid())?,
        fds: open_fds(s.pid())?,
        ops: ops.total(),
    });
    report(&samples, &ops);
    Ok(())
}

/// One client: 70 % edits, 10 % replays of its last edit, 19 % pulls (an incremental one
/// from its cursor, every tenth from the start), 1 % creates of existing tasks under new keys
/// (the data size stays fixed).
async fn client(
    s: &Server,
    http: &reqwest::Client,
    uuids: &[Uuid],
    ops: &Ops,
    end: Instant,
) -> Result<()> {
    let mut last: Option<(Uuid, String, serde_json::Value)> = None;
    let mut cursor = String::new();
    let mut n = 0u64;
    while Instant::now() < end {
        n += 1;
        let roll = rand::thread_rng().gen_range(0..100);
        let ok = match roll {
            0..=69 => {
                let uuid = uuids[rand::thread_rng().gen_range(0..uuids.len())];
                let key = Uuid::new_v4().to_string();
                let body = json!({"description": format!("soak edit {n}")});
                let r = patch(s, http, uuid, &key, &body).await?;
                last = Some((uuid, key, body));
                ops.edits.fetch_add(1, Ordering::Relaxed);
                r
            }
            70..=79 => match &last {
                Some((uuid, key, body)) => {
                    ops.replays.fetch_add(1, Ordering::Relaxed);
                    patch(s, http, *uuid, key, body).await?
                }
                None => true,
            },
            80..=98 => {
                if n.is_multiple_of(10) {
                    cursor.clear();
                }
                let resp = http
                    .get(format!("{}/v1/changes?limit=1000&since={cursor}", s.url))
                    .bearer_auth(&s.token)
                    .send()
                    .await?;
                let ok = resp.status().is_success();
                let page: serde_json::Value = resp.json().await?;
                if let Some(c) = page["cursor"].as_str() {
                    cursor = c.to_owned();
                }
                ops.pulls.fetch_add(1, Ordering::Relaxed);
                ok
            }
            _ => {
                // A create that adds nothing: a new idempotency key for a task the fill made,
                // with the fill's body, so phase 1 and 2 run and the data size stays fixed.
                let i = rand::thread_rng().gen_range(0..uuids.len());
                let resp = http
                    .put(format!("{}/v1/tasks/{}", s.url, uuids[i]))
                    .bearer_auth(&s.token)
                    .header("Idempotency-Key", Uuid::new_v4().to_string())
                    .json(&new_task(format!("fill {i}")))
                    .send()
                    .await?;
                ops.creates.fetch_add(1, Ordering::Relaxed);
                resp.status().is_success()
            }
        };
        if !ok {
            ops.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}

async fn patch(
    s: &Server,
    http: &reqwest::Client,
    uuid: Uuid,
    key: &str,
    body: &serde_json::Value,
) -> Result<bool> {
    let resp = http
        .patch(format!("{}/v1/tasks/{uuid}", s.url))
        .bearer_auth(&s.token)
        .header("Idempotency-Key", key)
        .json(body)
        .send()
        .await?;
    if resp.status().is_server_error() {
        bail!("PATCH: {}", resp.status());
    }
    Ok(resp.status().is_success())
}

fn report(samples: &[Sample], ops: &Ops) {
    println!("| minute | server RSS MiB | open files | requests/s in the minute |");
    println!("|---|---|---|---|");
    let mut prev: Option<&Sample> = samples.first();
    let minutes = samples.last().map_or(0, |s| s.at.as_secs() / 60);
    for m in 1..=minutes.max(1) {
        let Some(last) = samples.iter().rev().find(|s| s.at.as_secs() / 60 < m) else {
            continue;
        };
        let rate = prev.map_or(0.0, |p| {
            (last.ops - p.ops) as f64 / (last.at - p.at).as_secs_f64().max(1e-9)
        });
        println!("| {m} | {:.1} | {} | {:.0} |", last.rss_mib, last.fds, rate);
        prev = Some(last);
    }
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    println!(
        "\n{} edits, {} replays, {} pulls, {} creates, {} refused",
        load(&ops.edits),
        load(&ops.replays),
        load(&ops.pulls),
        load(&ops.creates),
        load(&ops.errors)
    );
    // The verdict: RSS over the last 10 minutes against minute 10 (for a shorter soak: the
    // second half against the middle).
    let total = samples.last().map_or(Duration::ZERO, |s| s.at);
    let mark = if total >= Duration::from_secs(20 * 60) {
        Duration::from_secs(10 * 60)
    } else {
        total / 2
    };
    let at_mark = samples
        .iter()
        .find(|s| s.at >= mark)
        .map_or(0.0, |s| s.rss_mib);
    let tail: Vec<f64> = samples
        .iter()
        .filter(|s| s.at >= total.saturating_sub(mark.min(Duration::from_secs(600))))
        .map(|s| s.rss_mib)
        .collect();
    let max = tail.iter().copied().fold(0.0, f64::max);
    let fds_max = samples.iter().map(|s| s.fds).max().unwrap_or(0);
    println!(
        "RSS at {} s: {at_mark:.1} MiB; highest in the last {} s: {max:.1} MiB ({:+.1} %, target within 10 %); open files at most {fds_max}",
        mark.as_secs(),
        mark.min(Duration::from_secs(600)).as_secs(),
        (max / at_mark.max(1e-9) - 1.0) * 100.0
    );
}
