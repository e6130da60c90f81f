//! Quick capture: a small always-on-top window (the UI's `?window=capture` entry) opened by
//! the global shortcut, the tray or `open_capture`, whether the main window is open, hidden or
//! minimised. The window saves through `create_task` (the task is in the local database and
//! its outbox before the window is asked to close) and closes itself with `close_capture`.
use tauri::{AppHandle, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};
use tauri_plugin_global_shortcut::{GlobalShortcut, ShortcutState};

use crate::prefs::{parse_shortcut, PrefsError};

/// The quick-capture window's label.
pub const LABEL: &str = "capture";
/// The main window's label.
pub const MAIN: &str = "main";

/// Opens quick capture, or brings it forward when it is open already.
pub fn open<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    if let Some(w) = app.get_webview_window(LABEL) {
        w.show()?;
        w.set_focus()?;
        return Ok(());
    }
    WebviewWindowBuilder::new(
        app,
        LABEL,
        WebviewUrl::App("index.html?window=capture".into()),
    )
    .title("Quick capture: Callsign")
    .inner_size(560.0, 140.0)
    .resizable(false)
    .always_on_top(true)
    .skip_taskbar(true)
    .center()
    .focused(true)
    .build()?;
    Ok(())
}

/// Closes quick capture (nothing when it is not open).
pub fn close<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    match app.get_webview_window(LABEL) {
        Some(w) => w.close(),
        None => Ok(()),
    }
}

/// Shows the main window (from the tray or a notification), un-minimised and focused.
pub fn show_main<R: Runtime>(app: &AppHandle<R>) {
    if let Some(w) = app.get_webview_window(MAIN) {
        let _ = w.show();
        let _ = w.unminimize();
        let _ = w.set_focus();
    }
}

/// Makes `shortcut` (as the user wrote it; empty: none) the one that opens quick capture,
/// replacing whatever was registered. Without the global-shortcut plugin (the command tests)
/// the shortcut is only checked. A shortcut another program holds is an error, and then no
/// shortcut is registered.
pub fn register_shortcut<R: Runtime>(app: &AppHandle<R>, shortcut: &str) -> Result<(), String> {
    let parsed = parse_shortcut(shortcut).map_err(|e: PrefsError| e.to_string())?;
    let Some(global) = app.try_state::<GlobalShortcut<R>>() else {
        return Ok(());
    };
    global.unregister_all().map_err(|e| e.to_string())?;
    let Some(parsed) = parsed else {
        return Ok(());
    };
    global
        .on_shortcut(parsed, |app, _, event| {
            if event.state == ShortcutState::Pressed {
                if let Err(e) = open(app) {
                    tracing::warn!("quick capture could not open: {e}");
                }
            }
        })
        .map_err(|e| {
            format!(
                "{} cannot be used: {e} (another program may hold it; choose another)",
                shortcut.trim()
            )
        })
}
