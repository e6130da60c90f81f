//! Notifications: a task the server refused (once per refusal, with the reason; clicking it
//! opens the task), and a backlog captured offline getting its keys in one sync ("12 tasks got
//! keys DEV-31..42"). [`Notifier`] decides from the engine's events (pure, tested here);
//! [`send`] shows a note through Tauri's notification plugin and [`on_click`] opens the task.
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use callsign_sync::reason::task_failure;
use callsign_sync::{LocalTask, SyncStatus};
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tauri_plugin_notification::{Action, ActionType, NotificationExt};
use uuid::Uuid;

use crate::prefs::DesktopPrefs;

/// A sync that numbers at least this many of this device's tasks is a backlog worth telling.
pub const BACKLOG: usize = 5;

/// What to tell the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The server refused this task; clicking opens it.
    Failed {
        uuid: Uuid,
        title: String,
        body: String,
    },
    /// Tasks captured before got their keys.
    Keyed { title: String, body: String },
}

/// The decisions: which refusals were told (a task's refusal is told once; a new one after a
/// retry is told again), and which provisional tasks got keys since the sync began.
#[derive(Debug, Default)]
pub struct Notifier {
    told: HashMap<Uuid, String>,
    provisional: HashSet<Uuid>,
    keyed: Vec<String>,
}

impl Notifier {
    /// Starts with the tasks that have no key yet, so their keys count when they come.
    pub fn new(tasks: &[LocalTask]) -> Notifier {
        let mut n = Notifier::default();
        for t in tasks {
            n.remember(t);
        }
        n
    }

    fn remember(&mut self, t: &LocalTask) {
        if t.key.is_none() && !t.is_local() {
            self.provisional.insert(t.uuid);
        }
        if let Some(f) = task_failure(t) {
            self.told.insert(t.uuid, f.detail);
        }
    }

    /// A task changed: a refusal not told yet is a note (when the user wants those).
    pub fn task_changed(&mut self, t: &LocalTask, prefs: &DesktopPrefs) -> Option<Note> {
        if t.key.is_none() && !t.is_local() {
            self.provisional.insert(t.uuid);
        } else if let Some(key) = &t.key {
            if self.provisional.remove(&t.uuid) {
                self.keyed.push(key.clone());
            }
        }
        let Some(failure) = task_failure(t) else {
            self.told.remove(&t.uuid);
            return None;
        };
        if self.told.get(&t.uuid) == Some(&failure.detail) {
            return None;
        }
        self.told.insert(t.uuid, failure.detail.clone());
        if !prefs.notify_failures {
            return None;
        }
        let name = t
            .key
            .clone()
            .unwrap_or_else(|| format!("“{}”", clip(&t.description)));
        Some(Note::Failed {
            uuid: t.uuid,
            title: format!("{name} could not be synced"),
            body: failure.summary,
        })
    }

    /// The sync status changed: once nothing is waiting, the keys given since the last quiet
    /// moment are told when they are a backlog.
    pub fn status_changed(&mut self, s: &SyncStatus, prefs: &DesktopPrefs) -> Option<Note> {
        if s.pending + s.in_flight > 0 {
            return None;
        }
        let keyed = std::mem::take(&mut self.keyed);
        if keyed.len() < BACKLOG || !prefs.notify_keyed {
            return None;
        }
        Some(Note::Keyed {
            title: format!("{} tasks got keys", keyed.len()),
            body: format!("{} tasks got keys {}", keyed.len(), key_ranges(&keyed)),
        })
    }
}

