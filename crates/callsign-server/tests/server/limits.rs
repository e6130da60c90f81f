//! Issue 20, item 9: header-read, body-read and idle timeouts and the connection cap, against
//! the real binary on 127.0.0.1.
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::{create_account, TestServer};

fn connect(server: &TestServer) -> TcpStream {
    let addr = server.url.strip_prefix("http://").unwrap();
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s
}

/// Reads until the server closes the connection; what it sent and how long that took.
/// Panics if it is still open after the 15 s read timeout.
fn read_until_closed(s: &mut TcpStream, since: Instant) -> (String, Duration) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("still open after {:?}: {e}", since.elapsed()),
        }
    }
    (String::from_utf8_lossy(&got).into_owned(), since.elapsed())
}

/// A connection that sends nothing, half a head, or drips one (a byte every 200 ms, which
/// would take 8 s) is closed about one header-read timeout (1 s) after it opened.
#[test]
fn silent_half_sent_and_dripped_heads_are_closed_after_the_header_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(dir.path(), &["--header-read-timeout", "1s"], &[]);

    let start = Instant::now();
    let mut silent = connect(&server);
    let mut half = connect(&server);
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let (_, silent_after) = read_until_closed(&mut silent, start);
    let (_, half_after) = read_until_closed(&mut half, start);
    for (what, after) in [("silent", silent_after), ("half", half_after)] {
        assert!(
            after >= Duration::from_millis(900) && after < Duration::from_secs(5),
            "{what}: closed after {after:?}"
        );
    }

    let mut drip = connect(&server);
    let start = Instant::now();
    let head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaa\r\n\r\n";
    let mut closed_at = None;
    for b in head {
        if drip.write_all(&[*b]).is_err() {
            closed_at = Some(start.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let (answer, after) = read_until_closed(&mut drip, start);
    let after = closed_at.unwrap_or(after);
    assert!(
        !answer.contains("200 OK"),
        "the dripped request was answered"
    );
    assert!(
        after < Duration::from_secs(5),
        "drip closed after {after:?}"
    );
}

/// A keep-alive connection left idle after its answer is closed after the idle timeout, well
/// before the (longer) header-read timeout.
#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(
        dir.path(),
        &["--idle-timeout", "1s", "--header-read-timeout", "30s"],
        &[],
    );
    let mut s = connect(&server);
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let start = Instant::now();
    let (answer, after) = read_until_closed(&mut s, start);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        after >= Duration::from_millis(900) && after < Duration::from_secs(5),
        "closed after {after:?}"
    );
}

/// A body that stalls part-way is answered `408 request_timeout` (problem+json) after the
/// body-read timeout.
#[test]
fn a_stalled_body_is_408_after_the_body_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (_, token) = create_account(dir.path(), "SYN");
    let server = TestServer::start(dir.path(), &["--body-read-timeout", "1s"], &[]);
    let mut s = connect(&server);
    let head = format!(
        "PUT /v1/tasks/{} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Idempotency-Key: k\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"project\"",
        uuid::Uuid::new_v4()
    );
    s.write_all(head.as_bytes()).unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("application/problem+json") && answer.contains("request_timeout"));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

/// With the cap's worth of connections that send nothing, a new client waits, and is served
/// once they time out, instead of never.
#[tokio::test]
async fn idle_connections_at_the_cap_give_way_to_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(
        dir.path(),
        &["--max-connections", "4", "--header-read-timeout", "1s"],
        &[],
    );
    let idle: Vec<TcpStream> = (0..4).map(|_| connect(&server)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    let res = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
        .get(format!("{}/healthz", server.url))
        .send()
        .await
        .expect("served once the idle connections were closed");
    let waited = start.elapsed();
    assert_eq!(res.status(), 200);
    assert!(
        waited >= Duration::from_millis(500),
        "served after {waited:?}: the cap did not hold it back"
    );
    assert!(waited < Duration::from_secs(5), "served after {waited:?}");
    for mut s in idle {
        let (_, after) = read_until_closed(&mut s, start);
        assert!(after < Duration::from_secs(5));
    }
}

/// A request with more header fields than hyper's default parses (100) is still answered by
/// the server, as problem+json `431 headers_too_large`, not hyper's empty `431`.
#[test]
fn too_many_headers_get_a_problem_json_431() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(dir.path(), &[], &[]);
    let mut s = connect(&server);
    let mut req = String::from("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
    for i in 0..150 {
        req.push_str(&format!("X-H{i}: v\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let (answer, _) = read_until_closed(&mut s, Instant::now());
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    assert!(
        answer.contains("application/problem+json") && answer.contains("headers_too_large"),
        "{answer}"
    );
}
