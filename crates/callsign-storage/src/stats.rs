//! Counters a backend keeps for `/metrics`; the server registers the handles it is given.
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

/// A metric's labels.
pub type Labels = Vec<(String, String)>;

/// What a writer thread's group commits carried: commits, and the jobs (or commands) in them.
#[derive(Clone, Default)]
pub struct GroupCommits {
    pub commits: Counter,
    pub jobs: Counter,
}

/// The task store's pool of open replicas: how many are open, and how many were closed, by
/// reason (`lru`: to make room, `idle`: unused for `--replica-idle-close`, `pressure`: to free
/// descriptors after an open failed for want of them).
#[derive(Clone, Default)]
pub struct ReplicaStats {
    pub open: Gauge,
    pub closed: Family<Labels, Counter>,
    /// Operations trimmed from replicas' logs (past `--history-retention`).
    pub trimmed: Counter,
}

impl ReplicaStats {
    pub fn closed(&self, reason: &str) {
        self.closed.get_or_create(&reason_label(reason)).inc();
    }

    pub fn closed_total(&self, reason: &str) -> u64 {
        self.closed.get_or_create(&reason_label(reason)).get()
    }
}

fn reason_label(reason: &str) -> Labels {
    vec![("reason".to_owned(), reason.to_owned())]
}
