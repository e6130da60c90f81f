//! Fault injection: with the cargo feature `fault-injection`, `CALLSIGN_CRASH_AT=POINT[:N]`
//! aborts the process (no cleanup, like a power cut) the N-th time it reaches POINT.
//! Without the feature every call is a no-op.

/// Phase 1 committed the pending slot; nothing else happened.
pub const PHASE1_AFTER_SLOT: &str = "phase1.after_slot";
/// The task is in TaskChampion; no number is committed.
pub const PHASE2_AFTER_TASK_WRITE: &str = "phase2.after_task_write";
/// The number is committed; the response has not been sent.
pub const PHASE2_AFTER_COMMIT: &str = "phase2.after_commit";
/// The reaper found the task of a pending slot; it has not committed it.
pub const REAPER_AFTER_TASK_CHECK: &str = "reaper.after_task_check";

/// Taskwarrior's version is in the chain; the server's replica has not applied it.
pub const TASKWARRIOR_AFTER_VERSION: &str = "taskwarrior.after_version";
/// Taskwarrior's new tasks are numbered and their keys written onto them; the keys are not in
/// the chain yet and the link's `applied_op` has not moved.
pub const TASKWARRIOR_AFTER_KEYS: &str = "taskwarrior.after_keys";

pub const ALL: [&str; 4] = [
    PHASE1_AFTER_SLOT,
    PHASE2_AFTER_TASK_WRITE,
    PHASE2_AFTER_COMMIT,
    REAPER_AFTER_TASK_CHECK,
];

#[cfg(feature = "fault-injection")]
pub fn point(name: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    static TARGET: OnceLock<Option<(String, u64)>> = OnceLock::new();
    static HITS: AtomicU64 = AtomicU64::new(0);
    let target = TARGET.get_or_init(|| {
        let spec = std::env::var("CALLSIGN_CRASH_AT").ok()?;
        let (p, n) = match spec.split_once(':') {
            Some((p, n)) => (p.to_owned(), n.parse().unwrap_or(1)),
            None => (spec, 1),
        };
        Some((p, n))
    });
    if let Some((p, n)) = target {
        if p == name && HITS.fetch_add(1, Ordering::SeqCst) + 1 == *n {
            eprintln!("callsign-server: CALLSIGN_CRASH_AT={name}: aborting");
            std::process::abort();
        }
    }
}

#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn point(_name: &str) {}
