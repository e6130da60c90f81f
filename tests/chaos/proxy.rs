//! A fault proxy on 127.0.0.1 between the clients and the server. For each request under `/v1`
//! it draws one decision from an RNG seeded with the campaign's seed: pass; drop the request
//! before the server sees it; let the server answer and drop the answer; delay; deliver the
//! request twice (a concurrent copy on a second connection); or send half the body and reset.
//! Every decision is logged with the seed and the request's sequence number.
//!
//! The draws are in arrival order, so a replay with the same seed makes the same sequence of
//! decisions; which request meets which decision also depends on timing.
//!
//! With several upstreams (server nodes) it balances as a load balancer does: each connection
//! to a server goes to the next node in turn, and one that refuses the connection is skipped
//! for the next. A client's retry comes on a new connection (the proxy closes it when it drops
//! a request or an answer), so it usually reaches another node than the first attempt, and a
//! duplicate is sent to another node than the original.
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

use crate::http::{read_message, Message};

/// The chance of each fault per request (the rest pass).
#[derive(Debug, Clone, Copy)]
pub struct FaultRates {
    pub drop_request: f64,
    pub drop_response: f64,
    pub delay: f64,
    pub duplicate: f64,
    pub reset_mid_body: f64,
    pub max_delay: Duration,
}

impl Default for FaultRates {
    fn default() -> Self {
        FaultRates {
            drop_request: 0.04,
            drop_response: 0.08,
            delay: 0.05,
            duplicate: 0.04,
            reset_mid_body: 0.03,
            max_delay: Duration::from_millis(400),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Pass,
    DropRequest,
    DropResponse,
    Delay(Duration),
    Duplicate,
    ResetMidBody,
}

/// What the proxy did, by kind.
#[derive(Debug, Default)]
pub struct Counts {
    pub requests: AtomicU64,
    pub dropped_requests: AtomicU64,
    pub dropped_responses: AtomicU64,
    pub delayed: AtomicU64,
    pub duplicated: AtomicU64,
    pub resets: AtomicU64,
    /// Requests that found the server down (every node refused, or the connection was cut).
    pub upstream_down: AtomicU64,
    /// Connections that skipped a node that refused them and reached the next one.
    pub failovers: AtomicU64,
    /// Per upstream (node), the requests it answered.
    pub answered: Vec<AtomicU64>,
}

struct Shared {
    seed: u64,
    upstreams: Vec<String>,
    /// Where the next connection's round starts.
    next: AtomicUsize,
    rates: FaultRates,
    rng: Mutex<ChaCha8Rng>,
    enabled: AtomicBool,
    seq: AtomicU64,
    counts: Counts,
    log: Mutex<Vec<String>>,
}

impl Shared {
    fn decide(&self, req: &Message) -> Fault {
        let n = self.seq.fetch_add(1, Ordering::SeqCst);
        let line = req.request_line();
        let fault = if self.enabled.load(Ordering::SeqCst) && line.contains(" /v1/") {
            self.draw()
        } else {
            Fault::Pass
        };
        self.counts.requests.fetch_add(1, Ordering::Relaxed);
        let counter = match fault {
            Fault::Pass => None,
            Fault::DropRequest => Some(&self.counts.dropped_requests),
            Fault::DropResponse => Some(&self.counts.dropped_responses),
            Fault::Delay(_) => Some(&self.counts.delayed),
            Fault::Duplicate => Some(&self.counts.duplicated),
            Fault::ResetMidBody => Some(&self.counts.resets),
        };
        if let Some(c) = counter {
            c.fetch_add(1, Ordering::Relaxed);
        }
        if fault != Fault::Pass {
            self.note(format!("seed={} req#{n} {line} -> {fault:?}", self.seed));
        }
        fault
    }

    fn draw(&self) -> Fault {
        let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
        let r = &self.rates;
        let x: f64 = rng.gen();
        let kind = [
            r.drop_request,
            r.drop_response,
            r.delay,
            r.duplicate,
            r.reset_mid_body,
        ]
        .iter()
        .scan(0.0, |edge, p| {
            *edge += p;
            Some(*edge)
        })
        .position(|edge| x < edge);
        match kind {
            Some(0) => Fault::DropRequest,
            Some(1) => Fault::DropResponse,
            Some(2) => Fault::Delay(Duration::from_millis(
                rng.gen_range(1..=r.max_delay.as_millis().max(1) as u64),
            )),
            Some(3) => Fault::Duplicate,
            Some(4) => Fault::ResetMidBody,
            _ => Fault::Pass,
        }
    }

    fn note(&self, line: String) {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(line);
    }
}

pub struct FaultProxy {
    pub url: String,
    shared: Arc<Shared>,
    _rt: tokio::runtime::Runtime,
}

impl FaultProxy {
    /// Listens on `127.0.0.1:0` and relays to `upstreams` (`127.0.0.1:PORT` each, at least
    /// one), balancing connections over them; faults start off.
    pub fn start(upstreams: Vec<String>, seed: u64, rates: FaultRates) -> Result<FaultProxy> {
        anyhow::ensure!(!upstreams.is_empty(), "the proxy needs an upstream");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0"))?;
        let url = format!("http://{}", listener.local_addr()?);
        let answered = upstreams.iter().map(|_| AtomicU64::new(0)).collect();
        let shared = Arc::new(Shared {
            seed,
            upstreams,
            next: AtomicUsize::new(0),
            rates,
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_9e37_79b9_7f4a)),
            enabled: AtomicBool::new(false),
            seq: AtomicU64::new(0),
            counts: Counts {
                answered,
                ..Counts::default()
            },
            log: Mutex::new(Vec::new()),
        });
        let s = shared.clone();
        rt.spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let s = s.clone();
                tokio::spawn(async move {
                    let _ = relay(client, &s).await;
                });
            }
        });
        Ok(FaultProxy {
            url,
            shared,
            _rt: rt,
        })
    }

    /// Turns fault injection on or off (off = a plain relay).
    pub fn set_faults(&self, on: bool) {
        self.shared.enabled.store(on, Ordering::SeqCst);
        self.shared.note(format!(
            "seed={} faults {}",
            self.shared.seed,
            if on { "on" } else { "off" }
        ));
    }

    pub fn counts(&self) -> &Counts {
        &self.shared.counts
    }

    /// Every decision other than pass, in order.
    pub fn log(&self) -> Vec<String> {
        self.shared
            .log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// A connection to one node: its index in the upstreams, and the connection's two halves.
type Upstream = (usize, BufReader<OwnedReadHalf>, OwnedWriteHalf);

/// Connects to the next node in turn, skipping to the one after when a node refuses (each
/// tried once); the error is the last node's when none answers.
async fn connect(s: &Shared) -> std::io::Result<Upstream> {
    let n = s.upstreams.len();
    let first = s.next.fetch_add(1, Ordering::Relaxed);
    let mut last = None;
    for i in 0..n {
        let node = (first + i) % n;
        let addr = &s.upstreams[node];
        let attempt = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await;
        match attempt.unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into())) {
            Ok(stream) => {
                if i > 0 {
                    s.counts.failovers.fetch_add(1, Ordering::Relaxed);
                }
                let (r, w) = stream.into_split();
                return Ok((node, BufReader::new(r), w));
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::ErrorKind::NotConnected.into()))
}

