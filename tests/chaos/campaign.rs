//! The campaign: a real `callsign-server` (built with `fault-injection`) behind the fault
//! proxy, several devices (separate data dirs, one account, two projects) of several members
//! of the account's team (each device logged in with a token of its member's) that capture tasks
//! and subtasks (`ops.rs`), edit and complete them and move numbered tasks between the
//! projects through the real engine while their sync processes (`callsign watch` or
//! `callsign sync`) are started and SIGKILLed at random; the server is SIGKILLed at random
//! moments and restarted armed with every `CALLSIGN_CRASH_AT` point in turn. On PostgreSQL the
//! server is several nodes on one database, the proxy balances connections over them, and each
//! kill takes one node (at random) while the others serve on. Then everything heals, every
//! device syncs to quiescence, the reaper runs past its window, every key ever assigned is
//! looked up on the server and on each device, and the checker reads all the databases. One
//! seed fixes the whole schedule.
//!
//! With `Config::taskwarrior`, a Taskwarrior replica (`tw.rs`) takes some of the steps: it
//! creates tasks offline, edits or completes its own, and starts a `task sync` through the
//! same proxy; the nodes' crash points then include the Taskwarrior sync's own. It syncs until
//! it succeeds, twice, before and after the reaper's wait, and the checker holds its replica
//! against the server's keys.
//!
//! With `Config::restore` (SQLite), the admin's worst day happens mid-run: a `backup` a third
//! of the way in, and at two thirds the server is killed and the backup put back with
//! `restore`, so the keys handed out since are gone from the server while devices hold them.
//! The devices bring them back as the run goes on (docs/RECOVERY.md); healing waits for the
//! recovery to end, and the checker holds the keys to G1 and G2 with exactly the lost numbers
//! `recovery status` reports ([`checker::after_restore`]).
mod ops;
mod tw;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use callsign_sync::Engine;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::checker::{self, Expected, Violation, World};
use crate::procs::{Device, Ended, Server};
use crate::proxy::{FaultProxy, FaultRates};
pub use crate::summary::Summary;
use crate::taskwarrior::Taskwarrior;
use crate::view::{Resolved, ServerStore};

/// The server's crash points (callsign-server's `crash::ALL`).
pub const CRASH_POINTS: [&str; 4] = [
    "phase1.after_slot",
    "phase2.after_task_write",
    "phase2.after_commit",
    "reaper.after_task_check",
];

/// The server's crash points in a Taskwarrior sync (callsign-server's `crash::TASKWARRIOR_*`):
/// its version is in the chain, not applied; its new tasks are numbered and keyed, the keys not
/// yet in the chain.
pub const TASKWARRIOR_CRASH_POINTS: [&str; 2] =
    ["taskwarrior.after_version", "taskwarrior.after_keys"];

const PROJECTS: [&str; 2] = ["CHA", "OS"];

/// The team's handles, in member order (more members than these are `m<i>`).
const HANDLES: [&str; 6] = ["ana", "ben", "cleo", "dan", "eve", "finn"];

/// Member `i`'s handle. Member 0 is the account's first owner; of the others every second one
/// is an owner too ([`is_owner`]), so tasks are created under both roles.
pub fn handle(i: usize) -> String {
    HANDLES
        .get(i)
        .map_or_else(|| format!("m{i}"), |h| (*h).to_owned())
}

/// Whether member `i` is an owner (the others are plain members).
pub fn is_owner(i: usize) -> bool {
    i.is_multiple_of(2)
}

/// Where the server keeps its data.
#[derive(Debug, Clone)]
pub enum Backend {
    /// One node on a SQLite data dir in the run's temp dir.
    Sqlite,
    /// `nodes` nodes on a fresh schema (one per run) of this PostgreSQL server.
    Postgres {
        server: callsign_pgtest::Server,
        nodes: usize,
    },
}

