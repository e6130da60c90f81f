//! A run's summary table: what it did and injected, by kind.
use std::collections::BTreeMap;
use std::fmt;

use crate::campaign::{CRASH_POINTS, TASKWARRIOR_CRASH_POINTS};

/// What a run did, by kind.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub seed: u64,
    /// Devices, and per team member the creates (tasks and subtasks) their devices had
    /// acknowledged; its length is the number of members.
    pub devices: usize,
    pub by_member: Vec<u64>,
    pub steps: u64,
    pub creates: u64,
    pub edits: u64,
    pub completions: u64,
    pub subtasks: u64,
    pub moves: u64,
    /// Notes rewritten, of any device's task (concurrent with other devices' at times).
    pub notes: u64,
    pub syncs_started: u64,
    /// Tasks created in the Taskwarrior replica (offline, sent by a later sync).
    pub tw_creates: u64,
    /// Taskwarrior descriptions edited and tasks completed.
    pub tw_edits: u64,
    pub tw_completions: u64,
    /// `task sync`s run during the chaos, and those that failed (the next one retries).
    pub tw_syncs: u64,
    pub tw_failed_syncs: u64,
    /// `task sync`s run while healing (until two succeed, before and after the reaper's
    /// wait), and those that failed.
    pub tw_heal_syncs: u64,
    pub tw_heal_failed_syncs: u64,
    /// Server nodes (1 on SQLite).
    pub nodes: usize,
    /// Nodes SIGKILLed at a random moment.
    pub server_sigkills: u64,
    pub crash_points: BTreeMap<&'static str, u64>,
    pub client_sigkills: u64,
    pub requests: u64,
    pub dropped_requests: u64,
    pub dropped_responses: u64,
    pub delayed: u64,
    pub duplicated: u64,
    pub resets: u64,
    pub upstream_down: u64,
    pub failovers: u64,
    /// Per node, the requests it answered through the proxy.
    pub answered: Vec<u64>,
    pub chaos_secs: f64,
    pub heal_secs: f64,
    /// Keys the server assigned in all, subtasks' among them, and those a move replaced.
    pub keys: u64,
    pub subtask_keys: u64,
    pub old_keys: u64,
    /// Conflicts the server recorded (a later edit replaced a value its device had not seen).
    pub conflicts: u64,
    pub violations: usize,
    /// Backups put back mid-run (the restore fault), the numbers they lost (handed out,
    /// brought back by no device) and the keys two tasks claimed.
    pub restores: u64,
    /// Creates acknowledged when the backup was taken, and between it and the restore (their
    /// keys gone from the server until the devices brought them back).
    pub creates_at_backup: u64,
    pub creates_rolled_back: u64,
    pub lost_keys: u64,
    pub clashes: u64,
}

impl Summary {
    pub fn server_crashes(&self) -> u64 {
        self.server_sigkills + self.crash_points.values().sum::<u64>()
    }

    /// Adds another run's counts to this one (for a table over several seeds).
    pub fn add(&mut self, o: &Summary) {
        self.devices = self.devices.max(o.devices);
        add_each(&mut self.by_member, &o.by_member);
        self.steps += o.steps;
        self.restores += o.restores;
        self.creates_rolled_back += o.creates_rolled_back;
        self.lost_keys += o.lost_keys;
        self.clashes += o.clashes;
        self.creates += o.creates;
        self.edits += o.edits;
        self.completions += o.completions;
        self.subtasks += o.subtasks;
        self.moves += o.moves;
        self.notes += o.notes;
        self.syncs_started += o.syncs_started;
        self.tw_creates += o.tw_creates;
        self.tw_edits += o.tw_edits;
        self.tw_completions += o.tw_completions;
        self.tw_syncs += o.tw_syncs;
        self.tw_failed_syncs += o.tw_failed_syncs;
        self.tw_heal_syncs += o.tw_heal_syncs;
        self.tw_heal_failed_syncs += o.tw_heal_failed_syncs;
        self.nodes = self.nodes.max(o.nodes);
        self.server_sigkills += o.server_sigkills;
        for (k, n) in &o.crash_points {
            *self.crash_points.entry(k).or_default() += n;
        }
        self.client_sigkills += o.client_sigkills;
        self.requests += o.requests;
        self.dropped_requests += o.dropped_requests;
        self.dropped_responses += o.dropped_responses;
        self.delayed += o.delayed;
        self.duplicated += o.duplicated;
        self.resets += o.resets;
        self.upstream_down += o.upstream_down;
        self.failovers += o.failovers;
        add_each(&mut self.answered, &o.answered);
        self.chaos_secs += o.chaos_secs;
        self.heal_secs += o.heal_secs;
        self.keys += o.keys;
        self.subtask_keys += o.subtask_keys;
        self.old_keys += o.old_keys;
        self.conflicts += o.conflicts;
        self.violations += o.violations;
    }
}

