//! Prometheus metrics, one registry per server (so tests can run many servers in a process).
//!
//! The retry span (how long clients keep retrying one idempotency key: slot creation to its
//! last attempt) is read from the slots table at scrape time, so it survives restarts; its p99
//! (with the late retries) is what the idempotency window in force is derived from
//! (`callsign_idempotency_window_*`, set by the reaper each pass; see `callsign_storage::window`).
//!
//! On SQLite both writers count their group commits and the jobs in them
//! (`callsign_alloc_db_group_commits_total`, `callsign_alloc_db_group_commit_jobs_total`, and
//! the task store's `callsign_task_store_…`), which `callsign-bench` reads to report commits
//! per create. On every backend `protocol::create_many` times each stage of a create
//! (`callsign_create_stage_seconds{stage}`: phase 1, task store, phase 2). docs/OPERATIONS.md
//! lists every metric.
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use callsign_storage::stats::{GroupCommits, ReplicaStats};
use callsign_storage::Op;

type Labels = Vec<(String, String)>;

pub struct Metrics {
    registry: Registry,
    creates: Family<Labels, Counter>,
    replays: Counter,
    reaper: Family<Labels, Counter>,
    retry_span: Family<Labels, Gauge<f64, AtomicU64>>,
    retried_slots: Gauge,
    pending_slots: Gauge,
    recovering_projects: Gauge,
    recovery_lost: Family<Labels, Gauge>,
    recovery_clashes: Family<Labels, Gauge>,
    window: WindowGauges,
    database_bytes: Family<Labels, Gauge>,
    /// One histogram per [`Stage`], made once: recording is on every create's path.
    create_stages: [Histogram; 3],
    /// Mutations per coalesced batch of single requests (PostgreSQL), creates then updates.
    coalesced: [Histogram; 2],
    /// Taskwarrior settles by outcome, and what they did.
    taskwarrior: Family<Labels, Counter>,
}

/// The idempotency window in force and why.
#[derive(Default)]
struct WindowGauges {
    seconds: Gauge<f64, AtomicU64>,
    p99: Gauge<f64, AtomicU64>,
    late: Gauge<f64, AtomicU64>,
    margin: Gauge<f64, AtomicU64>,
    basis: Family<Labels, Gauge>,
}

/// `callsign_open_files`, counted at each scrape (Linux: the entries of `/proc/self/fd`).
#[derive(Debug)]
struct OpenFiles;

impl prometheus_client::collector::Collector for OpenFiles {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::DescriptorEncoder,
    ) -> std::fmt::Result {
        use prometheus_client::encoding::EncodeMetric;
        let Ok(n) = callsign_storage_sqlite::files::open_files() else {
            return Ok(());
        };
        let gauge = prometheus_client::metrics::gauge::ConstGauge::new(
            i64::try_from(n).unwrap_or(i64::MAX),
        );
        let metric = encoder.encode_descriptor(
            "open_files",
            "File descriptors the process has open (connections, databases, replicas)",
            None,
            gauge.metric_type(),
        )?;
        gauge.encode(metric)
    }
}