#[derive(Debug, Clone)]
pub struct Config {
    pub seed: u64,
    pub backend: Backend,
    pub devices: usize,
    /// Members of the team (1..=devices); device `i` is member `i % members`'s, logged in with
    /// a token of its own that belongs to that member.
    pub members: usize,
    /// The chaos phase ends after this long or `max_creates`, whichever comes first.
    pub duration: Duration,
    pub max_creates: u64,
    /// Chance per step of SIGKILLing the server (one node, at random, when there are several).
    pub server_kill: f64,
    /// Chance that a restarted server is armed with the next crash point.
    pub arm_crash_point: f64,
    /// Chance per step of starting or killing a device's sync process.
    pub device_toggle: f64,
    /// Each step ends with a pause of up to this long (the pace of the schedule).
    pub max_pause: Duration,
    pub rates: FaultRates,
    /// A Taskwarrior replica takes part (the account is linked and the server started with
    /// `--taskwarrior-key-file`): about one step in five is its.
    pub taskwarrior: bool,
    /// The restore fault (see the module doc).
    pub restore: bool,
}

impl Config {
    /// The short campaign of the test command: a few seconds of chaos per seed.
    pub fn short(seed: u64) -> Config {
        Config {
            seed,
            backend: Backend::Sqlite,
            devices: 4,
            members: 3,
            duration: Duration::from_secs(12),
            max_creates: 400,
            server_kill: 0.03,
            arm_crash_point: 0.6,
            device_toggle: 0.08,
            max_pause: Duration::from_millis(40),
            rates: FaultRates::default(),
            taskwarrior: true,
            restore: false,
        }
    }

    /// The short campaign with the restore fault. No Taskwarrior: its replica is no witness
    /// (it brings back nothing, docs/RECOVERY.md), and its checks compare content a restore
    /// takes back.
    pub fn short_with_restore(seed: u64) -> Config {
        Config {
            restore: true,
            taskwarrior: false,
            ..Config::short(seed)
        }
    }

    /// These settings on `nodes` nodes of one PostgreSQL (a fresh schema per run). The
    /// Taskwarrior switch stays as it was: the server must then link accounts on PostgreSQL.
    pub fn on_postgres(self, server: callsign_pgtest::Server, nodes: usize) -> Config {
        Config {
            backend: Backend::Postgres { server, nodes },
            ..self
        }
    }

    /// The member device `d` belongs to (and logs in as).
    pub fn member_of(&self, d: usize) -> usize {
        d % self.members
    }

    pub fn long(seed: u64, duration: Duration, max_creates: u64) -> Config {
        Config {
            duration,
            max_creates,
            server_kill: 0.008,
            device_toggle: 0.05,
            rates: FaultRates {
                drop_response: 0.10,
                ..FaultRates::default()
            },
            ..Config::short(seed)
        }
    }
}

pub struct Outcome {
    pub summary: Summary,
    pub violations: Vec<Violation>,
    /// The checker's report when there are violations (seed, invariant, evidence).
    pub report: String,
    /// With the restore fault, the numbers `recovery status` reported lost.
    pub lost: Vec<String>,
    /// The run's directory, kept when there are violations.
    pub kept: Option<PathBuf>,
}

struct Run {
    cfg: Config,
    rng: ChaCha8Rng,
    started: Instant,
    events: Vec<String>,
    server: Server,
    proxy: FaultProxy,
    devices: Vec<Device>,
    engines: Vec<Engine>,
    account_id: i64,
    /// The first owner's token (projects, and asking for every key after healing).
    token: String,
    /// Member handles, in member order.
    team: Vec<String>,
    expected: BTreeMap<String, Expected>,
    /// Per device, the UUIDs it created (the ones it edits, moves and adds subtasks to).
    own: Vec<Vec<String>>,
    /// The run's first few tasks: most notes rewrites go to them, so devices collide.
    hot: Vec<String>,
    /// Notes rewrites the devices made of each task (at most `merge::MAX_CONFLICTS`).
    notes_on: HashMap<String, usize>,
    /// What the server and each device answered for every key, asked after healing.
    resolved: Option<Resolved>,
    next_point: usize,
    /// Per node, the crash point it was started with.
    armed: Vec<Option<&'static str>>,
    /// The Taskwarrior replica, with `Config::taskwarrior`.
    tw: Option<Taskwarrior>,
    /// Its own tasks still pending (the ones it edits and completes).
    tw_open: Vec<String>,
    s: Summary,
    /// The run's directory (the restore fault's backup goes there).
    root: PathBuf,
    /// The restore fault's backup, once taken.
    backup: Option<PathBuf>,
}

