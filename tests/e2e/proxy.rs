//! Responses lost after the server committed: a loopback proxy relays requests to the server but
//! closes the client's connection instead of relaying the answer of the first `POST /v1/sync`.
//! The retry carries the same idempotency keys, the server replays, and no number is burnt.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use callsign_chaos::http::read_message;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::fixture::{keyed, server_tasks, Cli, TestServer};

pub struct DropProxy {
    pub url: String,
    pub dropped: Arc<AtomicUsize>,
    _rt: tokio::runtime::Runtime,
}

impl DropProxy {
    /// Proxies to `upstream` (`host:port`), dropping the answers of the first `drop_first`
    /// `POST /v1/sync` requests after the server has sent them.
    pub fn start(upstream: String, drop_first: usize) -> Result<DropProxy> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0"))?;
        let url = format!("http://{}", listener.local_addr()?);
        let dropped = Arc::new(AtomicUsize::new(0));
        let counter = dropped.clone();
        rt.spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (upstream, counter) = (upstream.clone(), counter.clone());
                tokio::spawn(async move {
                    let _ = relay(client, &upstream, &counter, drop_first).await;
                });
            }
        });
        Ok(DropProxy {
            url,
            dropped,
            _rt: rt,
        })
    }
}

async fn relay(
    client: TcpStream,
    upstream: &str,
    dropped: &AtomicUsize,
    drop_first: usize,
) -> Result<()> {
    let (cr, mut cw) = client.into_split();
    let mut cr = BufReader::new(cr);
    let server = TcpStream::connect(upstream).await?;
    let (sr, mut sw) = server.into_split();
    let mut sr = BufReader::new(sr);
    while let Some(req) = read_message(&mut cr).await? {
        sw.write_all(&req.bytes()).await?;
        let resp = read_message(&mut sr).await?.context("upstream closed")?;
        if req.request_line() == "POST /v1/sync"
            && dropped.fetch_add(1, Ordering::SeqCst) < drop_first
        {
            return Ok(()); // the server committed and answered; the client never hears it
        }
        cw.write_all(&resp.bytes()).await?;
    }
    Ok(())
}

#[test]
fn a_lost_response_is_replayed_with_the_same_keys() -> Result<()> {
    let (server, account) = TestServer::start("PRX")?;
    let proxy = DropProxy::start(server.url.trim_start_matches("http://").to_owned(), 1)?;
    let home = tempfile::tempdir()?;
    let cli = Cli::new(home.path());
    cli.login(&proxy.url, &account.token)?;
    let uuids: Vec<String> = (1..=3)
        .map(|i| cli.add(&format!("task {i}"), &[]))
        .collect::<Result<_>>()?;

    let out = cli.output(&["sync"])?;
    assert!(
        !out.status.success(),
        "the answer was dropped, so the sync must report failure"
    );
    assert!(
        cli.list()?.iter().all(|t| t["key"].is_null()),
        "no key without an answer"
    );
    let committed = server_tasks(&server.url, &account.token)?;
    assert_eq!(
        committed.len(),
        3,
        "the server did commit the dropped batch"
    );

    cli.ok(&["sync"])?;
    let keys: std::collections::HashMap<_, _> = keyed(&cli.list()?)?.into_iter().collect();
    for (i, u) in uuids.iter().enumerate() {
        assert_eq!(keys[u], format!("PRX-{}", i + 1));
    }
    for t in &committed {
        assert_eq!(
            keys[&t.uuid.to_string()],
            t.key.clone().unwrap_or_default(),
            "the replay's key"
        );
    }
    let u4 = cli.add("after the replay", &[])?;
    cli.ok(&["sync"])?;
    assert_eq!(
        keyed(&cli.list()?)?
            .into_iter()
            .find(|(u, _)| *u == u4)
            .map(|p| p.1),
        Some("PRX-4".into()),
        "no number was burnt by the retry"
    );
    assert_eq!(server_tasks(&server.url, &account.token)?.len(), 4);
    assert!(proxy.dropped.load(Ordering::SeqCst) >= 2);
    Ok(())
}