/// The stages a create's request waits for, in order (DESIGN.md section 3).
#[derive(Clone, Copy)]
pub enum Stage {
    Phase1,
    TaskStore,
    Phase2,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Phase1 => "phase1",
            Stage::TaskStore => "task_store",
            Stage::Phase2 => "phase2",
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("callsign");
        let creates = Family::<Labels, Counter>::default();
        registry.register(
            "creates",
            "Creates committed, by whether a new number was assigned",
            creates.clone(),
        );
        let taskwarrior = Family::<Labels, Counter>::default();
        registry.register(
            "taskwarrior",
            "Taskwarrior sync: settles by outcome (ok, failed), and tasks keyed, restored (key put back) and fed to devices",
            taskwarrior.clone(),
        );
        let replays = Counter::default();
        registry.register(
            "replays",
            "Requests answered from a stored response",
            replays.clone(),
        );
        let reaper = Family::<Labels, Counter>::default();
        registry.register(
            "reaper_settled",
            "Slots and keys the reaper settled, by outcome",
            reaper.clone(),
        );
        let retry_span = Family::<Labels, Gauge<f64, AtomicU64>>::default();
        registry.register(
            "client_retry_span_seconds",
            "How long clients kept retrying one idempotency key (slot creation to last attempt), over the window's evidence period (--idempotency-window-max)",
            retry_span.clone(),
        );
        let retried_slots = Gauge::default();
        registry.register(
            "retried_slots",
            "Slots seen more than once within the window's evidence period",
            retried_slots.clone(),
        );
        let pending_slots = Gauge::default();
        registry.register(
            "pending_slots",
            "Idempotency slots pending (no number yet)",
            pending_slots.clone(),
        );
        let recovering_projects = Gauge::default();
        registry.register(
            "recovering_projects",
            "Projects recovering from a restored backup or a declared rollback: they number no task until recovery ends (docs/RECOVERY.md)",
            recovering_projects.clone(),
        );
        let recovery_lost = Family::<Labels, Gauge>::default();
        registry.register(
            "recovery_lost_keys",
            "Numbers handed out before a rollback that no device brought back, per account, as of its last recovery's end: never handed out again (docs/RECOVERY.md)",
            recovery_lost.clone(),
        );
        let recovery_clashes = Family::<Labels, Gauge>::default();
        registry.register(
            "recovery_clashes",
            "Keys a device brought back after a rollback that another task held, per account, as of its last recovery's end (the held key stays with its task; the other task was numbered anew)",
            recovery_clashes.clone(),
        );
        let window = WindowGauges::default();
        registry.register(
            "idempotency_window_seconds",
            "The idempotency window in force",
            window.seconds.clone(),
        );
        registry.register(
            "idempotency_window_observed_p99_seconds",
            "The p99 retry span the window was derived from (0: none observed)",
            window.p99.clone(),
        );
        registry.register(
            "idempotency_window_late_retry_seconds",
            "The longest late retry of the period (0: none): one that ate into the margin of the window in force when it came, or came after its slot failed",
            window.late.clone(),
        );
        registry.register(
            "idempotency_window_margin",
            "The factor the window sits above the observed retries",
            window.margin.clone(),
        );
        registry.register(
            "idempotency_window_basis",
            "1 for what decided the window: fixed, observed (p99), late, min or max (the clamp), pending (kept up to a pending slot's age)",
            window.basis.clone(),
        );
        let database_bytes = Family::<Labels, Gauge>::default();
        registry.register(
            "database_bytes",
            "Bytes on disk, with WAL files, as of the last reaper pass: db=\"allocation\" (callsign.sqlite3), db=\"replicas\" (every account's taskchampion.sqlite3)",
            database_bytes.clone(),
        );
        let stages = Family::<Labels, Histogram>::new_with_constructor(|| {
            // 0.1 ms to ~0.8 s.
            Histogram::new(exponential_buckets(0.0001, 2.0, 14))
        });
        registry.register(
            "create_stage_seconds",
            "Time a create request (or a batch of creates) spent in each stage: phase1 (slot), task_store (TaskChampion commit), phase2 (number and slot commit)",
            stages.clone(),
        );
        // A family's histogram shares its state with its clones.
        let create_stages = [Stage::Phase1, Stage::TaskStore, Stage::Phase2]
            .map(|s| stages.get_or_create(&label("stage", s.name())).clone());
        let coalesced = Family::<Labels, Histogram>::new_with_constructor(|| {
            // 1 to 256 (the cap).
            Histogram::new(exponential_buckets(1.0, 2.0, 9))
        });
        registry.register(
            "coalesced_batch_size",
            "Single requests (PUT creates, PATCH updates) run together as one batch, by op; on PostgreSQL with --coalesce-requests",
            coalesced.clone(),
        );
        let coalesced = [Op::Create, Op::Update]
            .map(|op| coalesced.get_or_create(&label("op", op.as_str())).clone());
        Metrics {
            registry,
            coalesced,
            taskwarrior,
            creates,
            replays,
            reaper,
            retry_span,
            retried_slots,
            pending_slots,
            recovering_projects,
            recovery_lost,
            recovery_clashes,
            window,
            database_bytes,
            create_stages,
        }
    }
}

fn label(k: &str, v: &str) -> Labels {
    vec![(k.to_owned(), v.to_owned())]
}

impl Metrics {
    pub fn created(&self, new_number: bool) {
        let v = if new_number {
            "numbered"
        } else {
            "existing_key"
        };
        self.creates.get_or_create(&label("result", v)).inc();
    }

    /// Publishes a writer's group-commit counters as `callsign_<name>_group_commits_total` and
    /// `callsign_<name>_group_commit_jobs_total`.
    pub fn register_group_commits(&mut self, name: &str, what: &str, g: &GroupCommits) {
        self.registry.register(
            format!("{name}_group_commits"),
            format!("Group commits of the {what}"),
            g.commits.clone(),
        );
        self.registry.register(
            format!("{name}_group_commit_jobs"),
            format!("Jobs carried by the group commits of the {what}"),
            g.jobs.clone(),
        );
    }

    /// Publishes the replica pool (`callsign_open_replicas`,
    /// `callsign_replicas_closed_total{reason}`) and the process's open files
    /// (`callsign_open_files`).
    pub fn register_replicas(&mut self, r: &ReplicaStats) {
        self.registry.register(
            "open_replicas",
            "Account replicas the task store holds open",
            r.open.clone(),
        );
        self.registry.register(
            "replicas_closed",
            "Replicas the task store closed, by reason: lru (to make room), idle, pressure (out of open files)",
            r.closed.clone(),
        );
        self.registry.register(
            "replica_operations_trimmed",
            "Operations deleted from replicas' logs, older than --history-retention",
            r.trimmed.clone(),
        );
        self.registry.register_collector(Box::new(OpenFiles));
    }

