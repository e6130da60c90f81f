//! What the Taskwarrior replica does in its steps, and how it heals. Its local changes commit
//! to its replica at once (Taskwarrior works offline), so each is acknowledged and expected on
//! the server after healing: a new task in the project its `project` names (`OS`, `os`), else in
//! the account's first project; a description edit or a completion of one of its own pending
//! tasks. A sync runs in the background and may fail; a later step starts another.
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use rand::seq::SliceRandom;
use rand::Rng;

use super::{Run, PROJECTS};
use crate::checker::Expected;
use crate::taskwarrior::Taskwarrior;

/// The chance that a step is Taskwarrior's.
pub(super) const SHARE: f64 = 0.2;

/// What Taskwarrior's `project` is set to at `task add` (`None`: not set; `home` names no
/// project of the account).
const PROJECT_NAMES: [Option<&str>; 5] = [None, Some("CHA"), Some("OS"), Some("os"), Some("home")];

impl Run {
    fn tw(&self) -> Result<&Taskwarrior> {
        self.tw
            .as_ref()
            .ok_or_else(|| anyhow!("no Taskwarrior in this campaign"))
    }

    /// A step of Taskwarrior's: start a sync (a third of them, when none is running: most fail
    /// under the faults, each being several requests with no retry), edit or complete one of
    /// its pending tasks, or create one.
    pub(super) fn taskwarrior_step(&mut self) -> Result<()> {
        let x: f64 = self.rng.gen();
        if x < 0.35 {
            if self.tw()?.start_sync()? {
                self.event("tw sync started".into());
            }
        } else if x < 0.47 && !self.tw_open.is_empty() {
            let uuid = self.tw_pick();
            let mut e = self.expected[&uuid].clone();
            let base = e.description.split(" edit ").next().unwrap_or_default();
            e.description = format!("{base} edit {}", self.s.steps);
            self.tw()?.describe(uuid.parse()?, &e.description)?;
            self.s.tw_edits += 1;
            self.event(format!("tw edit {uuid} -> {:?}", e.description));
            self.expected.insert(uuid, e);
        } else if x < 0.55 && !self.tw_open.is_empty() {
            let uuid = self.tw_pick();
            self.tw()?.complete(uuid.parse()?)?;
            self.tw_open.retain(|u| *u != uuid);
            self.s.tw_completions += 1;
            self.event(format!("tw done {uuid}"));
            let e = self.expected.get_mut(&uuid).expect("its own task");
            e.status = "completed".into();
        } else {
            self.tw_create()?;
        }
        Ok(())
    }

    fn tw_create(&mut self) -> Result<()> {
        let uuid = uuid::Builder::from_random_bytes(self.rng.gen()).into_uuid();
        let named = *PROJECT_NAMES.choose(&mut self.rng).expect("names");
        let description = format!("s{} tw #{}", self.cfg.seed, self.s.tw_creates + 1);
        self.tw()?.add(uuid, &description, named)?;
        let project = match named {
            Some(p) if PROJECTS.contains(&p.to_ascii_uppercase().as_str()) => {
                p.to_ascii_uppercase()
            }
            _ => PROJECTS[0].to_owned(),
        };
        self.s.tw_creates += 1;
        self.event(format!(
            "tw create {uuid} project:{named:?} (expected in {project}) {description:?}"
        ));
        let uuid = uuid.to_string();
        self.tw_open.push(uuid.clone());
        let expected = Expected {
            device: self.cfg.devices,
            taskwarrior: true,
            project,
            description,
            status: "pending".into(),
            parent: None,
            moves: 0,
            created_by: None,
        };
        self.expected.insert(uuid, expected);
        Ok(())
    }

    /// One of Taskwarrior's pending tasks, at random (it has one).
    fn tw_pick(&mut self) -> String {
        self.tw_open
            .choose(&mut self.rng)
            .expect("checked non-empty")
            .clone()
    }

    /// Takes the replica's sync outcomes into the events.
    pub(super) fn tw_events(&mut self) {
        let lines = match &self.tw {
            Some(tw) => tw.take_log(),
            None => return,
        };
        for l in lines {
            self.event(l);
        }
    }

    /// Ends the chaos for Taskwarrior: lets a running sync finish (it met the faults) and counts
    /// the chaos's syncs.
    pub(super) fn tw_end_chaos(&mut self) -> Result<()> {
        let Some(tw) = &self.tw else {
            return Ok(());
        };
        tw.wait_idle(Duration::from_secs(90))?;
        (self.s.tw_syncs, self.s.tw_failed_syncs) = tw.syncs();
        self.tw_events();
        Ok(())
    }

    /// Syncs the replica until a sync succeeds, twice (the second pulls what the first's
    /// settle wrote after its push), bounded by attempts and time.
    pub(super) fn tw_heal(&mut self, when: &str) -> Result<()> {
        let Some(tw) = &self.tw else {
            return Ok(());
        };

        let deadline = Instant::now() + Duration::from_secs(120);
        let mut notes = Vec::new();
        let mut failure = None;
        'rounds: for round in 1..=2 {
            for attempt in 1.. {
                match tw.sync_now(Duration::from_secs(90))? {
                    Ok(()) => {
                        notes.push(format!(
                            "tw heal {when}: sync {round} ok (attempt {attempt})"
                        ));
                        continue 'rounds;
                    }
                    Err(e) if attempt < 30 && Instant::now() < deadline => {
                        notes.push(format!("tw heal {when}: sync {round} failed: {e}"));
                        std::thread::sleep(Duration::from_millis(200));
                    }
                    Err(e) => {
                        failure = Some(format!(
                            "Taskwarrior did not sync {when} ({attempt} attempts): {e}"
                        ));
                        break 'rounds;
                    }
                }
            }
        }
        self.tw_events();
        for n in notes {
            self.event(n);
        }
        match failure {
            Some(f) => bail!(f),
            None => Ok(()),
        }
    }

    /// Closes the replica (its last commands run first) and counts its syncs.
    pub(super) fn tw_close(&mut self) -> Result<()> {
        let Some(tw) = self.tw.as_mut() else {
            return Ok(());
        };
        tw.close()?;
        let (all, failed) = tw.syncs();
        self.s.tw_heal_syncs = all - self.s.tw_syncs;
        self.s.tw_heal_failed_syncs = failed - self.s.tw_failed_syncs;
        self.tw_events();
        Ok(())
    }
}
