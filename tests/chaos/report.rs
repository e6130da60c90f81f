//! The report of a run the checker failed: the smallest evidence for each violation.
use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::checker::Violation;
use crate::view::Snapshot;

/// The report of a failed run: the seed, each violation, and for the first few UUIDs the
/// events that touched them, their slots and keys on the server, the Taskwarrior replica's
/// copy and their outbox rows on each device. `snap` is `None` when the databases could not be
/// read again.
pub fn report(
    seed: u64,
    snap: Option<&Snapshot>,
    violations: &[Violation],
    events: &[String],
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "CALLSIGN_CHAOS_SEED={seed}: {} violation(s)",
        violations.len()
    );
    for v in violations {
        let _ = writeln!(out, "  [{}] {}", v.invariant, v.message);
    }
    let uuids: BTreeSet<&String> = violations
        .iter()
        .flat_map(|v| v.uuids.iter())
        .take(5)
        .collect();
    for uuid in uuids {
        let _ = writeln!(out, "evidence for {uuid}:");
        for e in events.iter().filter(|e| e.contains(uuid.as_str())) {
            let _ = writeln!(out, "  event: {e}");
        }
        let Some(snap) = snap else { continue };
        for s in snap.server.slots.iter().filter(|s| &s.uuid == uuid) {
            let dash = |n: Option<i64>| n.map_or("-".to_owned(), |n| n.to_string());
            let _ = writeln!(
                out,
                "  server slot: {} {} number={} status={} attempts={} key={}",
                s.op,
                s.state,
                dash(s.number),
                dash(s.response_status),
                s.attempts,
                s.idem_key
            );
        }
        for k in snap.server.keys.iter().filter(|k| &k.uuid == uuid) {
            let _ = writeln!(
                out,
                "  server key: {} current={} in_store={}",
                k.key(),
                k.current,
                k.in_store
            );
        }
        if let Some(tw) = &snap.taskwarrior {
            match tw.tasks.get(uuid.as_str()) {
                Some(t) => {
                    let _ = writeln!(
                        out,
                        "  taskwarrior: key={} status={} description={:?}",
                        t.key.as_deref().unwrap_or("-"),
                        t.status,
                        t.description
                    );
                }
                None => {
                    let _ = writeln!(out, "  taskwarrior: not in its replica");
                }
            }
        }
        for (i, device) in snap.devices.iter().enumerate() {
            for r in device.outbox.iter().filter(|r| &r.uuid == uuid) {
                let _ = writeln!(
                    out,
                    "  device {i} outbox: {} {} sent={} tries={} error={} key={}",
                    r.op,
                    r.state,
                    r.sent,
                    r.tries,
                    r.error.as_deref().unwrap_or("-"),
                    r.idem_key
                );
            }
        }
    }
    // Again at the end: a log cut in the middle still shows what broke.
    let _ = writeln!(out, "violations (seed {seed}):");
    for v in violations {
        let _ = writeln!(out, "  [{}] {}", v.invariant, v.message);
    }
    out
}
