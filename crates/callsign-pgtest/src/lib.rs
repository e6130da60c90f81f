//! A real PostgreSQL for tests and benchmarks.
//!
//! - [`Cluster`]: a throwaway cluster (`initdb` into a temp dir, `pg_ctl start` on 127.0.0.1 on
//!   a free port, `trust` authentication, `fsync` off). Dropping it stops it and removes the
//!   dir. As root it runs as the `postgres` user (`initdb` refuses root); otherwise as the
//!   current user. Benchmarks start one with `Options::benchmark()`, `fsync` on as a production
//!   server runs. [`Cluster::standby_of`] makes a streaming hot standby of a cluster started
//!   with `Options::primary()`, for failover tests (`stop`, `kill`, `start_again`, `promote`).
//! - [`shared`]: one server per test process, for every test in it: the one named by
//!   `CALLSIGN_TEST_PG_URL` if that is set, else a [`Cluster`] started on first use and stopped
//!   when the process ends (statics are never dropped, so a watchdog process does it).
//! - [`Server::fresh_schema`]: a new, uniquely named schema and a URL whose connections use it as
//!   their `search_path`, so tests running in parallel never see each other's tables.
//!
//! Without PostgreSQL's programs, [`shared`] returns `None` after printing one line,
//! `postgres tests skipped: <why>`, to stderr, except under CI (`CI=true`), where it panics: a
//! PostgreSQL missing there is a failure, not a skip.
//!
//! ```no_run
//! # async fn demo() -> Result<(), callsign_pgtest::Error> {
//! let Some(pg) = callsign_pgtest::shared() else { return Ok(()) };
//! let url = pg.fresh_schema("routes").await?;
//! let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
//! tokio::spawn(connection);
//! client.batch_execute("CREATE TABLE t (id int)").await?; // in this test's schema only
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

mod cluster;
mod server;
mod shared;

pub use cluster::{Cluster, Options, Timings};
pub use server::Server;
pub use shared::{shared, under_ci, PG_URL_ENV};

/// What can go wrong starting PostgreSQL or preparing a schema on it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// PostgreSQL's programs, or the `postgres` user to run them as, are not on this machine.
    #[error("not found: {0}")]
    NotFound(String),
    /// A file system or process operation failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// `initdb` or `pg_ctl` ran and failed; `output` holds what it printed and the server log's
    /// last lines.
    #[error("{what} failed ({status}): {output}")]
    Command {
        what: String,
        status: std::process::ExitStatus,
        output: String,
    },
    /// A wait ran out (e.g. a standby that did not catch up).
    #[error("timed out: {0}")]
    Timeout(String),
    /// The server refused a statement or a connection.
    #[error("postgres: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// A URL a schema or database cannot be added to: not `postgres://…`, or with `options`
    /// of its own.
    #[error("unsupported URL for a test schema or database: {0}")]
    Url(String),
}

/// The result of this crate's operations.
pub type Result<T> = std::result::Result<T, Error>;

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

#[cfg(test)]
mod testing {
    use crate::{under_ci, Cluster, Error, Options};

    /// A cluster, or `None` (printing why) where PostgreSQL is not installed, outside CI.
    pub(crate) fn start_or_skip(options: Options) -> Option<Cluster> {
        match Cluster::start(options) {
            Ok(cluster) => Some(cluster),
            Err(Error::NotFound(why)) if !under_ci() => {
                eprintln!("postgres tests skipped: {why}");
                None
            }
            Err(e) => panic!("cannot start PostgreSQL: {e}"),
        }
    }

    pub(crate) async fn connect(url: &str) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connect to {url}: {e}"));
        tokio::spawn(connection);
        client
    }

    pub(crate) async fn text(url: &str, sql: &str) -> String {
        connect(url).await.query_one(sql, &[]).await.unwrap().get(0)
    }
}
