//! Issue 26's figures: how soon a teammate's new key reaches the other devices of a team, and
//! what held `GET /v1/changes?wait=` requests cost an idle server.
//!
//! - **Visibility.** `members` members with `per_member` devices each, every device an
//!   [`Engine`] with its own data dir and token, its sync loop running (one held request each).
//!   Each create is made on one device in turn; the clock starts when `Engine::create` returns
//!   and stops, per other device, when that device's store has the task with its key.
//! - **Held requests.** `held` requests held open on one account while nothing is written: the
//!   server's CPU share over a quiet window and its RSS growth per request; then one create, and
//!   how long until every held request has answered. The baseline is the same devices polling
//!   every [`PERIOD`] (what the engine did before it held a request): its CPU share over the
//!   same window.
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use callsign_sync::sync_loop::PERIOD;
use callsign_sync::{Engine, Event, NewTaskInput, Token};
use futures_util::future::join_all;
use tokio::sync::broadcast;
use uuid::Uuid;

use crate::proc;
use crate::server::{Server, PREFIX};
use crate::stats::percentile;

/// One visibility run: every sample is one (create, other device) pair, in ms.
pub struct Visibility {
    pub samples_ms: Vec<f64>,
}

impl Visibility {
    pub fn p50(&self) -> f64 {
        percentile(&self.samples_ms, 50.0)
    }
    pub fn p99(&self) -> f64 {
        percentile(&self.samples_ms, 99.0)
    }
}

struct Device {
    engine: Engine,
    _home: tempfile::TempDir,
}

/// `creates` creates spread over `members` × `per_member` devices; see the module doc.
pub async fn visibility(members: usize, per_member: usize, creates: usize) -> Result<Visibility> {
    let s = Server::start()?;
    let mut devices = Vec::with_capacity(members * per_member);
    for m in 0..members {
        let token = if m == 0 {
            s.token.clone()
        } else {
            s.add_member(&format!("member{m}"))?
        };
        for d in 0..per_member {
            let home = tempfile::tempdir()?;
            let engine = Engine::open(home.path())?;
            engine
                .login(&s.url, Token::new(&token), Some(format!("m{m}d{d}")))
                .await?;
            engine.start();
            devices.push(Device {
                engine,
                _home: home,
            });
        }
    }
    // Every loop has passed once and opened its held request.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut samples = Vec::with_capacity(creates * (devices.len() - 1));
    for i in 0..creates {
        let a = i % devices.len();
        let others: Vec<(usize, broadcast::Receiver<Event>)> = devices
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != a)
            .map(|(j, d)| (j, d.engine.subscribe()))
            .collect();
        let task = devices[a].engine.create(NewTaskInput {
            description: format!("teammate task {i}"),
            project: Some(PREFIX.into()),
            ..NewTaskInput::default()
        })?;
        let t = Instant::now();
        let waits = others
            .into_iter()
            .map(|(j, rx)| keyed(&devices[j].engine, task.uuid, rx, t));
        for r in join_all(waits).await {
            samples.push(r.with_context(|| format!("create {i} on device {a}"))?);
        }
        // A person does not create tasks back to back: a short, varying gap.
        tokio::time::sleep(Duration::from_millis(50 + (i as u64 * 37) % 150)).await;
    }
    for d in &devices {
        d.engine.stop().await;
    }
    Ok(Visibility {
        samples_ms: samples,
    })
}

/// Ms from `t` until `engine` has `uuid` with its key (10 s at most).
async fn keyed(
    engine: &Engine,
    uuid: Uuid,
    mut events: broadcast::Receiver<Event>,
    t: Instant,
) -> Result<f64> {
    // Not there yet is an error from `get`, as is anything else: look again on the next event.
    let has_key = || {
        engine
            .get(&uuid.to_string())
            .is_ok_and(|task| task.key.is_some())
    };
    let deadline = t + Duration::from_secs(10);
    loop {
        if has_key() {
            return Ok(t.elapsed().as_secs_f64() * 1000.0);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, events.recv()).await {
            Err(_) => bail!("no key within 10 s"),
            Ok(Ok(Event::TaskChanged { uuid: u })) if u != uuid => {}
            Ok(Ok(_)) | Ok(Err(broadcast::error::RecvError::Lagged(_))) => {}
            Ok(Err(e)) => bail!("event channel: {e}"),
        }
    }
}

