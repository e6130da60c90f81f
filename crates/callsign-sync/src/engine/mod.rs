//! The engine API: what the desktop app's commands and the CLI call.
//!
//! Local operations (create, edit, list, get) touch only the local store and return at once,
//! online or not; each write wakes the sync loop if this process runs one. Only the process
//! holding the data dir's sync lock talks to the server; any other process only queues, and the
//! loop notices its rows within a tick.
//!
//! **Subtasks and moves.** The engine keeps each task's `parent` and `previous_keys`; a lookup
//! by key falls back to previous keys. A subtask takes its parent's project. The plan
//! ([`crate::plan`]) sends a subtask's create only after its parent's create is answered, and
//! holds a subtask whose parent is refused or in the local inbox, naming that parent as its
//! waiting reason. Moving a provisional parent moves its provisional subtasks; discarding a
//! refused parent keeps its subtasks as tasks of their own. Completing a task with open
//! subtasks is refused here already ([`Error::Blocked`], naming them). [`Engine::next`] lists
//! pending, unblocked tasks leaf-first. Moving a numbered task queues an update with `project`;
//! its key changes when the server answers.
//!
//! **Concurrent edits.** An edit's outbox row carries `base`, the task's values before the
//! user's first unsent edit of each field (`Store::edit_local`; folding keeps the earliest
//! base). The task's `conflicts` come from the server like its other fields (kept as this
//! device settled them while the task has rows queued); [`Engine::restore_conflict`] is an edit
//! that sets the value back, [`Engine::dismiss_conflicts`] an update with `resolve`, each
//! taking the conflict away locally at once.
mod control;
pub(crate) mod drain;
pub(crate) mod git;
pub(crate) mod grammar;
mod import;
pub(crate) mod import_file;
mod rename;
pub(crate) mod team;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use callsign_core::dto::{NewTask, TaskPatch, TaskStatus};
use callsign_core::merge::Field;
use callsign_core::{Prefix, LOCAL_PROJECT};
use tokio::sync::{broadcast, mpsc, Notify};
use uuid::Uuid;

use crate::backoff::Backoff;
use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::events::{Event, SyncStatus};
use crate::model::{LocalTask, SyncState};
use crate::pass::DEFAULT_BATCH;
use crate::settings::{load_token, save_token, Settings, Token};
use crate::store::{Discarded, Store, TaskFilter, TaskQuery, WriteStamp};
use crate::sync_loop::Command;
use crate::undo::{Journal, UndoKind, Undone};

/// Tunables; the defaults are the product's.
#[derive(Clone)]
pub struct Options {
    pub clock: Arc<dyn Clock>,
    pub backoff: Backoff,
    pub batch: usize,
    /// How often the loop probes an unreachable server ([`crate::sync_loop::PROBE_EVERY`]);
    /// `None` waits out the backoff instead (the baseline the reconnect measurement compares).
    pub probe_every: Option<std::time::Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            clock: Arc::new(SystemClock),
            backoff: Backoff::default(),
            batch: DEFAULT_BATCH,
            probe_every: Some(crate::sync_loop::PROBE_EVERY),
        }
    }
}

/// What the user typed to capture a task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewTaskInput {
    pub description: String,
    /// A project prefix; the saved default project when `None`.
    pub project: Option<String>,
    pub notes: String,
    pub tags: Vec<String>,
    pub due: Option<chrono::DateTime<chrono::Utc>>,
    pub priority: Option<callsign_core::Priority>,
    /// The parent task (a key, UUID or provisional short id) for a subtask: it takes the
    /// parent's project, and gets the parent's key and its own number once both are synced.
    pub parent: Option<String>,
    /// A member of the team to assign it to (`@bob` in a capture).
    pub assignee: Option<String>,
}

struct LoopHandle {
    tx: mpsc::Sender<Command>,
    join: tokio::task::JoinHandle<()>,
    /// The OS network-change watcher feeding `network_up` (aborted with the loop).
    netwatch: tokio::task::JoinHandle<()>,
}