impl Run {
    fn member_of(&self, d: usize) -> usize {
        self.cfg.member_of(d)
    }

    fn event(&mut self, e: String) {
        let ms = self.started.elapsed().as_millis();
        self.events
            .push(format!("{ms:>7} ms step {}: {e}", self.s.steps));
    }

    /// (Re)starts node `node`, armed with the next crash point by the configured chance.
    fn start_node(&mut self, node: usize) -> Result<()> {
        let arm = self.rng.gen_bool(self.cfg.arm_crash_point);
        let tw_points: &[&'static str] = match self.tw {
            Some(_) => &TASKWARRIOR_CRASH_POINTS,
            None => &[],
        };
        let points: Vec<&'static str> = CRASH_POINTS.iter().chain(tw_points).copied().collect();
        let spec = if arm {
            let p = points[self.next_point % points.len()];
            self.next_point += 1;
            self.armed[node] = Some(p);
            // A Taskwarrior sync reaches its points far less often than creates reach theirs:
            // the first time, or a node is rarely still up when it comes.
            let n = self.rng.gen_range(1..=3);
            let n = if TASKWARRIOR_CRASH_POINTS.contains(&p) {
                1
            } else {
                n
            };
            Some(format!("{p}:{n}"))
        } else {
            self.armed[node] = None;
            None
        };
        self.server.start(node, spec.as_deref())?;
        self.event(format!("server node {node} started (armed: {spec:?})"));
        Ok(())
    }

    /// Counts the nodes that aborted by themselves (at their crash point); `restart` starts
    /// them again.
    fn reap_nodes(&mut self, restart: bool) -> Result<()> {
        for node in 0..self.server.node_count() {
            if self.server.poll(node) == Ended::Aborted {
                let p = self.armed[node].unwrap_or("unarmed exit");
                *self.s.crash_points.entry(p).or_default() += 1;
                self.event(format!("server node {node} aborted at {p}"));
                if restart {
                    self.start_node(node)?;
                }
            }
        }
        Ok(())
    }

    fn step(&mut self) -> Result<()> {
        self.s.steps += 1;
        self.reap_nodes(true)?;
        self.restore_step()?;
        self.tw_events();
        // Drawn only with a Taskwarrior, so a run without one keeps its schedule.
        if self.tw.is_some() && self.rng.gen_bool(tw::SHARE) {
            self.taskwarrior_step()?;
        } else {
            self.device_step()?;
        }
        let pause = self
            .rng
            .gen_range(0..=self.cfg.max_pause.as_millis() as u64);
        std::thread::sleep(Duration::from_millis(pause));
        Ok(())
    }

