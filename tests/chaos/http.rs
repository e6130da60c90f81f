//! Just enough HTTP/1.1 framing for a relaying proxy: one message (head + `Content-Length`
//! body) as raw bytes. The engine's client and the server never use chunked bodies.
use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// One HTTP message: its head (through the blank line) and its body.
pub struct Message {
    pub head: Vec<u8>,
    pub body: Vec<u8>,
}

impl Message {
    pub fn bytes(&self) -> Vec<u8> {
        let mut all = self.head.clone();
        all.extend_from_slice(&self.body);
        all
    }

    /// `METHOD PATH` of a request (the first line without the version).
    pub fn request_line(&self) -> String {
        let line = self.head.split(|b| *b == b'\r').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        line.rsplit_once(' ')
            .map_or(line.to_string(), |(l, _)| l.to_owned())
    }
}

/// Reads one message; `None` at a clean EOF before any byte.
pub async fn read_message<R: AsyncBufRead + Unpin>(r: &mut R) -> io::Result<Option<Message>> {
    let mut head = Vec::new();
    let mut len = 0usize;
    loop {
        let mut line = Vec::new();
        if r.read_until(b'\n', &mut line).await? == 0 {
            if head.is_empty() {
                return Ok(None);
            }
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let text = String::from_utf8_lossy(&line).to_ascii_lowercase();
        if let Some(v) = text.strip_prefix("content-length:") {
            len = v
                .trim()
                .parse()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "content-length"))?;
        }
        head.extend_from_slice(&line);
        if line == b"\r\n" {
            break;
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).await?;
    Ok(Some(Message { head, body }))
}