/// What `held` held requests cost, and the polling baseline (module doc).
pub struct Held {
    /// The server's CPU share (percent of one core) with the requests held and no writes.
    pub held_cpu_pct: f64,
    /// The same with the same number of devices each polling once a [`PERIOD`].
    pub polling_cpu_pct: f64,
    /// RSS growth per held request, KiB.
    pub kib_per_request: f64,
    /// RSS with nothing held, MiB.
    pub idle_rss_mib: f64,
    /// From one create's answer until the last held request has answered, ms.
    pub fan_out_ms: f64,
}

pub async fn held(held: usize, window: Duration) -> Result<Held> {
    let max = (held + 16).to_string();
    let s = Server::start_with(&[
        // Held requests get at most half the connections.
        "--max-connections",
        &(2 * held + 64).to_string(),
        "--max-held-changes",
        &max,
        "--max-held-changes-per-account",
        &max,
    ])?;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(held + 16)
        .build()?;
    crate::server::put_create(&http, &s, "before the wait".into()).await?;
    let cursor = cursor(&http, &s).await?;
    // Let the server settle after start-up and the create.
    tokio::time::sleep(Duration::from_secs(2)).await;

    // The baseline first: every device polls once in a PERIOD, spread evenly, for the window.
    let gap = PERIOD / held as u32;
    let polls = (window.as_secs_f64() / gap.as_secs_f64()) as usize;
    let before = proc::usage(s.pid())?;
    let t = Instant::now();
    for i in 0..polls {
        tokio::time::sleep_until((t + gap * i as u32).into()).await;
        let resp = http
            .get(format!("{}/v1/changes", s.url))
            .query(&[("since", cursor.as_str()), ("limit", "1")])
            .bearer_auth(&s.token)
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!("a poll: {}", resp.status());
        }
        resp.bytes().await?;
    }
    tokio::time::sleep_until((t + window).into()).await;
    let polling_cpu_pct = cpu_pct(proc::usage(s.pid())? - before, t.elapsed());

    let idle_rss_mib = proc::rss_mib(s.pid())?;
    let mut tasks = Vec::with_capacity(held);
    for _ in 0..held {
        let (http, url, token, cursor) =
            (http.clone(), s.url.clone(), s.token.clone(), cursor.clone());
        tasks.push(tokio::spawn(async move {
            let resp = http
                .get(format!("{url}/v1/changes"))
                .query(&[("since", cursor.as_str()), ("limit", "1"), ("wait", "60")])
                .bearer_auth(token)
                .send()
                .await?;
            let status = resp.status();
            resp.bytes().await?;
            if !status.is_success() {
                bail!("a held request: {status}");
            }
            Ok::<Instant, anyhow::Error>(Instant::now())
        }));
    }
    // All of them are held once the server's RSS has stopped growing for a while.
    let mut last = proc::rss_mib(s.pid())?;
    let mut still = 0;
    let start = Instant::now();
    while still < 4 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = proc::rss_mib(s.pid())?;
        still = if (now - last).abs() < 0.05 {
            still + 1
        } else {
            0
        };
        last = now;
        if start.elapsed() > Duration::from_secs(20) {
            bail!("the server's RSS kept moving while {held} requests were being held");
        }
    }
    if let Some(done) = tasks.iter().position(|t| t.is_finished()) {
        bail!("held request {done} answered before anything was written");
    }
    let kib_per_request = (last - idle_rss_mib) * 1024.0 / held as f64;
    let before = proc::usage(s.pid())?;
    let t = Instant::now();
    tokio::time::sleep(window).await;
    let held_cpu_pct = cpu_pct(proc::usage(s.pid())? - before, t.elapsed());
    if tasks.iter().any(|t| t.is_finished()) {
        bail!("a held request answered before anything was written");
    }

    crate::server::put_create(&http, &s, "wakes them".into()).await?;
    let written = Instant::now();
    let mut last_answer = written;
    for t in join_all(tasks).await {
        last_answer = last_answer.max(t??);
    }
    Ok(Held {
        held_cpu_pct,
        polling_cpu_pct,
        kib_per_request,
        idle_rss_mib,
        fan_out_ms: (last_answer - written).as_secs_f64() * 1000.0,
    })
}

fn cpu_pct(used: proc::Usage, over: Duration) -> f64 {
    used.cpu_secs / over.as_secs_f64() * 100.0
}

/// The account's current change cursor.
async fn cursor(http: &reqwest::Client, s: &Server) -> Result<String> {
    let v: serde_json::Value = http
        .get(format!("{}/v1/changes", s.url))
        .query(&[("limit", "1000")])
        .bearer_auth(&s.token)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    if v["has_more"].as_bool() == Some(true) {
        bail!("more than one page of changes before the wait");
    }
    Ok(v["cursor"].as_str().context("cursor")?.to_owned())
}
