//! The tray icon: its look follows the sync state (synced, N pending, offline, N failed, local
//! only), and its menu opens quick capture or the window, syncs now, or quits. What it shows
//! is decided by [`look`] (pure); [`show`] puts it on the icon, its tooltip and the menu's first
//! (disabled) line, which is where Linux tray hosts show text, and remembers it for
//! `tray_status`. Menu clicks and the `tray_action` command run the same [`act`].
use std::sync::Mutex;

use callsign_sync::SyncStatus;
use serde::Serialize;
use tauri::image::Image;
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Runtime};

use crate::commands::AppEngine;

pub const ID: &str = "main";

/// What the tray says about syncing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "count", rename_all = "snake_case")]
pub enum Look {
    /// No server set: tasks stay on this device.
    LocalOnly,
    Synced,
    /// Tasks with changes not yet acknowledged by the server.
    Pending(u64),
    /// The server did not answer the last time; this many wait.
    Offline(u64),
    /// Tasks the server refused: they wait for the user.
    Failed(u64),
}

/// The tray's look for a status. Failures come first (they need the user), then whether there
/// is a server at all, whether it answered, and what waits.
pub fn look(s: &SyncStatus, configured: bool) -> Look {
    let waiting = s.pending + s.in_flight;
    if s.failed > 0 {
        Look::Failed(s.failed)
    } else if !configured {
        Look::LocalOnly
    } else if s.online == Some(false) {
        Look::Offline(waiting)
    } else if waiting > 0 {
        Look::Pending(waiting)
    } else {
        Look::Synced
    }
}

fn tasks(n: u64) -> String {
    if n == 1 {
        "1 task".to_owned()
    } else {
        format!("{n} tasks")
    }
}

impl Look {
    /// The line the menu and the tooltip show.
    pub fn text(self) -> String {
        match self {
            Look::LocalOnly => "Local only: no server set".to_owned(),
            Look::Synced => "Synced".to_owned(),
            Look::Pending(n) => format!("{n} pending"),
            Look::Offline(0) => "Offline".to_owned(),
            Look::Offline(n) => format!("Offline: {} waiting", tasks(n)),
            Look::Failed(n) => format!("{n} failed: open Callsign to fix"),
        }
    }

    fn icon(self) -> &'static [u8] {
        match self {
            Look::LocalOnly => include_bytes!("../../icons/64x64.png"),
            Look::Synced => include_bytes!("../../icons/tray/synced.png"),
            Look::Pending(_) => include_bytes!("../../icons/tray/pending.png"),
            Look::Offline(_) => include_bytes!("../../icons/tray/offline.png"),
            Look::Failed(_) => include_bytes!("../../icons/tray/failed.png"),
        }
    }
}

/// What the tray shows now (`tray_status`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shown {
    #[serde(flatten)]
    pub look: Look,
    pub tooltip: String,
    /// Whether a tray icon exists (it does not in the command tests).
    pub installed: bool,
}

/// The tray's state in the app: the menu line to rewrite and what is shown.
pub struct TrayState<R: Runtime> {
    status_line: Mutex<Option<MenuItem<R>>>,
    shown: Mutex<Option<Shown>>,
}

impl<R: Runtime> Default for TrayState<R> {
    fn default() -> Self {
        TrayState {
            status_line: Mutex::new(None),
            shown: Mutex::new(None),
        }
    }
}

impl<R: Runtime> TrayState<R> {
    pub fn shown(&self) -> Option<Shown> {
        self.shown.lock().expect("tray lock").clone()
    }
}

/// What the menu (or `tray_action`) asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Capture,
    Open,
    Sync,
    Quit,
}

impl Action {
    pub fn parse(id: &str) -> Option<Action> {
        Some(match id {
            "capture" => Action::Capture,
            "open" => Action::Open,
            "sync" => Action::Sync,
            "quit" => Action::Quit,
            _ => return None,
        })
    }
}

/// Puts the tray icon up, with its menu, looking like `first`.
pub fn install<R: Runtime>(app: &AppHandle<R>, first: Look) -> tauri::Result<()> {
    let status_line = MenuItem::with_id(app, "status", first.text(), false, None::<&str>)?;
    let menu = Menu::with_items(
        app,
        &[
            &status_line,
            &PredefinedMenuItem::separator(app)?,
            &MenuItem::with_id(app, "capture", "Quick capture…", true, None::<&str>)?,
            &MenuItem::with_id(app, "open", "Open Callsign", true, None::<&str>)?,
            &MenuItem::with_id(app, "sync", "Sync now", true, None::<&str>)?,
            &PredefinedMenuItem::separator(app)?,
            &MenuItem::with_id(app, "quit", "Quit Callsign", true, None::<&str>)?,
        ],
    )?;
    TrayIconBuilder::with_id(ID)
        .icon(Image::from_bytes(first.icon())?)
        .tooltip(tooltip(first))
        .menu(&menu)
        .on_menu_event(|app, event| {
            if let Some(action) = Action::parse(event.id().as_ref()) {
                act(app, action);
            }
        })
        .build(app)?;
    *app.state::<TrayState<R>>()
        .status_line
        .lock()
        .expect("tray lock") = Some(status_line);
    show(app, first);
    Ok(())
}

