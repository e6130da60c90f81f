//! The throughput section's load generator: one HTTP/1.1 connection per client, kept open, on
//! hyper's connection API.
//!
//! The 64 clients share the machine's two cores with the server, which a team's devices would
//! not; whatever the load generator spends per request is taken from the server. reqwest's
//! client spent about twice the CPU per request (47 against 25 µs per create, the tool's CPU
//! rows), much of it on what a benchmark client does not need (parsing the URL, picking a
//! pooled connection, building a header map for each request), so
//! here each client owns one connection and sends a complete `PUT` on it, as `wrk` or `h2load`
//! would. The requests are the same ones (headers, JSON body, fresh UUID and idempotency key),
//! and the answer is read whole and checked.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use uuid::Uuid;

use crate::server::{new_task, Server};

/// One client's connection to the server.
pub struct Client {
    send: SendRequest<Full<Bytes>>,
    host: String,
    auth: String,
}

impl Client {
    /// Connects to the server (loopback only: its URL is `http://127.0.0.1:<port>`).
    pub async fn connect(s: &Server) -> Result<Client> {
        Client::connect_to(&s.url, &s.token).await
    }

    /// Connects to the node at `url` (another node of the same database, say).
    pub async fn connect_to(url: &str, token: &str) -> Result<Client> {
        let host = url
            .strip_prefix("http://")
            .context("the server's URL is http://")?
            .to_owned();
        let tcp = tokio::net::TcpStream::connect(&host).await?;
        tcp.set_nodelay(true)?;
        let (send, conn) = http1::handshake(TokioIo::new(tcp)).await?;
        // The connection's I/O runs as a task of its own until `send` is dropped.
        tokio::spawn(conn);
        Ok(Client {
            send,
            host,
            auth: format!("Bearer {token}"),
        })
    }

    /// One `PUT /v1/tasks/{uuid}` create; the assigned number.
    pub async fn put_create(&mut self, description: String) -> Result<u64> {
        #[derive(Deserialize)]
        struct Created {
            number: u64,
        }
        let body = serde_json::to_vec(&new_task(description))?;
        let req = Request::put(format!("/v1/tasks/{}", Uuid::new_v4()))
            .header(HOST, &self.host)
            .header(AUTHORIZATION, &self.auth)
            .header("Idempotency-Key", Uuid::new_v4().to_string())
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))?;
        self.send.ready().await?;
        let resp = self.send.send_request(req).await?;
        let status = resp.status();
        let body = resp.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            bail!("PUT create: {status} {}", String::from_utf8_lossy(&body));
        }
        Ok(serde_json::from_slice::<Created>(&body)
            .context("number in the answer")?
            .number)
    }
}

/// What [`run`] saw: every create's latency (ms) and the wall time from the first start.
pub struct Run {
    pub latencies_ms: Vec<f64>,
    pub elapsed_s: f64,
}

/// Each client creates tasks one after another until `secs` have passed since the first one
/// started; every create that started is awaited and counted.
pub async fn run(clients: Vec<Client>, secs: f64) -> Result<Run> {
    let stop = Arc::new(AtomicBool::new(false));
    let t = Instant::now();
    let mut tasks = Vec::with_capacity(clients.len());
    for (c, mut conn) in clients.into_iter().enumerate() {
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                conn.put_create(format!("c{c} {}", mine.len())).await?;
                mine.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            anyhow::Ok(mine)
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies_ms = Vec::new();
    for task in tasks {
        latencies_ms.extend(task.await??);
    }
    Ok(Run {
        latencies_ms,
        elapsed_s: t.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// Reads one request (head and `Content-Length` body) and answers `status` with `body`.
    async fn answer_one(listener: &TcpListener, status: &str, body: &str) -> (String, String) {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let (head, len) = loop {
            let n = sock.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the client closed before a whole request");
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).into_owned();
            if let Some(end) = text.find("\r\n\r\n") {
                let head = text[..end].to_owned();
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .expect("a Content-Length");
                if buf.len() >= end + 4 + len {
                    break (head, len);
                }
            }
        };
        let start = buf.len() - len;
        let req_body = String::from_utf8(buf[start..].to_vec()).unwrap();
        let reply = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        sock.write_all(reply.as_bytes()).await.unwrap();
        (head, req_body)
    }

    /// A client (token `tok`) connected to a listener on 127.0.0.1 that answers one request
    /// with `status` and `body`; the listener's task gives back that request's head and body.
    async fn serve_one(
        status: &'static str,
        body: &'static str,
    ) -> (Client, tokio::task::JoinHandle<(String, String)>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move { answer_one(&listener, status, body).await });
        (Client::connect_to(&url, "tok").await.unwrap(), server)
    }

    #[tokio::test]
    async fn a_create_is_a_complete_put_and_its_number_is_read_from_the_answer() {
        let (mut client, server) =
            serve_one("201 Created", r#"{"uuid":"x","key":"BEN-7","number":7}"#).await;
        assert_eq!(client.put_create("hello".into()).await.unwrap(), 7);
        let (head, body) = server.await.unwrap();
        let head = head.to_ascii_lowercase();
        assert!(head.starts_with("put /v1/tasks/"), "{head}");
        for h in [
            "authorization: bearer tok",
            "idempotency-key: ",
            "content-type: application/json",
            "host: 127.0.0.1:",
        ] {
            assert!(head.contains(h), "{h:?} missing in {head}");
        }
        let sent: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (sent["project"].as_str(), sent["description"].as_str()),
            (Some("BEN"), Some("hello"))
        );
    }

    #[tokio::test]
    async fn a_refused_create_is_an_error_that_carries_the_answer() {
        let (mut client, server) = serve_one(
            "422 Unprocessable Entity",
            r#"{"code":"idempotency_key_reused"}"#,
        )
        .await;
        let err = client.put_create("x".into()).await.unwrap_err().to_string();
        assert!(
            err.contains("422") && err.contains("idempotency_key_reused"),
            "{err}"
        );
        server.await.unwrap();
    }
}