    /// The restore fault (see the module doc): the backup a third of the way in (by time or by
    /// creates), the restore at two thirds.
    fn restore_step(&mut self) -> Result<()> {
        if !self.cfg.restore || self.s.restores > 0 {
            return Ok(());
        }
        let done = (self.started.elapsed().as_secs_f64() / self.cfg.duration.as_secs_f64())
            .max(self.s.creates as f64 / self.cfg.max_creates as f64);
        match self.backup.clone() {
            None if done >= 1.0 / 3.0 => {
                let dir = self.root.join("backup");
                let b = self.server.backup(&dir)?;
                self.event(format!("backup taken at {}", b["taken_at"]));
                self.s.creates_at_backup = self.s.creates;
                self.backup = Some(dir);
            }
            Some(dir) if done >= 2.0 / 3.0 => {
                let r = self.server.restore(&dir)?;
                self.s.restores += 1;
                self.s.creates_rolled_back = self.s.creates - self.s.creates_at_backup;
                self.event(format!(
                    "server killed and the backup restored: recovering {}",
                    r["recovering"]
                ));
                self.start_node(0)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// One of the devices does something, or a server node or a sync process is killed.
    fn device_step(&mut self) -> Result<()> {
        let d = self.rng.gen_range(0..self.cfg.devices);
        let x: f64 = self.rng.gen();
        if x < self.cfg.server_kill {
            let nodes = self.server.node_count();
            let node = if nodes > 1 {
                self.rng.gen_range(0..nodes)
            } else {
                0
            };
            self.server.kill(node);
            self.s.server_sigkills += 1;
            self.event(format!("server node {node} SIGKILL"));
            if self.rng.gen_bool(0.5) {
                std::thread::sleep(Duration::from_millis(self.rng.gen_range(0..300)));
            }
            self.start_node(node)?;
        } else if x < self.cfg.server_kill + self.cfg.device_toggle {
            if self.devices[d].busy() {
                if self.rng.gen_bool(0.5) {
                    if let Some(kind) = self.devices[d].kill() {
                        self.s.client_sigkills += 1;
                        self.event(format!("d{d} SIGKILL {kind}"));
                    }
                }
            } else {
                let watch = self.rng.gen_bool(0.6);
                self.devices[d].spawn(watch)?;
                self.s.syncs_started += 1;
                self.event(format!(
                    "d{d} spawn {}",
                    if watch { "watch" } else { "sync" }
                ));
            }
        } else if x < 0.30 && !self.own[d].is_empty() {
            self.edit(d)?;
        } else if x < 0.40 && !self.own[d].is_empty() {
            self.subtask(d)?;
        } else if x < 0.45 {
            self.move_task(d)?;
        } else if x < 0.53 && !self.expected.is_empty() {
            self.note(d)?;
        } else {
            self.create(d)?;
        }
        Ok(())
    }

    /// Faults off, every node up and unarmed, every device synced until a whole round succeeds twice
    /// (the second round pulls what the others pushed), then the reaper past its window.
    fn heal(&mut self) -> Result<()> {
        self.tw_end_chaos()?;
        self.proxy.set_faults(false);
        for d in 0..self.devices.len() {
            if let Some(kind) = self.devices[d].kill() {
                self.s.client_sigkills += 1;
                self.event(format!("d{d} SIGKILL {kind} (heal)"));
            }
        }
        self.reap_nodes(false)?;
        self.cfg.arm_crash_point = 0.0;
        for node in 0..self.server.node_count() {
            self.start_node(node)?;
        }
        let deadline = Instant::now() + Duration::from_secs(180);
        let mut clean_rounds = 0;
        while clean_rounds < 2 {
            if Instant::now() > deadline {
                bail!("devices did not sync to quiescence within 180 s of healing");
            }
            let mut all_ok = true;
            for dev in &self.devices {
                let status = dev.run(&["sync", "--timeout", "60"])?;
                all_ok &= status.success();
            }
            clean_rounds = if all_ok { clean_rounds + 1 } else { 0 };
        }
        self.event("healed: two clean sync rounds".into());
        if self.s.restores > 0 {
            self.recovery_ended()?;
        }
        // Taskwarrior pushes what it has left (numbered in its sync), before the reaper's
        // wait, and pulls the keys the reaper wrote after it; the devices then pull its
        // tasks and edits.
        self.tw_heal("before the reaper's wait")?;
        std::thread::sleep(self.server.window + 3 * self.server.reaper_interval);
        self.tw_heal("after the reaper's wait")?;
        self.tw_close()?;
        for dev in &self.devices {
            dev.run(&["sync", "--timeout", "60"])?;
        }
        let url = self.server.url();
        let (store, account) = (&self.server.store, self.account_id);
        let started = Instant::now();
        let asked = crate::resolve::ask(store, account, &url, &self.token, &self.engines)?;
        self.event(format!(
            "asked the server and {} devices for {} keys in {} ms",
            asked.devices.len(),
            asked.server.len(),
            started.elapsed().as_millis()
        ));
        self.resolved = Some(asked);
        self.server.kill_all();
        Ok(())
    }
}

impl Run {
    /// After a restore, every device has synced: each brought back its keys and checked in,
    /// so the recovery has ended by itself (none was ended by hand).
    fn recovery_ended(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let status = self.server.recovery_status()?;
            let recovering = status["recovering"].as_array().map_or(0, Vec::len);
            if recovering == 0 {
                self.event("recovery ended: every device checked in".into());
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("every device synced after the restore, and still recovering: {status}");
            }
            std::thread::sleep(self.server.reaper_interval);
        }
    }
}

/// Runs one campaign in a fresh temp dir, kept (and named in the outcome) when it fails.
pub fn run(cfg: Config) -> Result<Outcome> {
    let root = tempfile::Builder::new()
        .prefix("callsign-chaos-")
        .tempdir()?;
    let (mut outcome, _) = run_kept(cfg, root.path())?;
    if !outcome.violations.is_empty() {
        outcome.kept = Some(root.keep());
    }
    Ok(outcome)
}

/// Runs one campaign with its databases under `root` (and, on PostgreSQL, in the run's
/// schema, which is never dropped) and returns the outcome and where they are.
pub fn run_kept(cfg: Config, root: &Path) -> Result<(Outcome, World)> {
    let (store, nodes) = match &cfg.backend {
        Backend::Sqlite => (ServerStore::Sqlite(root.join("server")), 1),
        Backend::Postgres { server, nodes } => {
            let url = server
                .fresh_schema_blocking(&format!("chaos_{}", cfg.seed))
                .context("creating the run's PostgreSQL schema")?;
            // A kept run names its schema (on a cluster of the tool's own, gone at its end).
            std::fs::create_dir_all(root)?;
            std::fs::write(root.join("database-url"), &url)?;
            (ServerStore::Postgres(url), *nodes)
        }
    };
    if cfg.members == 0 || cfg.members > cfg.devices {
        bail!(
            "{} members for {} devices: every member needs a device",
            cfg.members,
            cfg.devices
        );
    }
    let team: Vec<String> = (0..cfg.members).map(handle).collect();
    let (mut server, account_id, token) =
        Server::prepare(store.clone(), nodes, PROJECTS[0], &team[0])?;
    let tw_link = match cfg.taskwarrior {
        true => Some(
            server
                .link_taskwarrior(account_id, &root.join("taskwarrior.key"))
                .context("linking the campaign's account to Taskwarrior")?,
        ),
        false => None,
    };
    for node in 0..nodes {
        server.start(node, None)?;
    }
    create_project(&server.url(), &token, PROJECTS[1])?;
    let proxy = FaultProxy::start(server.upstreams(), cfg.seed, cfg.rates)?;
    let mut devices = Vec::new();
    let mut engines = Vec::new();
    for i in 0..cfg.devices {
        let dir = root.join(format!("device-{i}"));
        let name = format!("d{i}");
        let dev = Device::new(&name, &dir);
        // Each member's first device takes their first token, their others one more each.
        let m = cfg.member_of(i);
        let t = match (i, i < cfg.members) {
            (0, _) => token.clone(),
            (_, true) => server.add_member(account_id, &team[m], is_owner(m), &name)?,
            (_, false) => server.token(account_id, &team[m], &name)?,
        };
        dev.login(&proxy.url, &t)?;
        engines.push(Engine::open(&dir).context("opening a device's engine")?);
        devices.push(dev);
    }
    let tw_dir = root.join("taskwarrior");
    let tw = match &tw_link {
        Some(link) => Some(Taskwarrior::open(&tw_dir, &proxy.url, link)?),
        None => None,
    };
    let mut r = Run {
        rng: ChaCha8Rng::seed_from_u64(cfg.seed),
        started: Instant::now(),
        events: Vec::new(),
        server,
        proxy,
        own: vec![Vec::new(); cfg.devices],
        hot: Vec::new(),
        notes_on: HashMap::new(),
        devices,
        engines,
        account_id,
        token,
        team,
        expected: BTreeMap::new(),
        resolved: None,
        next_point: 0,
        armed: vec![None; nodes],
        tw,
        tw_open: Vec::new(),
        root: root.to_path_buf(),
        backup: None,
        s: Summary {
            seed: cfg.seed,
            nodes,
            devices: cfg.devices,
            by_member: vec![0; cfg.members],
            ..Summary::default()
        },
        cfg,
    };
    for d in 0..r.cfg.devices {
        let who = r.team[r.member_of(d)].clone();
        r.event(format!("d{d} logged in with a token of @{who}'s"));
    }
    r.proxy.set_faults(true);
    while r.started.elapsed() < r.cfg.duration && r.s.creates < r.cfg.max_creates {
        r.step()?;
    }
    r.s.chaos_secs = r.started.elapsed().as_secs_f64();
    let heal_start = Instant::now();
    r.heal()?;
    r.s.heal_secs = heal_start.elapsed().as_secs_f64();
    let c = r.proxy.counts();
    r.s.requests = c.requests.load(Ordering::Relaxed);
    r.s.dropped_requests = c.dropped_requests.load(Ordering::Relaxed);
    r.s.dropped_responses = c.dropped_responses.load(Ordering::Relaxed);
    r.s.delayed = c.delayed.load(Ordering::Relaxed);
    r.s.duplicated = c.duplicated.load(Ordering::Relaxed);
    r.s.resets = c.resets.load(Ordering::Relaxed);
    r.s.upstream_down = c.upstream_down.load(Ordering::Relaxed);
    r.s.failovers = c.failovers.load(Ordering::Relaxed);
    r.s.answered = c
        .answered
        .iter()
        .map(|n| n.load(Ordering::Relaxed))
        .collect();

    let world = World {
        server: store,
        account_id,
        devices: r.devices.iter().map(|d| d.dir.clone()).collect(),
        expected: std::mem::take(&mut r.expected),
        taskwarrior: tw_link.map(|_| tw_dir),
    };
    drop(std::mem::take(&mut r.engines));
    let mut snapshot = world.snapshot()?;
    snapshot.resolved = r.resolved.take();
    let keys = &snapshot.server.keys;
    r.s.keys = keys.len() as u64;
    r.s.subtask_keys = keys.iter().filter(|k| !k.scope.is_empty()).count() as u64;
    r.s.old_keys = keys.iter().filter(|k| !k.current).count() as u64;
    r.s.conflicts = snapshot
        .server
        .store
        .values()
        .map(|t| t.conflicts.len() as u64)
        .sum();
    let (violations, lost) = if r.s.restores > 0 {
        let status = r.server.recovery_status()?;
        let lost: Vec<String> = status["lost"]
            .as_array()
            .map(|l| {
                l.iter()
                    .filter_map(|k| k["key"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        r.s.lost_keys = lost.len() as u64;
        r.s.clashes = status["clashes"].as_array().map_or(0, Vec::len) as u64;
        (
            checker::after_restore(&snapshot, &world.expected, &lost),
            lost,
        )
    } else {
        (checker::violations(&snapshot, &world.expected), Vec::new())
    };
    r.s.violations = violations.len();
    let mut events = r.proxy.log();
    events.append(&mut r.events);
    std::fs::write(root.join("events.log"), events.join("\n"))?;
    let report = if violations.is_empty() {
        String::new()
    } else {
        checker::report(r.cfg.seed, Some(&snapshot), &violations, &events)
    };
    let outcome = Outcome {
        summary: r.s,
        violations,
        report,
        lost,
        kept: None,
    };
    Ok((outcome, world))
}

fn create_project(url: &str, token: &str, prefix: &str) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let resp = reqwest::Client::new()
            .post(format!("{url}/v1/projects"))
            .bearer_auth(token)
            .json(&serde_json::json!({ "name": prefix, "prefix": prefix }))
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!("creating project {prefix}: {}", resp.text().await?);
        }
        Ok(())
    })
}

/// The seed: `CALLSIGN_CHAOS_SEED` when set (a replay), else fresh from the clock.
pub fn seed_from_env() -> u64 {
    std::env::var("CALLSIGN_CHAOS_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64 % 1_000_000_007)
        })
}