fn tooltip(look: Look) -> String {
    format!("Callsign: {}", look.text())
}

/// Shows `look` on the tray (when there is one) and remembers it.
pub fn show<R: Runtime>(app: &AppHandle<R>, look: Look) {
    let state = app.state::<TrayState<R>>();
    let tray = app.tray_by_id(ID);
    let unchanged = state
        .shown
        .lock()
        .expect("tray lock")
        .as_ref()
        .is_some_and(|s| s.look == look && s.installed == tray.is_some());
    if unchanged {
        return; // a status event follows every write: most change nothing here
    }
    if let Some(tray) = &tray {
        let set = Image::from_bytes(look.icon())
            .and_then(|icon| tray.set_icon(Some(icon)))
            .and_then(|()| tray.set_tooltip(Some(tooltip(look))));
        if let Err(e) = set {
            tracing::warn!("the tray icon could not be updated: {e}");
        }
    }
    if let Some(line) = state.status_line.lock().expect("tray lock").as_ref() {
        let _ = line.set_text(look.text());
    }
    *state.shown.lock().expect("tray lock") = Some(Shown {
        look,
        tooltip: tooltip(look),
        installed: tray.is_some(),
    });
}

/// Does what the menu item says. Sync runs in the background; its outcome reaches the tray
/// (and the window) as the engine's status events.
pub fn act<R: Runtime>(app: &AppHandle<R>, action: Action) {
    match action {
        Action::Capture => {
            if let Err(e) = crate::capture::open(app) {
                tracing::warn!("quick capture could not open: {e}");
            }
        }
        Action::Open => crate::capture::show_main(app),
        Action::Sync => {
            let engine = app.state::<AppEngine>().0.clone();
            tauri::async_runtime::spawn(async move {
                if let Err(e) = engine.sync_now().await {
                    tracing::info!("sync from the tray: {e}");
                }
            });
        }
        Action::Quit => app.exit(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(online: Option<bool>, pending: u64, in_flight: u64, failed: u64) -> SyncStatus {
        SyncStatus {
            online,
            pending,
            in_flight,
            failed,
            ..SyncStatus::default()
        }
    }

    #[test]
    fn the_tray_says_what_needs_the_user_first() {
        let cases = [
            (
                status(None, 0, 0, 0),
                false,
                Look::LocalOnly,
                "Local only: no server set",
            ),
            (
                status(None, 3, 0, 0),
                false,
                Look::LocalOnly,
                "Local only: no server set",
            ),
            (status(Some(true), 0, 0, 0), true, Look::Synced, "Synced"),
            (status(None, 0, 0, 0), true, Look::Synced, "Synced"),
            (
                status(Some(true), 2, 1, 0),
                true,
                Look::Pending(3),
                "3 pending",
            ),
            (
                status(Some(false), 0, 0, 0),
                true,
                Look::Offline(0),
                "Offline",
            ),
            (
                status(Some(false), 1, 0, 0),
                true,
                Look::Offline(1),
                "Offline: 1 task waiting",
            ),
            (
                status(Some(false), 12, 0, 0),
                true,
                Look::Offline(12),
                "Offline: 12 tasks waiting",
            ),
            (
                status(Some(false), 12, 0, 2),
                true,
                Look::Failed(2),
                "2 failed: open Callsign to fix",
            ),
            (
                status(None, 0, 0, 1),
                false,
                Look::Failed(1),
                "1 failed: open Callsign to fix",
            ),
        ];
        for (s, configured, want, text) in cases {
            let got = look(&s, configured);
            assert_eq!(got, want, "{s:?} configured={configured}");
            assert_eq!(got.text(), text);
            assert!(
                Image::from_bytes(got.icon()).is_ok(),
                "{got:?}'s icon decodes"
            );
        }
    }

    #[test]
    fn menu_ids_name_their_actions() {
        for (id, a) in [
            ("capture", Action::Capture),
            ("open", Action::Open),
            ("sync", Action::Sync),
            ("quit", Action::Quit),
        ] {
            assert_eq!(Action::parse(id), Some(a));
        }
        assert_eq!(Action::parse("status"), None);
    }
}
