//! What a device does in a step, through its engine, and what it then expects of the server:
//! capture a task, capture a subtask under one of its own tasks (numbered or not), edit or
//! complete one, move a numbered task of its own to the other project, and rewrite the notes of
//! any task it knows, so devices edit one field of one task concurrently. Descriptions, status,
//! projects and parents are touched only by the task's own device, so what it acknowledged is
//! what the server must end with; notes are checked by the conflict rule instead (an
//! acknowledged value is the task's, or recorded as a conflict, or knowingly replaced). A
//! task's creator is the member whose token its device logged in with, recorded here by UUID
//! as the truth its `created_by` is held to.
use anyhow::Result;
use callsign_core::dto::TaskPatch;
use callsign_core::merge::MAX_CONFLICTS;
use callsign_sync::NewTaskInput;
use rand::seq::SliceRandom;
use rand::Rng;

use super::{Run, PROJECTS};
use crate::checker::Expected;

impl Run {
    pub(super) fn create(&mut self, d: usize) -> Result<()> {
        let project = *PROJECTS.choose(&mut self.rng).expect("two projects");
        let input = NewTaskInput {
            description: format!("s{} d{d} #{}", self.cfg.seed, self.s.creates + 1),
            project: Some(project.to_owned()),
            ..NewTaskInput::default()
        };
        if self.capture(d, input, project.to_owned(), None) {
            self.s.creates += 1;
        }
        Ok(())
    }

    /// A subtask under one of the device's own tasks, named by its key when the device knows
    /// one (half the time) or by its UUID. The engine refuses a parent that is not pending or
    /// as deep as keys go.
    pub(super) fn subtask(&mut self, d: usize) -> Result<()> {
        let parent = self.pick_own(d);
        let by_key = self.rng.gen_bool(0.5);
        let named = match self.engines[d].get(&parent).map(|t| t.key) {
            Ok(Some(key)) if by_key => key,
            _ => parent.clone(),
        };
        let input = NewTaskInput {
            description: format!("s{} d{d} sub #{}", self.cfg.seed, self.s.subtasks + 1),
            parent: Some(named),
            ..NewTaskInput::default()
        };
        let project = self.expected[&parent].project.clone();
        if self.capture(d, input, project, Some(parent)) {
            self.s.subtasks += 1;
        }
        Ok(())
    }

    /// Captures `input` on device `d`; once the engine has it, the task is the device's own and
    /// expected on the server in `project` under `parent`. Whether the engine took it.
    fn capture(
        &mut self,
        d: usize,
        input: NewTaskInput,
        project: String,
        parent: Option<String>,
    ) -> bool {
        let description = input.description.clone();
        let under = match (&parent, &input.parent) {
            (Some(p), Some(named)) => format!(" under {p} ({named})"),
            _ => String::new(),
        };
        let m = self.member_of(d);
        let member = self.team[m].clone();
        match self.engines[d].create(input) {
            Ok(t) => {
                let uuid = t.uuid.to_string();
                self.event(format!(
                    "d{d} @{member} create {uuid} {project}{under} {description:?}"
                ));
                self.s.by_member[m] += 1;
                self.own[d].push(uuid.clone());
                if self.hot.len() < 3 {
                    self.hot.push(uuid.clone());
                }
                let expected = Expected {
                    device: d,
                    taskwarrior: false,
                    project,
                    description,
                    status: "pending".into(),
                    parent,
                    moves: 0,
                    created_by: Some(member),
                };
                self.expected.insert(uuid, expected);
                true
            }
            Err(e) => {
                self.event(format!("d{d} create{under} {description:?} refused: {e}"));
                false
            }
        }
    }

    pub(super) fn edit(&mut self, d: usize) -> Result<()> {
        let uuid = self.pick_own(d);
        let complete = self.rng.gen_bool(0.3);
        let mut e = self.expected[&uuid].clone();
        // A completion goes through `complete`, which refuses a task with open subtasks (the
        // server would too).
        let done = if complete {
            e.status = "completed".into();
            self.engines[d].complete(&uuid)
        } else {
            let base = e.description.split(" edit ").next().unwrap_or_default();
            e.description = format!("{base} edit {}", self.s.steps);
            let patch = TaskPatch {
                description: Some(e.description.clone()),
                ..TaskPatch::default()
            };
            self.engines[d].edit(&uuid, patch)
        };
        match done {
            Ok(_) => {
                if complete {
                    self.s.completions += 1;
                } else {
                    self.s.edits += 1;
                }
                self.event(format!(
                    "d{d} edit {uuid} -> {:?} {}",
                    e.description, e.status
                ));
                self.expected.insert(uuid, e);
            }
            Err(err) => self.event(format!("d{d} edit {uuid} refused: {err}")),
        }
        Ok(())
    }