/// Adds `theirs` to `mine` element by element, `mine` growing to the longer length.
fn add_each(mine: &mut Vec<u64>, theirs: &[u64]) {
    mine.resize(mine.len().max(theirs.len()), 0);
    for (m, t) in mine.iter_mut().zip(theirs) {
        *m += t;
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut row = |k: &str, v: String| writeln!(f, "| {k:<40} | {v:>12} |");
        row(
            "team members / devices",
            format!("{} / {}", self.by_member.len(), self.devices),
        )?;
        let by_member: Vec<String> = self.by_member.iter().map(u64::to_string).collect();
        row(
            "  creates per member (tasks + subtasks)",
            by_member.join(" / "),
        )?;
        row("operations (steps)", self.steps.to_string())?;
        row("  creates acknowledged", self.creates.to_string())?;
        row("  edits acknowledged", self.edits.to_string())?;
        row("  completions acknowledged", self.completions.to_string())?;
        row("  subtask creates acknowledged", self.subtasks.to_string())?;
        row("  moves acknowledged", self.moves.to_string())?;
        row(
            "  notes rewritten (any device's task)",
            self.notes.to_string(),
        )?;
        row("  sync processes started", self.syncs_started.to_string())?;
        row("Taskwarrior creates (offline)", self.tw_creates.to_string())?;
        row(
            "  descriptions edited / completed",
            format!("{} / {}", self.tw_edits, self.tw_completions),
        )?;
        row(
            "  task syncs run / failed (chaos)",
            format!("{} / {}", self.tw_syncs, self.tw_failed_syncs),
        )?;
        row(
            "  task syncs run / failed (heal)",
            format!("{} / {}", self.tw_heal_syncs, self.tw_heal_failed_syncs),
        )?;
        row("server nodes", self.nodes.to_string())?;
        row("server crashes injected", self.server_crashes().to_string())?;
        row(
            "  SIGKILL at a random moment",
            self.server_sigkills.to_string(),
        )?;
        for p in CRASH_POINTS.into_iter().chain(TASKWARRIOR_CRASH_POINTS) {
            let n = self.crash_points.get(p).copied().unwrap_or(0);
            row(&format!("  CALLSIGN_CRASH_AT={p}"), n.to_string())?;
        }
        row(
            "client sync processes SIGKILLed",
            self.client_sigkills.to_string(),
        )?;
        row("requests through the proxy", self.requests.to_string())?;
        row("  requests dropped", self.dropped_requests.to_string())?;
        row("  responses dropped", self.dropped_responses.to_string())?;
        row("  delayed", self.delayed.to_string())?;
        row("  duplicates delivered", self.duplicated.to_string())?;
        row("  reset mid-body", self.resets.to_string())?;
        row("  found the server down", self.upstream_down.to_string())?;
        row("  moved on to the next node", self.failovers.to_string())?;
        let answered: Vec<String> = self.answered.iter().map(u64::to_string).collect();
        row("  answered by each node", answered.join(" / "))?;
        row("backups restored mid-run", self.restores.to_string())?;
        row(
            "  creates acknowledged in between",
            self.creates_rolled_back.to_string(),
        )?;
        row(
            "  numbers lost / keys clashed",
            format!("{} / {}", self.lost_keys, self.clashes),
        )?;
        row("keys assigned", self.keys.to_string())?;
        row("  subtask keys", self.subtask_keys.to_string())?;
        row("  old keys (replaced by a move)", self.old_keys.to_string())?;
        row(
            "conflicts recorded (same field edited)",
            self.conflicts.to_string(),
        )?;
        row(
            "chaos / heal seconds",
            format!("{:.1} / {:.1}", self.chaos_secs, self.heal_secs),
        )?;
        row("violations", self.violations.to_string())
    }
}
