//! The shared filter grammar and `modify`'s changes ([`callsign_core::filter`],
//! [`callsign_core::modify`]) on this device's tasks.
use callsign_core::dto::{TaskPatch, TaskStatus};
use callsign_core::filter::{Facts, Filter};
use callsign_core::modify::Modification;
use callsign_core::LOCAL_PROJECT;

use super::{check_move, checked_patch, Engine};
use crate::error::{Error, Result};
use crate::model::{LocalTask, SyncState};
use crate::projects;
use crate::store::TaskQuery;
use crate::undo::{Journal, UndoKind};

impl Engine {
    /// The prefixes a `PFX-N` in a filter may name: the account's projects as last seen (old
    /// prefixes too), the local inbox, and the prefixes of the keys held here. Read again only
    /// after a write to the store (the app asks on every keystroke of its filter bar, and the
    /// prefixes in use take a scan of every task).
    pub fn known_prefixes(&self) -> Result<Vec<String>> {
        let store = self.store();
        let stamp = store.write_stamp()?;
        let mut cache = self.inner.known.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, known)) = cache.as_ref().filter(|(at, _)| *at == stamp) {
            return Ok(known.clone());
        }
        let mut known = vec![LOCAL_PROJECT.to_owned()];
        for p in projects::cached(&store)? {
            known.push(p.prefix);
            known.extend(p.previous_prefixes);
        }
        known.extend(store.projects_in_use()?);
        known.sort();
        known.dedup();
        *cache = Some((stamp, known.clone()));
        Ok(known)
    }

    /// Reads filter words (`+bug status:pending DEV-10..20 login`) at the engine's clock, in
    /// this machine's time zone; a word it cannot read is [`Error::Invalid`], saying why.
    pub fn parse_filter(&self, words: &[impl AsRef<str>]) -> Result<Filter> {
        let now = self.inner.opts.clock.now().with_timezone(&chrono::Local);
        Filter::parse(words, now, &self.known_prefixes()?)
            .map_err(|e| Error::Invalid(format!("filter: {e}")))
    }

    /// The filter's tasks in capture order; `default_statuses` apply when it names none.
    pub fn filter(&self, f: &Filter, default_statuses: &[TaskStatus]) -> Result<Vec<LocalTask>> {
        // The store reads pending tasks alone or every task, of one project when the filter
        // names just one; that is never fewer than the filter keeps, and it decides the rest.
        let read = self.query(&TaskQuery {
            all: f.statuses_or(default_statuses) != [TaskStatus::Pending],
            project: match f.projects.as_slice() {
                [one] => Some(one.clone()),
                _ => None,
            },
            ..TaskQuery::default()
        })?;
        Ok(read
            .into_iter()
            .filter(|t| matches_filter(f, t, default_statuses))
            .collect())
    }

    /// Reads `modify`'s words (`Fix it +bug -ui #OPS due:fri pri:H`) at the engine's clock.
    pub fn parse_modification(&self, words: &[impl AsRef<str>]) -> Result<Modification> {
        let now = self.inner.opts.clock.now().with_timezone(&chrono::Local);
        Modification::parse(words, now).map_err(|e| Error::Invalid(e.to_string()))
    }

    /// Applies a modification to each task, as one change each (a numbered task's move and
    /// its field changes go as one request; an unsent create takes the change into itself).
    /// Every task is found and every move checked before anything is written, so a refusal
    /// changes nothing. Tasks already as asked are returned unchanged.
    pub fn modify(
        &self,
        task_refs: &[impl AsRef<str>],
        m: &Modification,
    ) -> Result<Vec<LocalTask>> {
        let mut tasks = Vec::with_capacity(task_refs.len());
        for r in task_refs {
            let t = self.get(r.as_ref())?;
            if !tasks.iter().any(|x: &LocalTask| x.uuid == t.uuid) {
                tasks.push(t);
            }
        }
        if tasks.is_empty() {
            return Err(Error::Invalid("modify: name at least one task".into()));
        }
        let moving = |t: &LocalTask| m.project.as_ref().filter(|p| p.as_str() != t.project);
        for t in &tasks {
            if let (Some(p), Some(_)) = (moving(t), &t.key) {
                check_move(t, p)?;
            }
        }
        // The whole command is one undo step: its first change starts it, the rest join it.
        let mut journal = Journal::Step(UndoKind::Edit);
        let next = |j: &mut Journal| std::mem::replace(j, Journal::Join(UndoKind::Edit));
        let mut out = Vec::with_capacity(tasks.len());
        // A task is not read again to be changed: another task's change in this command
        // leaves its fields and failed requests as they were read (a provisional parent's
        // move takes its subtasks along, but a subtask named too is moved itself, and that
        // answers it as it is then). One left unchanged is read again, since another's change
        // may show on it (a parent sent again no longer holds it back).
        for t in tasks {
            let mut patch: TaskPatch = m.patch(&t.tags);
            let mut moved = None;
            match moving(&t) {
                Some(p) if t.key.is_some() => patch.project = Some(p.to_string()),
                Some(p) => moved = Some(self.move_task(&t, p, next(&mut journal))?),
                None => {}
            }
            let after = if !patch.is_empty() {
                checked_patch(&patch)?;
                self.edit_task(moved.as_ref().unwrap_or(&t), patch, next(&mut journal))?
            } else {
                match moved {
                    Some(after) => after,
                    None => self.get_uuid(t.uuid)?,
                }
            };
            out.push(after);
        }
        Ok(out)
    }
}

