//! The accept loop: HTTP/1.1 connections through hyper, with the limits `axum::serve` lacks.
//!
//! - At most [`Limits::max_connections`] connections at once: the loop takes a permit before it
//!   accepts, so past the cap new connections wait in the kernel's backlog instead of taking
//!   file descriptors the databases need, and are accepted as soon as one closes.
//! - A request head (request line and headers) must arrive within
//!   [`Limits::header_read_timeout`] of the server starting to wait for it (hyper's timer), so
//!   a connection that sends nothing, half a head, or drips it is closed.
//! - A connection with no request in flight and no bytes moving for [`Limits::idle_timeout`]
//!   is closed.
//! - The body-read timeout is enforced where bodies are read (`api::extract::ApiJson`).
//!
//! Each request carries its peer address as `ConnectInfo<SocketAddr>` (the auth throttle keys
//! on it). On shutdown the loop stops accepting and lets open requests finish, up to
//! [`SHUTDOWN_GRACE`].
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// Header fields hyper parses before it gives up with a bare `431`: well above what the API
/// answers (`api::extract::MAX_HEADERS`), so a request with too many gets this server's
/// problem+json `431` instead.
const MAX_PARSED_HEADERS: usize = 256;

/// How long shutdown waits for requests in flight.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Connection limits and timeouts (`serve` flags).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 512,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

/// When a connection last moved bytes, and how many of its requests are being answered.
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// How long the connection has been idle (zero while a request is being answered).
    fn idle_for(&self) -> Duration {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return Duration::ZERO;
        }
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
}

/// Counts a request as in flight until dropped.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn new(a: &Arc<Activity>) -> InFlight {
        a.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(a.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A TCP stream that records when bytes last moved.
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        res
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let res = Pin::new(&mut self.stream).poll_write(cx, buf);
        if matches!(res, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        res
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Resolves once the connection has been idle for `limit`.
async fn idle(activity: Arc<Activity>, limit: Duration) {
    loop {
        let idle_for = activity.idle_for();
        if idle_for >= limit {
            return;
        }
        tokio::time::sleep(limit - idle_for).await;
    }
}

/// Serves `app` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // Out of file descriptors, say: wait for some to close.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let activity = Arc::new(Activity::new());
        let in_req = activity.clone();
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
            let guard = InFlight::new(&in_req);
            let app = app.clone();
            async move {
                let res = app.oneshot(req.map(axum::body::Body::new)).await;
                drop(guard);
                res
            }
        });
        let io = TokioIo::new(Watched {
            stream,
            activity: activity.clone(),
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .max_headers(MAX_PARSED_HEADERS)
            .serve_connection(io, service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            tokio::select! {
                res = conn => if let Err(e) = res {
                    tracing::debug!(error = %e, %peer, "connection ended with an error");
                },
                () = idle(activity, limits.idle_timeout) => {
                    tracing::debug!(%peer, "closed an idle connection");
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still open after {SHUTDOWN_GRACE:?}; stopping anyway");
    }
}
