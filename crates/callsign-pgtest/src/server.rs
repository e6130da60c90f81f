//! A PostgreSQL server tests make schemas and databases on.
//!
//! A fresh schema's URL carries `options=-c search_path=<schema>` (percent-encoded):
//! tokio-postgres (and so deadpool-postgres) sends it in the startup message, so every
//! connection made from that URL resolves unqualified names in that schema alone, and creates
//! its tables there. Names are `t_<label>_<pid>_<n>`; one that exists already (left by an
//! earlier run on an external server) is skipped for the next `n`.

use std::sync::atomic::{AtomicU32, Ordering};

use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;

use crate::{io, Error, Result};

#[cfg(test)]
mod tests;

/// A PostgreSQL server reachable at a `postgres://` URL as a user that may create schemas and
/// databases: a [`Cluster`](crate::Cluster)'s, or one named by `CALLSIGN_TEST_PG_URL`.
#[derive(Clone, Debug)]
pub struct Server {
    url: String,
}

/// Distinguishes the names one process makes; the pid distinguishes processes.
static NEXT: AtomicU32 = AtomicU32::new(1);

/// Tries before giving up on finding an unused name.
const NAME_TRIES: u32 = 100;

impl Server {
    /// A server at `url` (`postgres://user@host:port/database`).
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into() }
    }

    /// The server's own URL (its `postgres` database, `public` schema).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Creates a new empty schema and returns a URL whose connections use it as their
    /// `search_path`. `label` (say, the test's name) is part of the schema's name, cleaned to
    /// `[a-z0-9_]` and cut to 24 characters. Needs a Tokio runtime (it connects with
    /// tokio-postgres); [`fresh_schema_blocking`](Self::fresh_schema_blocking) does not.
    pub async fn fresh_schema(&self, label: &str) -> Result<String> {
        check_url(&self.url)?;
        let name = self
            .create_unique(label, "CREATE SCHEMA", &SqlState::DUPLICATE_SCHEMA)
            .await?;
        Ok(with_search_path(&self.url, &name))
    }

    /// [`fresh_schema`](Self::fresh_schema) for synchronous code: it runs on a thread and
    /// runtime of its own, so it may be called anywhere, inside a runtime too.
    pub fn fresh_schema_blocking(&self, label: &str) -> Result<String> {
        block_on(self.fresh_schema(label))
    }

    /// Creates a new database (a copy of `template1`, some tens of milliseconds) and returns a
    /// URL to it. For a test that needs more than a schema: its own extensions, or to drop
    /// and recreate schemas. Needs a Tokio runtime.
    pub async fn fresh_database(&self, label: &str) -> Result<String> {
        check_url(&self.url)?;
        let name = self
            .create_unique(label, "CREATE DATABASE", &SqlState::DUPLICATE_DATABASE)
            .await?;
        Ok(with_database(&self.url, &name))
    }

    /// [`fresh_database`](Self::fresh_database) for synchronous code.
    pub fn fresh_database_blocking(&self, label: &str) -> Result<String> {
        block_on(self.fresh_database(label))
    }

    /// Runs `create <name>` with a new name until one is not taken.
    async fn create_unique(&self, label: &str, create: &str, taken: &SqlState) -> Result<String> {
        let (client, connection) = tokio_postgres::connect(&self.url, NoTls).await?;
        let connection = tokio::spawn(connection);
        let mut tries = 0;
        let result = loop {
            let name = object_name(label, NEXT.fetch_add(1, Ordering::Relaxed));
            match client.batch_execute(&format!("{create} {name}")).await {
                Ok(()) => break Ok(name),
                Err(e) if e.code() == Some(taken) && tries < NAME_TRIES => tries += 1,
                Err(e) => break Err(Error::from(e)),
            }
        };
        drop(client);
        let _ = connection.await;
        result
    }
}

/// `t_<label>_<pid>_<n>`: a valid unquoted identifier, at most 48 bytes (PostgreSQL's limit is
/// 63).
fn object_name(label: &str, n: u32) -> String {
    let label: String = label
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => c,
            _ => '_',
        })
        .take(24)
        .collect();
    format!("t_{label}_{}_{n}", std::process::id())
}

/// Only `postgres://` URLs are supported, and not ones with `options` of their own (a second
/// `options` would not add to the first).
fn check_url(url: &str) -> Result<()> {
    let scheme_ok = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let query = url.split_once('?').map_or("", |(_, query)| query);
    let has_options = query.split('&').any(|pair| pair.starts_with("options="));
    if scheme_ok && !has_options {
        Ok(())
    } else {
        Err(Error::Url(url.to_owned()))
    }
}

fn with_search_path(url: &str, schema: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    let options = percent_encode(&format!("-c search_path={schema}"));
    format!("{url}{separator}options={options}")
}

/// `url` with its path (the database) replaced by `database`, its query kept.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let authority_end = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    let mut out = format!("{}/{database}", &base[..authority_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 3);
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Runs `future` on a current-thread runtime on a thread of its own.
pub(crate) fn block_on<T: Send>(
    future: impl std::future::Future<Output = Result<T>> + Send,
) -> Result<T> {
    std::thread::scope(|scope| {
        let thread = scope.spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(io("build a Tokio runtime"))?
                .block_on(future)
        });
        thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}