    /// Records the stage that began at `since`; returns now, when the next one begins.
    pub fn create_stage(&self, stage: Stage, since: Instant) -> Instant {
        let now = Instant::now();
        self.create_stages[stage as usize].observe(now.duration_since(since).as_secs_f64());
        now
    }

    /// Records a coalesced batch of `n` single requests.
    pub fn coalesced(&self, op: Op, n: usize) {
        let i = match op {
            Op::Create => 0,
            Op::Update => 1,
        };
        self.coalesced[i].observe(n as f64);
    }

    /// Counts `n` Taskwarrior sync events of one kind (`callsign_taskwarrior_total{event}`).
    pub fn taskwarrior(&self, event: &str, n: usize) {
        self.taskwarrior
            .get_or_create(&label("event", event))
            .inc_by(n as u64);
    }

    pub fn replayed(&self) {
        self.replays.inc();
    }

    pub fn reaped(&self, outcome: &str, n: u64) {
        self.reaper
            .get_or_create(&label("outcome", outcome))
            .inc_by(n);
    }

    /// Publishes how many projects are recovering.
    pub fn recovering(&self, projects: usize) {
        self.recovering_projects
            .set(i64::try_from(projects).unwrap_or(i64::MAX));
    }

    /// Publishes what an account's recovery could not bring back.
    pub fn recovery_report(&self, account: i64, report: &callsign_storage::RecoveryReport) {
        let account = label("account", &account.to_string());
        let n = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
        self.recovery_lost
            .get_or_create(&account)
            .set(n(report.lost.len()));
        self.recovery_clashes
            .get_or_create(&account)
            .set(n(report.clashes.len()));
    }

    /// Publishes the databases' sizes on disk.
    pub fn database_sizes(&self, allocation: u64, replicas: u64) {
        for (db, bytes) in [("allocation", allocation), ("replicas", replicas)] {
            self.database_bytes
                .get_or_create(&label("db", db))
                .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
    }

    /// Publishes the window in force and why.
    pub fn window(&self, w: &callsign_storage::window::Window) {
        let secs = |ms: i64| ms as f64 / 1000.0;
        self.window.seconds.set(secs(w.ms));
        self.window.p99.set(w.p99_ms.map_or(0.0, secs));
        self.window.late.set(w.late_ms.map_or(0.0, secs));
        self.window.margin.set(callsign_storage::window::MARGIN);
        for b in callsign_storage::window::Basis::ALL {
            self.window
                .basis
                .get_or_create(&label("basis", b.as_str()))
                .set(i64::from(b == w.basis));
        }
    }

    /// Renders the text format; `spans_ms` is sorted ascending.
    pub fn render(&self, spans_ms: &[i64], pending: i64) -> String {
        for (q, name) in [(0.5, "0.5"), (0.99, "0.99")] {
            let v = quantile(spans_ms, q).map_or(0.0, |ms| ms as f64 / 1000.0);
            self.retry_span
                .get_or_create(&label("quantile", name))
                .set(v);
        }
        self.retried_slots.set(spans_ms.len() as i64);
        self.pending_slots.set(pending);
        let mut out = String::new();
        let _ = encode(&mut out, &self.registry);
        out
    }
}

pub use callsign_storage::window::quantile;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.5), Some(50));
        assert_eq!(quantile(&v, 0.99), Some(99));
        assert_eq!(quantile(&[7], 0.99), Some(7));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn render_shows_quantiles() {
        let m = Metrics::default();
        let text = m.render(&[1000, 2000, 30_000], 2);
        assert!(
            text.contains("callsign_client_retry_span_seconds{quantile=\"0.5\"} 2.0"),
            "{text}"
        );
        assert!(
            text.contains("callsign_client_retry_span_seconds{quantile=\"0.99\"} 30.0"),
            "{text}"
        );
        assert!(text.contains("callsign_pending_slots 2"), "{text}");
    }

    #[test]
    fn group_commits_and_stages_are_published() {
        let mut m = Metrics::default();
        let g = GroupCommits::default();
        m.register_group_commits("alloc_db", "allocation database", &g);
        g.commits.inc();
        g.jobs.inc_by(7);
        m.create_stage(Stage::TaskStore, Instant::now());
        m.coalesced(Op::Update, 3);
        let text = m.render(&[], 0);
        assert!(
            text.contains("callsign_alloc_db_group_commits_total 1"),
            "{text}"
        );
        assert!(
            text.contains("callsign_alloc_db_group_commit_jobs_total 7"),
            "{text}"
        );
        assert!(
            text.contains("callsign_create_stage_seconds_count{stage=\"task_store\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("callsign_coalesced_batch_size_sum{op=\"update\"} 3.0"),
            "{text}"
        );
        assert!(
            text.contains("callsign_coalesced_batch_size_count{op=\"create\"} 0"),
            "{text}"
        );
    }
}
