//! Open files: the process's descriptor limit, how many it has open, and how many replicas fit.
//!
//! Every descriptor the server holds is one of: a client connection (at most
//! `--max-connections`), the allocation database (writer, readers, the checkpoint thread's
//! connection), a few of the runtime's own, or an account's replica. A replica held open by the
//! task store costs [`FILES_PER_REPLICA`]: its database, WAL and shared-memory files, and the
//! database and WAL the checkpoint thread opens while the replica is written to. So the store's
//! pool is sized from the limit ([`replica_budget`]), after [`reserved`] for the rest.
//!
//! `callsign-server serve` raises the soft open-file limit to the hard one at start
//! ([`raise_limit`]) and sizes the pool from what that gives.
use std::io;

/// Descriptors one open replica may hold: its connection's database, `-wal` and `-shm` files,
/// and the checkpoint thread's connection to the same database and WAL (the `-shm` mapping is
/// shared within the process).
pub const FILES_PER_REPLICA: u64 = 5;

/// Descriptors kept for the server's own use besides connections: the allocation database's
/// writer, readers and checkpoint connection, the runtime's event loop, the listener, the data
/// dir lock, stdio, and one replica being opened while the pool is full.
pub const BASE_FILES: u64 = 64;

/// How near the limit the process may be before an open that failed is put down to it.
const PRESSURE_MARGIN: u64 = 8;

/// The open-file limit in force (soft, hard), if the platform has one.
pub fn limit() -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        rlimit::getrlimit(rlimit::Resource::NOFILE).ok()
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Raises the soft open-file limit to the hard one. Returns (before, after) soft limits; the
/// limit is left as it was (and the error returned) when it cannot be raised.
pub fn raise_limit() -> io::Result<Option<(u64, u64)>> {
    let Some((soft, _)) = limit() else {
        return Ok(None);
    };
    let now = rlimit::increase_nofile_limit(u64::MAX)?;
    Ok(Some((soft, now)))
}

/// Descriptors the server keeps for everything but replicas.
pub fn reserved(max_connections: usize) -> u64 {
    BASE_FILES + max_connections as u64
}

/// How many replicas may be open at once under a soft limit of `soft_limit` descriptors: at most
/// `wanted`, and no more than fit beside [`reserved`], but at least one (a pool that small
/// still serves, one account after another).
pub fn replica_budget(wanted: usize, soft_limit: u64, max_connections: usize) -> usize {
    let fit = soft_limit.saturating_sub(reserved(max_connections)) / FILES_PER_REPLICA;
    wanted
        .min(usize::try_from(fit).unwrap_or(usize::MAX))
        .max(1)
}

/// How many descriptors the process has open (entries of `/proc/self/fd`, less the one that
/// reads it). Only on Linux.
pub fn open_files() -> io::Result<u64> {
    #[cfg(target_os = "linux")]
    {
        let n = std::fs::read_dir("/proc/self/fd")?.count() as u64;
        Ok(n.saturating_sub(1))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}

/// The error is "too many open files", for the process (`EMFILE`) or the system (`ENFILE`);
/// the numbers are the same on Linux, macOS and the BSDs.
pub fn is_out_of_files(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23 | 24))
}

/// Whether the process is at (or within a few descriptors of) its open-file limit, so that an
/// open that just failed most likely failed for want of a descriptor. SQLite reports such a
/// failure only as "unable to open database file".
pub fn exhausted() -> bool {
    match open_files() {
        Ok(n) => limit().is_some_and(|(soft, _)| n + PRESSURE_MARGIN >= soft),
        Err(e) if is_out_of_files(&e) => true,
        // No `/proc`: try to take a descriptor.
        Err(_) => matches!(std::fs::File::open("/dev/null"), Err(e) if is_out_of_files(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_is_what_fits_beside_connections_and_the_server_itself() {
        // (wanted, soft limit, max connections) -> replicas
        let cases = [
            // systemd's default soft limit, raised to its hard one (524,288): the flag decides.
            ((256, 524_288, 512), 256),
            // ulimit -n 1024 with the default 512 connections: (1024 - 64 - 512) / 5.
            ((256, 1024, 512), 89),
            ((256, 1024, 64), 179),
            ((10_000, 65_536, 512), 10_000),
            // A limit below what connections alone need: one replica at a time.
            ((256, 256, 512), 1),
            ((0, 524_288, 512), 1),
        ];
        for ((wanted, soft, conns), pool) in cases {
            assert_eq!(
                replica_budget(wanted, soft, conns),
                pool,
                "{wanted} {soft} {conns}"
            );
        }
    }

    #[test]
    fn too_many_open_files_is_recognised() {
        assert!(is_out_of_files(&io::Error::from_raw_os_error(24)));
        assert!(is_out_of_files(&io::Error::from_raw_os_error(23)));
        assert!(!is_out_of_files(&io::Error::from_raw_os_error(2)));
        assert!(!is_out_of_files(&io::Error::other("x")));
    }
}
