//! One PostgreSQL server per test process.

use std::sync::OnceLock;

use crate::{Cluster, Options, Server};

#[cfg(test)]
mod tests;

/// Names a server for tests to use instead of starting a cluster, e.g.
/// `postgres://postgres@127.0.0.1:5432/postgres`. Its user must be able to create schemas and
/// databases; the ones the tests create are left there.
pub const PG_URL_ENV: &str = "CALLSIGN_TEST_PG_URL";

enum Shared {
    External(Server),
    /// Never dropped (it is in a `static`): its watchdog stops it when the process ends.
    Cluster(Cluster),
}

/// `Err` holds why there is no server, on one line.
static SHARED: OnceLock<Result<Shared, String>> = OnceLock::new();

/// The server this process's tests share: the one at `CALLSIGN_TEST_PG_URL` if set, else a
/// [`Cluster`] with [`Options::default`], started by the first call (about a second; later
/// calls wait for it) and stopped when the process ends.
///
/// Without one, returns `None`, and the first call prints `postgres tests skipped: <why>` to
/// stderr; a test then returns early. Under CI ([`under_ci`]) every call panics with the
/// reason instead.
pub fn shared() -> Option<&'static Server> {
    match SHARED.get_or_init(init) {
        Ok(Shared::External(server)) => Some(server),
        Ok(Shared::Cluster(cluster)) => Some(cluster.server()),
        Err(why) if under_ci() => panic!("postgres is required under CI (CI=true): {why}"),
        Err(_) => None,
    }
}

/// Whether this runs under CI: `CI` is `true` (or `1`), as most CI services set it and
/// `.ci/run` does. A PostgreSQL missing there fails the tests instead of skipping them.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|ci| ci.eq_ignore_ascii_case("true") || ci == "1")
}

/// The shared cluster, if this process started one.
#[cfg(test)]
fn shared_cluster() -> Option<&'static Cluster> {
    shared()?;
    match SHARED.get()? {
        Ok(Shared::Cluster(cluster)) => Some(cluster),
        _ => None,
    }
}

fn init() -> Result<Shared, String> {
    if let Some(url) = std::env::var(PG_URL_ENV).ok().filter(|url| !url.is_empty()) {
        return Ok(Shared::External(Server::new(url)));
    }
    match Cluster::start(Options::default()) {
        Ok(cluster) => Ok(Shared::Cluster(cluster)),
        Err(e) => {
            let why = one_line(&e.to_string());
            if !under_ci() {
                eprintln!("postgres tests skipped: {why}");
            }
            Err(why)
        }
    }
}

fn one_line(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join(" | ")
}