struct Inner {
    data_dir: PathBuf,
    store: Arc<Mutex<Store>>,
    events: broadcast::Sender<Event>,
    wake: Arc<Notify>,
    opts: Options,
    running: Mutex<Option<LoopHandle>>,
    /// [`Engine::known_prefixes`] as last read, under the store's [`Store::write_stamp`] then:
    /// reused only while no write (here, by the sync loop or by another process) came since.
    known: Mutex<Option<(WriteStamp, Vec<String>)>>,
}

/// Cheap to clone; all clones share one store connection, one event channel and one loop.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl Engine {
    pub fn open(data_dir: &Path) -> Result<Engine> {
        Self::open_with(data_dir, Options::default())
    }

    pub fn open_with(data_dir: &Path, opts: Options) -> Result<Engine> {
        if !data_dir.exists() {
            let mut b = std::fs::DirBuilder::new();
            b.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            b.create(data_dir)
                .map_err(|e| Error::io(format!("creating {}", data_dir.display()), e))?;
        }
        let store = Store::open(data_dir)?;
        Ok(Engine {
            inner: Arc::new(Inner {
                data_dir: data_dir.to_owned(),
                store: Arc::new(Mutex::new(store)),
                events: broadcast::channel(1024).0,
                wake: Arc::new(Notify::new()),
                opts,
                running: Mutex::new(None),
                known: Mutex::new(None),
            }),
        })
    }

    pub fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.inner.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Local writes changed these tasks: tell subscribers (the tasks, then the counts, so the
    /// indicator never lags the rows) and wake the loop.
    fn touched(&self, uuids: &[Uuid]) {
        // A parent's subtask counts and a subtask's held state change with them.
        let related = self.store().related(uuids).unwrap_or_default();
        for &uuid in uuids.iter().chain(&related) {
            let _ = self.inner.events.send(Event::TaskChanged { uuid });
        }
        self.status_changed();
        self.inner.wake.notify_one();
    }

    fn removed(&self, uuids: &[Uuid]) {
        for &uuid in uuids {
            let _ = self.inner.events.send(Event::TaskRemoved { uuid });
        }
    }

    fn status_changed(&self) {
        if let Ok(s) = self.status() {
            let _ = self.inner.events.send(Event::SyncStatus(s));
        }
    }

    /// Captures a task: a fresh UUID v4 and idempotency key, task row and outbox row in one
    /// transaction. Checks only what must hold locally (a description, a well-formed project
    /// prefix); the other field rules are the server's, and a refusal shows as `failed` with the
    /// server's message.
    pub fn create(&self, input: NewTaskInput) -> Result<LocalTask> {
        let now = self.inner.opts.clock.now();
        let body = self.checked(input, &mut None, now)?;
        let uuid = Uuid::new_v4();
        self.store()
            .create_local(uuid, &Uuid::new_v4().to_string(), &body, now)?;
        self.touched(&[uuid]);
        self.get_uuid(uuid)
    }

    /// Captures many tasks at once (an import): each gets exactly what [`Engine::create`]
    /// gives one task (the same checks, a fresh UUID and idempotency key, a task row and a
    /// `create` outbox row), all in one transaction, so either every task is saved or none is.
    /// Every input is checked before anything is written; a refusal names the input by its
    /// 1-based position (`task 3: ...`). Returns the UUIDs in input order, which is also
    /// capture order.
    pub fn create_many(&self, inputs: Vec<NewTaskInput>) -> Result<Vec<Uuid>> {
        let now = self.inner.opts.clock.now();
        let mut default_project = None;
        let mut items = Vec::with_capacity(inputs.len());
        for (i, input) in inputs.into_iter().enumerate() {
            let body = self
                .checked(input, &mut default_project, now)
                .map_err(|e| match e {
                    Error::Invalid(m) => Error::Invalid(format!("task {}: {m}", i + 1)),
                    other => other,
                })?;
            items.push((Uuid::new_v4(), Uuid::new_v4().to_string(), body));
        }
        if items.is_empty() {
            return Ok(Vec::new());
        }
        self.store().create_local_many(&items, now)?;
        let uuids: Vec<Uuid> = items.into_iter().map(|(uuid, ..)| uuid).collect();
        self.touched(&uuids);
        Ok(uuids)
    }

    /// The local checks of a capture, and the request body it becomes. `default_project`
    /// caches the saved default project (`None` until it is first needed). With no project
    /// and no default (no server yet), the task goes to the local inbox.
    fn checked(
        &self,
        input: NewTaskInput,
        default_project: &mut Option<Option<String>>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<NewTask> {
        if input.description.trim().is_empty() {
            return Err(Error::Invalid("the description must not be empty".into()));
        }
        let parent = match input.parent.as_deref().map(str::trim) {
            Some(r) if !r.is_empty() => Some(self.parent_for(r)?),
            _ => None,
        };
        let project = match (input.project, &parent) {
            (Some(p), Some(parent)) if !p.trim().eq_ignore_ascii_case(&parent.project) => {
                return Err(Error::Invalid(format!(
                    "a subtask is in its parent's project: {} is in {}, not {}",
                    parent.label(),
                    parent.project,
                    p.trim()
                )))
            }
            (_, Some(parent)) => parent.project.clone(),
            (Some(p), None) => p,
            (None, None) => {
                if default_project.is_none() {
                    *default_project = Some(self.settings()?.project);
                }
                default_project
                    .clone()
                    .flatten()
                    .unwrap_or_else(|| LOCAL_PROJECT.to_owned())
            }
        };
        let prefix =
            Prefix::parse(project.trim()).map_err(|e| Error::Invalid(format!("project: {e}")))?;
        callsign_core::validate::due(input.due).map_err(|e| Error::Invalid(e.0))?;
        Ok(NewTask {
            project: prefix.to_string(),
            description: input.description,
            notes: input.notes,
            status: None,
            tags: input.tags,
            due: input.due,
            priority: input.priority,
            parent: parent.map(|p| p.uuid.to_string()),
            created_at: Some(now),
            assignee: input.assignee,
            created_by: None,
            origin: None,
            keep_number: false,
            commits: Vec::new(),
        })
    }

    /// The task a new subtask goes under: an open task that is not as deep as keys go.
    fn parent_for(&self, task_ref: &str) -> Result<LocalTask> {
        let parent = self.get(task_ref).map_err(|e| match e {
            Error::NotFound(_) => Error::Invalid(format!("parent: no task matches {task_ref:?}")),
            other => other,
        })?;
        if parent.status != TaskStatus::Pending {
            return Err(Error::Invalid(format!(
                "parent: {} is {}; a subtask goes under an open task",
                parent.label(),
                parent.status.as_str()
            )));
        }
        if self.depth(&parent)? + 1 >= callsign_core::MAX_DEPTH {
            return Err(Error::Invalid(format!(
                "parent: {} is as deep as keys go ({} numbers)",
                parent.label(),
                callsign_core::MAX_DEPTH
            )));
        }
        Ok(parent)
    }

    /// 0 for a task, 1 for its subtask, and so on (read up its parents here).
    fn depth(&self, task: &LocalTask) -> Result<usize> {
        let store = self.store();
        depth(task, |p| Ok(store.task(p)?.and_then(|t| t.parent)))
    }

    /// A due date as the user typed it (`fri`, `eow`, `2026-12-01`, `3d`; `none` or empty:
    /// no due date), read in this machine's time zone at the engine's clock's now. A form it
    /// does not know is [`Error::Invalid`] with the forms it does.
    pub fn parse_due(&self, text: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
        let now = self.inner.opts.clock.now().with_timezone(&chrono::Local);
        callsign_core::when::parse_due_or_none(text, now).map_err(|e| Error::Invalid(e.to_string()))
    }

    /// Changes fields locally and queues the change (folded into an unsent request if possible).
    /// A task the server refused is sent again with the change: editing is how its fields are
    /// fixed. The change is one undo step ([`Engine::undo`]).
    pub fn edit(&self, task_ref: &str, patch: TaskPatch) -> Result<LocalTask> {
        self.edit_as(task_ref, patch, Journal::Step(UndoKind::Edit))
    }

    /// `edit --project P --description D`: the move ([`Engine::set_project`]) and then the
    /// edit, as one undo step, so one `undo` reverts the whole command. The edit is checked
    /// before the move, so a refused edit moves nothing.
    pub fn edit_and_move(
        &self,
        task_ref: &str,
        project: Option<&str>,
        patch: TaskPatch,
    ) -> Result<LocalTask> {
        if !patch.is_empty() {
            checked_patch(&patch)?;
        }
        let mut task = self.get(task_ref)?;
        let mut journal = Journal::Step(UndoKind::Edit);
        if let Some(p) = project {
            task = self.set_project_as(task_ref, p, Journal::Step(UndoKind::Move))?;
            journal = Journal::Join(UndoKind::Edit);
        }
        if !patch.is_empty() {
            task = self.edit_as(&task.uuid.to_string(), patch, journal)?;
        }
        Ok(task)
    }

    /// Reverts this device's newest local change (one command: a capture, an edit, a status
    /// change, a move, an import) as a new local change that syncs like any edit, and drops it
    /// from the journal, so the next call reverts the change before it (the undo itself is not
    /// journaled). See `crate::undo` for what each revert is; [`Error::NothingToUndo`] when
    /// nothing is journaled.
    pub fn undo(&self) -> Result<Undone> {
        let now = self.inner.opts.clock.now();
        let mut undone = self.store().undo(|| Uuid::new_v4().to_string(), now)?;
        let removed: Vec<Uuid> = undone
            .changes
            .iter()
            .filter(|c| c.removed)
            .map(|c| c.uuid)
            .collect();
        let mut kept: Vec<Uuid> = Vec::new();
        for c in undone.changes.iter().filter(|c| !c.removed) {
            if !kept.contains(&c.uuid) {
                kept.push(c.uuid);
            }
        }
        self.removed(&removed);
        self.touched(&kept);
        undone.tasks = kept
            .iter()
            .map(|&u| self.get_uuid(u))
            .collect::<Result<_>>()?;
        Ok(undone)
    }

    fn edit_as(&self, task_ref: &str, patch: TaskPatch, journal: Journal) -> Result<LocalTask> {
        checked_patch(&patch)?;
        self.edit_task(&self.get(task_ref)?, patch, journal)
    }

    /// [`Engine::edit_as`] on a task already read (and a `patch` already checked): `task`
    /// names it and says whether it has a failed request to send again with the change.
    fn edit_task(&self, task: &LocalTask, patch: TaskPatch, journal: Journal) -> Result<LocalTask> {
        let now = self.inner.opts.clock.now();
        {
            let mut store = self.store();
            store.edit_local(task.uuid, patch, &Uuid::new_v4().to_string(), now, journal)?;
            if task.sync_state == SyncState::Failed {
                store.retry_failed(
                    task.uuid,
                    || Uuid::new_v4().to_string(),
                    now.timestamp_millis(),
                )?;
            }
        }
        self.touched(&[task.uuid]);
        self.get_uuid(task.uuid)
    }

    /// Brings back the value of the task's conflict number `index` (as `LocalTask::conflicts`
    /// lists them): an edit like any other, after which the conflict is gone.
    pub fn restore_conflict(&self, task_ref: &str, index: usize) -> Result<LocalTask> {
        let task = self.get(task_ref)?;
        let c = task.conflicts.get(index).ok_or_else(|| {
            Error::Invalid(format!(
                "{} has no conflict #{} (it has {})",
                task.label(),
                index + 1,
                task.conflicts.len()
            ))
        })?;
        let patch = callsign_core::merge::restore(c)
            .map_err(|e| Error::Invalid(format!("the conflict's value: {e}")))?;
        self.edit_as(
            &task.uuid.to_string(),
            patch,
            Journal::Step(UndoKind::Resolve),
        )
    }

    /// Keeps the field's current value and clears its conflicts, here and on the server.
    pub fn dismiss_conflicts(&self, task_ref: &str, field: Field) -> Result<LocalTask> {
        let task = self.get(task_ref)?;
        if !task.conflicts.iter().any(|c| c.field == field) {
            return Err(Error::Invalid(format!(
                "{} has no conflict on its {field}",
                task.label()
            )));
        }
        // Only conflicts go: nothing for `undo` to put back, so nothing is journaled.
        let patch = TaskPatch {
            resolve: vec![field],
            ..TaskPatch::default()
        };
        self.edit_as(&task.uuid.to_string(), patch, Journal::Skip)
    }

    /// Completes a task; one with open subtasks is refused ([`Error::Blocked`], naming them).
    pub fn complete(&self, task_ref: &str) -> Result<LocalTask> {
        let task = self.get(task_ref)?;
        if task.is_blocked() {
            let open = self.query(&TaskQuery {
                parent: Some(task.uuid),
                ..TaskQuery::default()
            })?;
            return Err(Error::Blocked {
                task: task.label(),
                open: open.iter().map(LocalTask::label).collect(),
            });
        }
        self.set_status(&task.uuid.to_string(), TaskStatus::Completed)
    }

    /// What can be done next: pending tasks that are not blocked, leaf-first (tasks without
    /// subtasks first, then the deepest first, then by number; capture order breaks ties and
    /// puts provisional tasks after numbered ones), narrowed by `q` (whose `all` is ignored).
    pub fn next(&self, q: &TaskQuery) -> Result<Vec<LocalTask>> {
        let every = self.query(&TaskQuery {
            all: true,
            ..TaskQuery::default()
        })?;
        let parents: std::collections::HashMap<Uuid, Uuid> = every
            .iter()
            .filter_map(|t| t.parent.map(|p| (t.uuid, p)))
            .collect();
        let depth_of = |t: &LocalTask| depth(t, |p| Ok(parents.get(&p).copied())).unwrap_or(0);
        let mut tasks: Vec<LocalTask> = self
            .query(&TaskQuery {
                all: false,
                ..q.clone()
            })?
            .into_iter()
            .filter(|t| !t.is_blocked())
            .collect();
        tasks.sort_by_cached_key(|t| {
            (
                t.children > 0,
                std::cmp::Reverse(depth_of(t)),
                t.number.is_none(),
                t.number,
            )
        });
        Ok(tasks)
    }

    /// Marks a task deleted. A task whose create the server refused never existed there, so it
    /// is discarded instead (gone from this device); the task is returned as it was, marked
    /// deleted.
    pub fn delete(&self, task_ref: &str) -> Result<LocalTask> {
        let task = self.get(task_ref)?;
        if task.key.is_none() && self.store().create_refused(task.uuid)? {
            self.discard(&task.uuid.to_string())?;
            return Ok(LocalTask {
                status: TaskStatus::Deleted,
                ..task
            });
        }
        self.set_status(task_ref, TaskStatus::Deleted)
    }

    /// Makes a completed or deleted task pending again; a pending one is refused, saying so.
    pub fn reopen(&self, task_ref: &str) -> Result<LocalTask> {
        let task = self.get(task_ref)?;
        if task.status == TaskStatus::Pending {
            return Err(Error::Invalid(format!(
                "{} is already pending",
                task.label()
            )));
        }
        self.set_status(&task.uuid.to_string(), TaskStatus::Pending)
    }

    /// Appends a line to the task's notes, stamped with the local date and time at the
    /// engine's clock (`2026-11-26 09:30 called the bank`). Sent like any edit of the notes.
    pub fn annotate(&self, task_ref: &str, text: &str) -> Result<LocalTask> {
        let text = text.trim();
        if text.is_empty() {
            return Err(Error::Invalid("nothing to add to the notes".into()));
        }
        let task = self.get(task_ref)?;
        let now = self.inner.opts.clock.now().with_timezone(&chrono::Local);
        let line = format!("{} {text}", now.format("%Y-%m-%d %H:%M"));
        let notes = match task.notes.trim_end() {
            "" => line,
            before => format!("{before}\n{line}"),
        };
        let patch = TaskPatch {
            notes: Some(notes),
            ..TaskPatch::default()
        };
        self.edit_as(
            &task.uuid.to_string(),
            patch,
            Journal::Step(UndoKind::Annotate),
        )
    }

    fn set_status(&self, task_ref: &str, status: TaskStatus) -> Result<LocalTask> {
        let patch = TaskPatch {
            status: Some(status),
            ..TaskPatch::default()
        };
        self.edit_as(task_ref, patch, Journal::Step(UndoKind::of_status(status)))
    }

    /// Sends a task's failed requests again, each under a new idempotency key (same UUID).
    pub fn retry(&self, task_ref: &str) -> Result<LocalTask> {
        let uuid = self.get(task_ref)?.uuid;
        let now = self.inner.opts.clock.now_ms();
        self.store()
            .retry_failed(uuid, || Uuid::new_v4().to_string(), now)?;
        self.touched(&[uuid]);
        self.get_uuid(uuid)
    }

    /// Moves a task to another project. One the server has not numbered just changes project
    /// here (a local-inbox task goes to a server project, a refused one is sent again there;
    /// see [`Store::set_project`]). A numbered one is queued as a move: the server gives it
    /// the next number there (and its subtasks new numbers under it), and its old key keeps
    /// naming it. A subtask moves only with its parent.
    pub fn set_project(&self, task_ref: &str, project: &str) -> Result<LocalTask> {
        self.set_project_as(task_ref, project, Journal::Step(UndoKind::Move))
    }

    fn set_project_as(&self, task_ref: &str, project: &str, journal: Journal) -> Result<LocalTask> {
        let prefix = project_prefix(project)?;
        self.move_task(&self.get(task_ref)?, &prefix, journal)
    }

    /// [`Engine::set_project_as`] on a task already read.
    fn move_task(&self, task: &LocalTask, prefix: &Prefix, journal: Journal) -> Result<LocalTask> {
        if task.key.is_some() {
            check_move(task, prefix)?;
            if task.project == prefix.as_str() {
                return Err(Error::Invalid(format!(
                    "{} is in {prefix} already",
                    task.label()
                )));
            }
            let patch = TaskPatch {
                project: Some(prefix.to_string()),
                ..TaskPatch::default()
            };
            return self.edit_task(task, patch, journal);
        }
        let now = self.inner.opts.clock.now();
        self.store().set_project(
            task.uuid,
            prefix,
            || Uuid::new_v4().to_string(),
            now,
            journal,
        )?;
        self.touched(&[task.uuid]);
        self.get_uuid(task.uuid)
    }

    /// Sends every task of the local inbox to the server project `project`; returns how many
    /// were queued (deleted inbox tasks are removed instead).
    pub fn send_inbox(&self, project: &str) -> Result<usize> {
        let prefix = project_prefix(project)?;
        let now = self.inner.opts.clock.now();
        let sent = self
            .store()
            .send_inbox(&prefix, || Uuid::new_v4().to_string(), now)?;
        self.removed(&sent.removed);
        self.touched(&sent.moved);
        Ok(sent.moved.len())
    }

    /// Discards what the server refused or never saw: `None` when the task is gone from this
    /// device, else the task without its refused changes. See [`Store::discard`].
    pub fn discard(&self, task_ref: &str) -> Result<Option<LocalTask>> {
        let uuid = self.get(task_ref)?.uuid;
        // Read before the task goes: its parent's counts and its subtasks (now tasks of their
        // own) change with it.
        let related = self.store().related(&[uuid])?;
        let done = self.store().discard(uuid, self.inner.opts.clock.now())?;
        match done {
            Discarded::Removed => {
                self.removed(&[uuid]);
                for &uuid in &related {
                    let _ = self.inner.events.send(Event::TaskChanged { uuid });
                }
                self.status_changed();
                Ok(None)
            }
            Discarded::Changes(_) => {
                self.touched(&[uuid]);
                self.get_uuid(uuid).map(Some)
            }
        }
    }

    /// One page of every task, newest first, and the number of tasks in all.
    pub fn page(&self, offset: usize, limit: usize) -> Result<(Vec<LocalTask>, u64)> {
        self.store().page(offset, limit)
    }

    pub fn list(&self, filter: TaskFilter) -> Result<Vec<LocalTask>> {
        self.query(&TaskQuery {
            all: filter.all,
            ..TaskQuery::default()
        })
    }

    /// Tasks by project and text (in description, notes or key), in capture order.
    pub fn query(&self, q: &TaskQuery) -> Result<Vec<LocalTask>> {
        self.store().list(q)
    }

    /// By key (lenient: `syn 42`, old keys too), UUID, unique UUID prefix of at least 8 hex
    /// digits, or an imported task's origin key (`ENG-42`, `#12`); see [`Store::find`].
    pub fn get(&self, task_ref: &str) -> Result<LocalTask> {
        self.store().find(task_ref)
    }

    fn get_uuid(&self, uuid: Uuid) -> Result<LocalTask> {
        self.store()
            .task(uuid)?
            .ok_or_else(|| Error::NotFound(uuid.to_string()))
    }

    pub fn settings(&self) -> Result<Settings> {
        Settings::load(&self.store())
    }

    pub fn set_settings(&self, s: &Settings) -> Result<()> {
        s.save(&self.store())?;
        self.inner.wake.notify_one();
        Ok(())
    }

    pub fn set_token(&self, token: &Token) -> Result<()> {
        save_token(&self.inner.data_dir, token)?;
        self.inner.wake.notify_one();
        Ok(())
    }

    pub fn has_token(&self) -> Result<bool> {
        Ok(load_token(&self.inner.data_dir)?.is_some())
    }

    pub fn status(&self) -> Result<SyncStatus> {
        crate::status::read(&self.store())
    }

    /// The status without its counts (which read the open outbox): enough for a task's waiting
    /// reason, cheap enough for every listing.
    pub fn connection(&self) -> Result<SyncStatus> {
        crate::status::read_connection(&self.store())
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }
}

/// 0 for a task, 1 for its subtask, and so on: how many parents `parent_of` finds above it
/// (bounded, so a broken chain cannot loop).
fn depth(
    task: &LocalTask,
    mut parent_of: impl FnMut(Uuid) -> Result<Option<Uuid>>,
) -> Result<usize> {
    let (mut depth, mut up) = (0, task.parent);
    while let Some(p) = up.filter(|_| depth <= callsign_core::MAX_DEPTH) {
        depth += 1;
        up = parent_of(p)?;
    }
    Ok(depth)
}

/// The local checks of an edit: it changes something, leaves a description, and a due date
/// within the years the server keeps.
fn checked_patch(patch: &TaskPatch) -> Result<()> {
    if patch.is_empty() {
        return Err(Error::Invalid("nothing to change".into()));
    }
    if patch
        .description
        .as_deref()
        .is_some_and(|d| d.trim().is_empty())
    {
        return Err(Error::Invalid("the description must not be empty".into()));
    }
    if let Some(due) = patch.due {
        callsign_core::validate::due(due).map_err(|e| Error::Invalid(e.0))?;
    }
    Ok(())
}

/// A project the user names for a task: a valid prefix (any case).
/// Whether a numbered task may move to `prefix`: not to the local inbox, not a subtask alone.
fn check_move(task: &LocalTask, prefix: &Prefix) -> Result<()> {
    if prefix.is_local() {
        return Err(Error::Invalid(format!(
            "{} has its key; {LOCAL_PROJECT} is this device's inbox, not a project to move it to",
            task.label()
        )));
    }
    if task.parent.is_some() {
        return Err(Error::Invalid(format!(
            "{} is a subtask: it moves with its parent, not alone",
            task.label()
        )));
    }
    Ok(())
}

fn project_prefix(project: &str) -> Result<Prefix> {
    Prefix::parse(project.trim()).map_err(|e| Error::Invalid(format!("project: {e}")))
}

#[cfg(test)]
mod import_tests;
#[cfg(test)]
mod tests;

#[cfg(test)]
mod undo_tests;
