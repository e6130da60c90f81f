//! What PostgreSQL's backends wait for while the clients run: `pg_stat_activity`, sampled.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::pg::connect;

/// What PostgreSQL's client backends were doing, mean count over samples.
#[derive(Clone, Copy, Debug, Default)]
pub struct Waits {
    /// Running a statement (on a CPU or waiting for one).
    pub running: f64,
    /// Waiting for a row lock (`transactionid`, `tuple`: the account or counter row, say).
    pub row_lock: f64,
    /// Waiting for an advisory lock (the task store's per-account lock).
    pub advisory_lock: f64,
    /// Writing or flushing WAL, or waiting for the backend that does (`WALWrite`).
    pub wal: f64,
    /// Inside a transaction, waiting for the client's next statement (a round trip).
    pub in_transaction: f64,
    /// Any other wait.
    pub other: f64,
}

impl Waits {
    /// The count a backend in this state and wait event adds to; `None` for an idle one.
    fn slot(
        &mut self,
        state: Option<&str>,
        kind: Option<&str>,
        event: Option<&str>,
    ) -> Option<&mut f64> {
        let event = event.unwrap_or_default();
        Some(match (state, kind) {
            (Some("idle"), _) => return None,
            (Some(s), _) if s.starts_with("idle in transaction") => &mut self.in_transaction,
            (_, None) => &mut self.running,
            (_, Some("Lock")) if event == "advisory" => &mut self.advisory_lock,
            (_, Some("Lock")) if event == "transactionid" || event == "tuple" => &mut self.row_lock,
            (_, Some("IO" | "LWLock")) if event.starts_with("WAL") => &mut self.wal,
            _ => &mut self.other,
        })
    }
}

/// Samples `pg_stat_activity` every 20 ms until `stop` is set; the mean of the samples.
pub async fn sample_waits(url: String, stop: Arc<AtomicBool>) -> Result<Waits> {
    let c = connect(&url).await?;
    let st = c
        .prepare(
            "SELECT state, wait_event_type, wait_event FROM pg_stat_activity
             WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
        )
        .await?;
    let (mut sum, mut n) = (Waits::default(), 0.0);
    while !stop.load(Ordering::Relaxed) {
        for r in c.query(&st, &[]).await? {
            let (state, kind, event): (Option<String>, Option<String>, Option<String>) =
                (r.get(0), r.get(1), r.get(2));
            if let Some(count) = sum.slot(state.as_deref(), kind.as_deref(), event.as_deref()) {
                *count += 1.0;
            }
        }
        n += 1.0;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let n = f64::max(n, 1.0);
    Ok(Waits {
        running: sum.running / n,
        row_lock: sum.row_lock / n,
        advisory_lock: sum.advisory_lock / n,
        wal: sum.wal / n,
        in_transaction: sum.in_transaction / n,
        other: sum.other / n,
    })
}

#[cfg(test)]
mod tests {
    use super::Waits;

    #[test]
    fn backends_are_sorted_by_what_they_wait_for() {
        let mut w = Waits::default();
        let samples = [
            (Some("active"), None, None),
            (Some("active"), Some("Lock"), Some("transactionid")),
            (Some("active"), Some("Lock"), Some("tuple")),
            (Some("active"), Some("Lock"), Some("advisory")),
            (Some("active"), Some("IO"), Some("WALSync")),
            (Some("active"), Some("LWLock"), Some("WALWrite")),
            (
                Some("idle in transaction"),
                Some("Client"),
                Some("ClientRead"),
            ),
            (Some("active"), Some("LWLock"), Some("BufferContent")),
        ];
        for (s, k, e) in samples {
            *w.slot(s, k, e).unwrap() += 1.0;
        }
        assert!(w
            .slot(Some("idle"), Some("Client"), Some("ClientRead"))
            .is_none());
        let got = (
            w.running,
            w.row_lock,
            w.advisory_lock,
            w.wal,
            w.in_transaction,
            w.other,
        );
        assert_eq!(got, (1.0, 2.0, 1.0, 2.0, 1.0, 1.0));
    }
}