    /// Moves one of the device's own top-level tasks that it knows numbered to the other
    /// project; it and everything under it are expected there.
    pub(super) fn move_task(&mut self, d: usize) -> Result<()> {
        let tops: Vec<&String> = self.own[d]
            .iter()
            .filter(|u| self.expected[*u].parent.is_none())
            .collect();
        let Some(uuid) = tops.choose(&mut self.rng).map(|u| (*u).clone()) else {
            return Ok(());
        };
        let task = match self.engines[d].get(&uuid) {
            Ok(t) => t,
            Err(e) => {
                self.event(format!("d{d} move {uuid}: {e}"));
                return Ok(());
            }
        };
        let Some(key) = &task.key else {
            self.event(format!("d{d} move {uuid} waits: no key yet"));
            return Ok(());
        };
        let to = PROJECTS
            .into_iter()
            .find(|p| *p != task.project)
            .expect("two projects");
        match self.engines[d].set_project(&uuid, to) {
            Ok(_) => {
                self.s.moves += 1;
                self.event(format!("d{d} move {uuid} ({key}) {} -> {to}", task.project));
                for u in self.family(&uuid) {
                    let e = self.expected.get_mut(&u).expect("a task of the family");
                    e.project = to.to_owned();
                }
                self.expected.get_mut(&uuid).expect("its own task").moves += 1;
            }
            Err(err) => self.event(format!("d{d} move {uuid} refused: {err}")),
        }
        Ok(())
    }

    /// Rewrites the notes of a task device `d` has (anyone's) with a value no other edit has:
    /// other devices may be rewriting them too, unseen, so some of these are concurrent.
    pub(super) fn note(&mut self, d: usize) -> Result<()> {
        // Mostly one of the run's first tasks, which every device soon has: two devices then
        // often rewrite the same notes between their syncs.
        let uuid = if self.rng.gen_bool(0.7) {
            self.hot.choose(&mut self.rng).cloned()
        } else {
            None
        };
        let uuid = uuid.unwrap_or_else(|| {
            let i = self.rng.gen_range(0..self.expected.len());
            self.expected
                .keys()
                .nth(i)
                .expect("checked non-empty")
                .clone()
        });
        // A task keeps its newest MAX_CONFLICTS conflicts (`merge`): past that many rewrites an
        // acknowledged value could be dropped unseen, which no check can tell from a lost edit.
        // Each rewrite records at most one conflict, so a task gets at most that many; a hot
        // task that has had them makes room for the next task captured.
        if self.notes_on.get(&uuid).copied().unwrap_or(0) >= MAX_CONFLICTS {
            self.hot.retain(|h| *h != uuid);
            self.event(format!(
                "d{d} notes {uuid}: its {MAX_CONFLICTS} rewrites are spent"
            ));
            return Ok(());
        }
        if let Err(e) = self.engines[d].get(&uuid) {
            self.event(format!("d{d} notes {uuid}: not here yet ({e})"));
            return Ok(());
        }
        let notes = format!("s{} d{d} note at step {}", self.cfg.seed, self.s.steps);
        let patch = TaskPatch {
            notes: Some(notes.clone()),
            ..TaskPatch::default()
        };
        match self.engines[d].edit(&uuid, patch) {
            Ok(_) => {
                self.s.notes += 1;
                *self.notes_on.entry(uuid.clone()).or_default() += 1;
                self.event(format!("d{d} notes {uuid} -> {notes:?}"));
            }
            Err(err) => self.event(format!("d{d} notes {uuid} refused: {err}")),
        }
        Ok(())
    }

    /// One of device `d`'s own tasks, at random (it has one).
    fn pick_own(&mut self, d: usize) -> String {
        let own = &self.own[d];
        own.choose(&mut self.rng)
            .expect("checked non-empty")
            .clone()
    }

    /// `root` and every task under it.
    fn family(&self, root: &str) -> Vec<String> {
        let mut all = vec![root.to_owned()];
        let mut i = 0;
        while let Some(parent) = all.get(i).cloned() {
            let children = self
                .expected
                .iter()
                .filter(|(_, e)| e.parent.as_deref() == Some(parent.as_str()));
            all.extend(children.map(|(u, _)| u.clone()));
            i += 1;
        }
        all
    }
}