/// The filter's verdict on a local task (`default_statuses` as in [`Filter::matches`]). An
/// imported task's origin key counts as one of its old keys: it still names the task, so a word
/// (`ENG-42`, `#12`) finds it, and so does a key range over it.
pub fn matches_filter(f: &Filter, t: &LocalTask, default_statuses: &[TaskStatus]) -> bool {
    let with_origin: Vec<String>;
    let previous_keys = match t.origin.as_ref().and_then(|o| o.key.as_deref()) {
        Some(k) => {
            with_origin = t
                .previous_keys
                .iter()
                .cloned()
                .chain([callsign_core::dto::Origin::normal_key(k)])
                .collect();
            &with_origin
        }
        None => &t.previous_keys,
    };
    f.matches(
        &Facts {
            uuid: t.uuid,
            description: &t.description,
            notes: &t.notes,
            tags: &t.tags,
            project: &t.project,
            key: t.key.as_deref(),
            previous_keys,
            status: t.status,
            failed: t.sync_state == SyncState::Failed,
            due: t.due,
            priority: t.priority,
            commits: &t.commits,
        },
        default_statuses,
    )
}

#[cfg(test)]
mod tests {
    use callsign_core::dto::{Task, TaskStatus};
    use callsign_core::Priority;
    use uuid::Uuid;

    use crate::engine::{Engine, NewTaskInput};
    use crate::model::LocalTask;
    use crate::outbox_state::Outcome;

