//! The desktop surfaces' state and commands: the desktop prefs (tray, shortcut,
//! notifications), quick capture's window, the tray's menu actions and what it shows, and the
//! notifications shown. The tray menu, the shortcut and a notification's click call the same
//! functions these commands do.
use std::path::PathBuf;
use std::sync::Mutex;

use callsign_sync::{Engine, TaskFilter};
use serde::Serialize;
use tauri::{AppHandle, Manager, Runtime, State};

use crate::error::{CmdError, CmdResult};
use crate::notify::{Notifier, Shown as Notes};
use crate::prefs::DesktopPrefs;
use crate::tray::{self, TrayState};
use crate::{capture, notify};

/// The desktop's own state: its prefs (with the data dir they live in) and the notifier.
pub struct Desktop {
    dir: PathBuf,
    prefs: Mutex<DesktopPrefs>,
    notifier: Mutex<Notifier>,
}

impl Desktop {
    /// Reads the prefs in the engine's data dir. The notifier knows no task until [`prime`].
    ///
    /// [`prime`]: Desktop::prime
    pub fn open(engine: &Engine) -> Desktop {
        let dir = engine.data_dir().to_owned();
        Desktop {
            prefs: Mutex::new(DesktopPrefs::load(&dir)),
            notifier: Mutex::new(Notifier::default()),
            dir,
        }
    }

    /// Starts the notifier from the tasks as they are (off the window's start: with 50,000
    /// tasks this is a whole read), so refusals already shown are not told again.
    pub fn prime(&self, engine: &Engine) {
        let tasks = engine.list(TaskFilter { all: true }).unwrap_or_default();
        *self.notifier.lock().expect("notifier lock") = Notifier::new(&tasks);
    }

    pub fn prefs(&self) -> DesktopPrefs {
        self.prefs.lock().expect("prefs lock").clone()
    }

    /// The notifier with the current prefs (the engine-event forwarder's use).
    pub fn decide<T>(&self, f: impl FnOnce(&mut Notifier, &DesktopPrefs) -> T) -> T {
        // Called for every task event: the prefs are read in place, not copied. The lock
        // order is prefs, then notifier (nothing takes them the other way round).
        let prefs = self.prefs.lock().expect("prefs lock");
        f(&mut self.notifier.lock().expect("notifier lock"), &prefs)
    }
}

#[tauri::command]
pub fn get_desktop_prefs(desktop: State<'_, Desktop>) -> DesktopPrefs {
    desktop.prefs()
}

/// Saves the prefs and applies them: the new shortcut is registered first, so one that cannot
/// be had (malformed, or held by another program) is refused (`invalid`) and the old one stays.
#[tauri::command]
pub fn save_desktop_prefs<R: Runtime>(
    app: AppHandle<R>,
    desktop: State<'_, Desktop>,
    prefs: DesktopPrefs,
) -> CmdResult<DesktopPrefs> {
    let prefs = prefs
        .checked()
        .map_err(|e| CmdError::new("invalid", e.to_string()))?;
    let before = desktop.prefs();
    if prefs.capture_shortcut != before.capture_shortcut {
        if let Err(e) = capture::register_shortcut(&app, &prefs.capture_shortcut) {
            let _ = capture::register_shortcut(&app, &before.capture_shortcut);
            return Err(CmdError::new("invalid", e));
        }
    }
    prefs
        .save(&desktop.dir)
        .map_err(|e| CmdError::new("storage", e.to_string()))?;
    *desktop.prefs.lock().expect("prefs lock") = prefs.clone();
    Ok(prefs)
}

#[tauri::command]
pub fn open_capture<R: Runtime>(app: AppHandle<R>) -> CmdResult<()> {
    capture::open(&app).map_err(|e| CmdError::new("window", e.to_string()))
}

/// Quick capture is done (saved, or Esc): its window closes.
#[tauri::command]
pub fn close_capture<R: Runtime>(app: AppHandle<R>) -> CmdResult<()> {
    capture::close(&app).map_err(|e| CmdError::new("window", e.to_string()))
}

/// Runs a tray menu item by its id (`capture`, `open`, `sync`, `quit`), as a click on it does.
#[tauri::command]
pub fn tray_action<R: Runtime>(app: AppHandle<R>, action: String) -> CmdResult<()> {
    let a = tray::Action::parse(&action).ok_or_else(|| {
        CmdError::new(
            "invalid",
            format!("{action:?} is not a tray action: use capture, open, sync or quit"),
        )
    })?;
    tray::act(&app, a);
    Ok(())
}

/// What the tray shows now.
#[tauri::command]
pub fn tray_status<R: Runtime>(app: AppHandle<R>) -> Option<tray::Shown> {
    app.state::<TrayState<R>>().shown()
}

#[derive(Debug, Clone, Serialize)]
pub struct NoteView {
    pub title: String,
    pub body: String,
}

/// The notifications shown since the app started, oldest first.
#[tauri::command]
pub fn notifications(notes: State<'_, Notes>) -> Vec<NoteView> {
    notes
        .log
        .lock()
        .expect("notify lock")
        .iter()
        .map(|(title, body)| NoteView {
            title: title.clone(),
            body: body.clone(),
        })
        .collect()
}

/// A click on a refusal's notification, for tests where no notification service runs: the
/// window comes forward and the UI opens the task.
#[tauri::command]
pub fn open_task_from_notification<R: Runtime>(app: AppHandle<R>, uuid: uuid::Uuid) {
    notify::on_click(&app, uuid);
}