fn clip(s: &str) -> String {
    const MAX: usize = 40;
    if s.chars().count() <= MAX {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(MAX - 1).collect();
    out.push('…');
    out
}

/// Keys as a person reads them: runs of one project's numbers joined (`DEV-31..42`), projects
/// in order, anything else (a subtask's key) as it is; at most four parts, then `and N more`.
pub fn key_ranges(keys: &[String]) -> String {
    let mut numbered: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    let mut other: Vec<&str> = Vec::new();
    for k in keys {
        match k
            .split_once('-')
            .and_then(|(p, n)| Some((p, n.parse::<u64>().ok()?)))
        {
            Some((p, n)) => numbered.entry(p).or_default().push(n),
            None => other.push(k),
        }
    }
    let mut parts = Vec::new();
    for (prefix, mut numbers) in numbered {
        numbers.sort_unstable();
        numbers.dedup();
        let mut start = numbers[0];
        let mut end = start;
        for &n in &numbers[1..] {
            if n == end + 1 {
                end = n;
            } else {
                parts.push(run(prefix, start, end));
                (start, end) = (n, n);
            }
        }
        parts.push(run(prefix, start, end));
    }
    other.sort_unstable();
    parts.extend(other.into_iter().map(str::to_owned));
    const SHOWN: usize = 4;
    if parts.len() > SHOWN {
        let more = parts.len() - SHOWN;
        parts.truncate(SHOWN);
        parts.push(format!("and {more} more"));
    }
    parts.join(", ")
}

fn run(prefix: &str, start: u64, end: u64) -> String {
    if start == end {
        format!("{prefix}-{start}")
    } else {
        format!("{prefix}-{start}..{end}")
    }
}

/// The notifications shown: which task each one opens.
#[derive(Default)]
pub struct Shown {
    next_id: Mutex<i32>,
    opens: Mutex<HashMap<i32, Uuid>>,
    /// The last [`KEPT`] notes shown, newest last (`notifications` in the command tests and e2e).
    pub log: Mutex<Vec<(String, String)>>,
}

const OPEN_TYPE: &str = "open-task";

/// How many notifications [`Shown`] remembers (its log, and which task each opens).
const KEPT: usize = 100;

/// Registers the "Open" action and what a click does. Call once, after the plugin.
pub fn install<R: Runtime>(app: &AppHandle<R>) {
    let n = app.notification();
    let open = ActionType::builder(OPEN_TYPE)
        .actions(vec![Action::builder("open", "Open").build()])
        .build();
    if let Err(e) = n.register_action_types(vec![open]) {
        tracing::warn!("notification actions are not available: {e}");
    }
    let handle = app.clone();
    let _ = n.on_action(move |performed| {
        let Some(id) = performed.notification().map(|n| n.id()) else {
            return;
        };
        let uuid = handle
            .state::<Shown>()
            .opens
            .lock()
            .expect("notify lock")
            .get(&id)
            .copied();
        if let Some(uuid) = uuid {
            on_click(&handle, uuid);
        }
    });
}

/// A click on a refusal's notification: the window comes forward on the task.
pub fn on_click<R: Runtime>(app: &AppHandle<R>, uuid: Uuid) {
    crate::capture::show_main(app);
    let _ = app.emit_to(
        crate::capture::MAIN,
        "open-task",
        crate::dto::Removed { uuid },
    );
}

/// Shows `note` (and logs it). A desktop without a notification service shows nothing; that
/// is not an error the user could act on.
pub fn send<R: Runtime>(app: &AppHandle<R>, note: Note) {
    let shown = app.state::<Shown>();
    let id = {
        let mut next = shown.next_id.lock().expect("notify lock");
        *next += 1;
        *next
    };
    let (title, body) = match &note {
        Note::Failed { uuid, title, body } => {
            shown.opens.lock().expect("notify lock").insert(id, *uuid);
            (title, body)
        }
        Note::Keyed { title, body } => (title, body),
    };
    {
        let mut log = shown.log.lock().expect("notify lock");
        log.push((title.clone(), body.clone()));
        let over = log.len().saturating_sub(KEPT);
        log.drain(..over);
        // A notification older than the last KEPT is long gone from the screen.
        shown
            .opens
            .lock()
            .expect("notify lock")
            .retain(|&shown_id, _| shown_id > id - KEPT as i32);
    }
    let Some(plugin) = app.try_state::<tauri_plugin_notification::Notification<R>>() else {
        return;
    };
    let mut b = plugin.builder().id(id).title(title).body(body);
    if matches!(note, Note::Failed { .. }) {
        b = b.action_type_id(OPEN_TYPE);
    }
    if let Err(e) = b.show() {
        tracing::info!("a notification could not be shown: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use callsign_sync::SyncState;
    use chrono::Utc;

    fn task(key: Option<&str>, failed: Option<&str>) -> LocalTask {
        LocalTask {
            uuid: Uuid::new_v4(),
            key: key.map(str::to_owned),
            project: "DEV".into(),
            number: None,
            description: "Fix the login redirect".into(),
            notes: String::new(),
            status: callsign_core::dto::TaskStatus::Pending,
            tags: vec![],
            due: None,
            priority: None,
            parent: None,
            previous_keys: vec![],
            conflicts: vec![],
            children: 0,
            open_children: 0,
            held_by: None,
            created_at: Utc::now(),
            modified_at: Utc::now(),
            sync_state: if failed.is_some() {
                SyncState::Failed
            } else {
                SyncState::Provisional
            },
            last_error: failed.map(str::to_owned),
            error_code: failed.map(|_| "invalid".to_owned()),
            open_rows: u32::from(failed.is_some()),
            next_attempt_at: None,
            assignee: None,
            created_by: None,
            origin: None,
            commits: vec![],
        }
    }

    fn quiet() -> SyncStatus {
        SyncStatus {
            online: Some(true),
            ..SyncStatus::default()
        }
    }

    #[test]
    fn a_refusal_is_told_once_and_again_after_a_new_one() {
        let prefs = DesktopPrefs::default();
        let mut n = Notifier::new(&[]);
        let t = task(None, Some("400 invalid: description too long"));
        let Some(Note::Failed { uuid, title, body }) = n.task_changed(&t, &prefs) else {
            panic!("a refusal is told");
        };
        assert_eq!(uuid, t.uuid);
        assert_eq!(title, "“Fix the login redirect” could not be synced");
        assert!(!body.is_empty());
        assert_eq!(n.task_changed(&t, &prefs), None, "once per refusal");
        // Retried (no longer failed), then refused again: told again.
        let retried = task(None, None);
        let retried = LocalTask {
            uuid: t.uuid,
            ..retried
        };
        assert_eq!(n.task_changed(&retried, &prefs), None);
        assert!(n.task_changed(&t, &prefs).is_some());
        // A refusal known at start is not told again.
        let mut fresh = Notifier::new(std::slice::from_ref(&t));
        assert_eq!(fresh.task_changed(&t, &prefs), None);
        // Not wanted: not told.
        let off = DesktopPrefs {
            notify_failures: false,
            ..DesktopPrefs::default()
        };
        let other = task(Some("DEV-3"), Some("409 conflict"));
        assert_eq!(Notifier::new(&[]).task_changed(&other, &off), None);
    }

    #[test]
    fn a_backlog_that_gets_its_keys_is_told_when_the_sync_is_quiet() {
        let prefs = DesktopPrefs::default();
        let tasks: Vec<LocalTask> = (0..12).map(|_| task(None, None)).collect();
        let mut n = Notifier::new(&tasks);
        let busy = SyncStatus {
            pending: 3,
            ..quiet()
        };
        for (i, t) in tasks.iter().enumerate() {
            let keyed = LocalTask {
                key: Some(format!("DEV-{}", 31 + i)),
                ..t.clone()
            };
            assert_eq!(n.task_changed(&keyed, &prefs), None);
            assert_eq!(
                n.status_changed(&busy, &prefs),
                None,
                "not while tasks wait"
            );
        }
        let Some(Note::Keyed { title, body }) = n.status_changed(&quiet(), &prefs) else {
            panic!("the backlog is told");
        };
        assert_eq!(title, "12 tasks got keys");
        assert_eq!(body, "12 tasks got keys DEV-31..42");
        assert_eq!(n.status_changed(&quiet(), &prefs), None, "told once");
        // A few keys are not a backlog.
        let few: Vec<LocalTask> = (0..BACKLOG - 1).map(|_| task(None, None)).collect();
        let mut n = Notifier::new(&few);
        for (i, t) in few.iter().enumerate() {
            let keyed = LocalTask {
                key: Some(format!("DEV-{i}")),
                ..t.clone()
            };
            n.task_changed(&keyed, &prefs);
        }
        assert_eq!(n.status_changed(&quiet(), &prefs), None);
    }

    #[test]
    fn key_ranges_read_as_said() {
        let k = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            key_ranges(&k(&["DEV-31", "DEV-32", "DEV-33"])),
            "DEV-31..33"
        );
        assert_eq!(
            key_ranges(&k(&["OPS-2", "DEV-5", "DEV-3", "DEV-4", "DEV-9"])),
            "DEV-3..5, DEV-9, OPS-2"
        );
        assert_eq!(key_ranges(&k(&["DEV-3.1", "DEV-2"])), "DEV-2, DEV-3.1");
        assert_eq!(
            key_ranges(&k(&["A-1", "A-3", "A-5", "A-7", "A-9", "A-11"])),
            "A-1, A-3, A-5, A-7, and 2 more"
        );
    }
}