    fn engine() -> (tempfile::TempDir, Engine) {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path()).unwrap();
        (dir, engine)
    }

    fn add(e: &Engine, d: &str, tags: &[&str]) -> Uuid {
        e.create(NewTaskInput {
            description: d.into(),
            project: Some("MOD".into()),
            notes: String::new(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            due: None,
            priority: None,
            parent: None,
            assignee: None,
        })
        .unwrap()
        .uuid
    }

    /// The server numbers the open creates with `keys`, in capture order.
    fn number_all(e: &Engine, keys: &[&str]) {
        let mut store = e.store();
        let rows = store.open_rows(100).unwrap();
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let rows = store.claim(&ids, 1).unwrap();
        let answers: Vec<_> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let t = store.task(r.uuid).unwrap().unwrap();
                (
                    r.clone(),
                    Outcome::Done(Some(from_server(&t, keys[i], "MOD"))),
                )
            })
            .collect();
        store.record_answers(&answers, |_| 0, 2).unwrap();
    }

    /// The task as the server sends it, numbered `key` in `project`.
    fn from_server(t: &LocalTask, key: &str, project: &str) -> Task {
        let n = key.rsplit(['-', '.']).next().unwrap().parse().unwrap();
        Task {
            uuid: t.uuid,
            key: Some(key.to_owned()),
            project: project.into(),
            number: Some(n),
            description: t.description.clone(),
            notes: t.notes.clone(),
            status: TaskStatus::Pending,
            tags: t.tags.clone(),
            due: None,
            priority: None,
            parent: t.parent,
            previous_keys: vec![],
            conflicts: vec![],
            created_at: t.created_at,
            modified_at: t.modified_at,
            assignee: None,
            created_by: None,
            origin: None,
            commits: Vec::new(),
        }
    }

    fn open_rows(e: &Engine, u: Uuid) -> usize {
        e.store()
            .rows_for_test(u)
            .iter()
            .filter(|r| r.state != crate::model::RowState::Done)
            .count()
    }

    #[test]
    fn modify_changes_several_tasks_with_one_queued_change_each() {
        let (_d, e) = engine();
        let a = add(&e, "First", &["ui"]);
        let b = add(&e, "Second", &["ui", "keep"]);
        number_all(&e, &["MOD-1", "MOD-2"]);
        assert_eq!((open_rows(&e, a), open_rows(&e, b)), (0, 0));

        let m = e.parse_modification(&["+bug", "-UI", "pri:H"]).unwrap();
        let out = e.modify(&["MOD-1", "mod-2"], &m).unwrap();
        assert_eq!(out[0].tags, ["bug"]);
        assert_eq!(out[1].tags, ["keep", "bug"]);
        assert!(out.iter().all(|t| t.priority == Some(Priority::H)));
        // A second change before the first is sent joins it, and a move goes in the same one.
        let m = e.parse_modification(&["New", "words", "#OPS"]).unwrap();
        let moved = e.modify(&["MOD-1"], &m).unwrap();
        assert_eq!(moved[0].description, "New words");
        assert_eq!(moved[0].project, "OPS");
        assert_eq!((open_rows(&e, a), open_rows(&e, b)), (1, 1));
    }

    #[test]
    fn a_refused_move_changes_none_of_the_tasks() {
        let (_d, e) = engine();
        let a = add(&e, "Parent", &[]);
        number_all(&e, &["MOD-1"]);
        e.create(NewTaskInput {
            description: "Child".into(),
            project: None,
            notes: String::new(),
            tags: vec![],
            due: None,
            priority: None,
            parent: Some(a.to_string()),
            assignee: None,
        })
        .unwrap();
        number_all(&e, &["MOD-1.1"]);
        let m = e.parse_modification(&["#OPS", "+moved"]).unwrap();
        let err = e.modify(&["MOD-1", "MOD-1.1"], &m).unwrap_err().to_string();
        assert!(err.contains("moves with its parent"), "{err}");
        assert!(
            e.get("MOD-1").unwrap().tags.is_empty(),
            "nothing was written"
        );
        assert_eq!(open_rows(&e, a), 0);
    }

    /// Whether the engine's filter reads `word` as a key (its prefix is known) or as a word.
    fn reads_as_key(e: &Engine, word: &str) -> bool {
        !e.parse_filter(&[word]).unwrap().keys.is_empty()
    }

    #[test]
    fn a_prefix_pulled_or_captured_elsewhere_is_known_to_the_next_filter() {
        let (dir, e) = engine();
        let u = add(&e, "Moved", &[]);
        number_all(&e, &["MOD-1"]);
        assert!(!reads_as_key(&e, "OPS-7"), "no task is in OPS yet");
        // Moved on another device: the sync loop applies the pull through the store, not
        // through the engine's writes.
        let pulled = from_server(&e.get_uuid(u).unwrap(), "OPS-7", "OPS");
        e.store().apply_changes(&[pulled], "c1").unwrap();
        assert!(reads_as_key(&e, "OPS-7"));
        // Another process (the CLI beside the app) captures into a new project.
        assert!(!reads_as_key(&e, "NEW-1"));
        let other = Engine::open(dir.path()).unwrap();
        other
            .create(NewTaskInput {
                description: "Elsewhere".into(),
                project: Some("NEW".into()),
                ..NewTaskInput::default()
            })
            .unwrap();
        assert!(reads_as_key(&e, "NEW-1"));
    }

    #[test]
    fn a_filter_keeps_the_same_tasks_as_from_a_read_of_every_task() {
        let (_d, e) = engine();
        for d in ["open", "done", "gone", "open too"] {
            add(&e, d, &["x"]);
        }
        number_all(&e, &["MOD-1", "MOD-2", "MOD-3", "MOD-4"]);
        e.complete("MOD-2").unwrap();
        e.delete("MOD-3").unwrap();
        e.set_project("MOD-4", "OPS").unwrap();
        add(&e, "provisional", &[]);
        let labels =
            |tasks: Vec<LocalTask>| -> Vec<String> { tasks.iter().map(LocalTask::label).collect() };
        let every = e.list(crate::store::TaskFilter { all: true }).unwrap();
        for (words, want) in [
            (&[][..], &["MOD-1", "MOD-4"][..]),
            (&["+x"], &["MOD-1", "MOD-4"]),
            (&["#MOD"], &["MOD-1"]),
            (&["#MOD", "#OPS"], &["MOD-1", "MOD-4"]),
            (&["status:completed"], &["MOD-2"]),
            (&["#MOD", "status:all"], &["MOD-1", "MOD-2", "MOD-3"]),
            (
                &["status:pending", "status:deleted"],
                &["MOD-1", "MOD-3", "MOD-4"],
            ),
        ] {
            let f = e.parse_filter(words).unwrap();
            let got = labels(e.filter(&f, &[TaskStatus::Pending]).unwrap());
            let from_every = every
                .iter()
                .filter(|t| super::matches_filter(&f, t, &[TaskStatus::Pending]));
            assert_eq!(got, labels(from_every.cloned().collect()), "{words:?}");
            let numbered: Vec<&String> = got.iter().filter(|l| !l.starts_with('~')).collect();
            assert_eq!(numbered, want, "{words:?}");
        }
    }

    #[test]
    fn list_filters_read_keys_ranges_and_statuses() {
        let (_d, e) = engine();
        for d in ["one", "two", "three"] {
            add(&e, d, &["x"]);
        }
        let draft = add(&e, "draft", &[]);
        number_all(&e, &["MOD-1", "MOD-2", "MOD-3", "MOD-4"]);
        let d = add(&e, "still provisional", &["x"]);
        e.complete("MOD-2").unwrap();
        let keys = |words: &[&str]| -> Vec<String> {
            let f = e.parse_filter(words).unwrap();
            e.filter(&f, &[TaskStatus::Pending])
                .unwrap()
                .iter()
                .map(|t| t.label())
                .collect()
        };
        assert_eq!(keys(&["MOD-1..3"]), ["MOD-1", "MOD-3"]);
        assert_eq!(
            keys(&["MOD-1..3", "status:all"]),
            ["MOD-1", "MOD-2", "MOD-3"]
        );
        assert_eq!(
            keys(&["+x", "status:provisional"]),
            [format!("~{}", &d.simple().to_string()[..8])]
        );
        assert_eq!(keys(&["-x"]), ["MOD-4"]);
        assert_eq!(e.get("MOD-4").unwrap().uuid, draft);
        let err = e.parse_filter(&["status:nope"]).unwrap_err().to_string();
        assert!(err.starts_with("filter: 'nope' is not a status"), "{err}");
    }
}