/// A connect on loopback either succeeds or is refused at once; this only bounds the wait.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// One client connection: requests in order, each with its decision. Returning closes the
/// client's connection (what a client sees when a request or answer is lost).
async fn relay(client: TcpStream, s: &Shared) -> std::io::Result<()> {
    let (cr, mut cw) = client.into_split();
    let mut cr = BufReader::new(cr);
    let mut upstream: Option<Upstream> = None;
    while let Some(req) = read_message(&mut cr).await? {
        let fault = s.decide(&req);
        match fault {
            Fault::DropRequest => return Ok(()),
            Fault::ResetMidBody => {
                if let Ok((_, _, mut w)) = connect(s).await {
                    let half = req.body.len() / 2;
                    let _ = w.write_all(&req.head).await;
                    let _ = w.write_all(&req.body[..half]).await;
                    let _ = w.flush().await;
                    // Dropping both halves of the connection resets it mid-body.
                }
                return Ok(());
            }
            Fault::Delay(d) => tokio::time::sleep(d).await,
            Fault::Duplicate => {
                // The copy takes its own connection, so with several nodes another node.
                if let Ok((_, mut r, mut w)) = connect(s).await {
                    let bytes = req.bytes();
                    tokio::spawn(async move {
                        if w.write_all(&bytes).await.is_ok() {
                            let _ = read_message(&mut r).await;
                        }
                    });
                }
            }
            Fault::Pass | Fault::DropResponse => {}
        }
        let resp = match forward(&mut upstream, s, &req).await {
            Ok(resp) => resp,
            Err(_) => {
                s.counts.upstream_down.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
        };
        if fault == Fault::DropResponse {
            return Ok(()); // the server has done the work; the client never hears of it
        }
        cw.write_all(&resp.bytes()).await?;
    }
    Ok(())
}

async fn forward(up: &mut Option<Upstream>, s: &Shared, req: &Message) -> std::io::Result<Message> {
    if up.is_none() {
        *up = Some(connect(s).await?);
    }
    let (node, r, w) = up.as_mut().expect("connected above");
    let sent = async {
        w.write_all(&req.bytes()).await?;
        read_message(r)
            .await?
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))
    }
    .await;
    if sent.is_ok() {
        s.counts.answered[*node].fetch_add(1, Ordering::Relaxed);
    }
    if sent.is_err() {
        *up = None;
    }
    sent
}
