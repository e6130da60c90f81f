//! The Callsign desktop app: the engine from `callsign-sync`, thin commands over it
//! ([`commands`]), and the engine's events forwarded to the UI as Tauri events
//! (`task-changed` with the task, `task-removed` with its uuid, `sync-status` with the
//! indicator's facts). The UI never polls. Around the window: the tray ([`tray`]), quick
//! capture and its global shortcut ([`capture`]), notifications ([`notify`]) and the
//! desktop's own prefs ([`prefs`]), with their commands in [`desktop`]; Settings → Import, another
//! tracker's export read in with its keys ([`import`]).
//!
//! Every command maps the engine's errors to a `{code, message}` ([`error`]); `list_tasks_page`
//! serves the list newest first in pages, so the UI paints its first screenful before the rest
//! loads. When the event forwarder falls behind the engine, it asks the UI to reload
//! (`tasks-reload`). Closing the main window quits unless the user chose to keep syncing in the
//! tray; quitting stops the sync loop (its lock released, the outbox as it is).
//!
//! The front end is `ui/` (Svelte 5 and Vite, chosen for a fast windowed list of 50,000 rows
//! where a key arriving re-renders one row, not the list; docs/UI.md). The commands are tested
//! on Tauri's mock runtime (`tests.rs`); `tests/desktop` drives the real app in WebKitGTK under
//! Xvfb through tauri-driver.
#![forbid(unsafe_code)]

pub mod capture;
pub mod commands;
pub mod desktop;
pub mod dto;
pub mod error;
pub mod import;
pub mod notify;
pub mod prefs;
#[cfg(test)]
mod tests;
pub mod tray;

use std::path::PathBuf;

use callsign_sync::{Engine, Event};
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tokio::sync::broadcast::error::RecvError;

use commands::AppEngine;
use desktop::Desktop;
use dto::{UiStatus, UiTask};
use tray::TrayState;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("no data dir: set CALLSIGN_DATA_DIR or HOME")]
    NoDataDir,
    #[error("cannot open the data dir {0}: {1}")]
    Engine(PathBuf, callsign_sync::Error),
    #[error("the window system failed: {0}")]
    Tauri(#[from] tauri::Error),
}

/// The data dir shared with the CLI: `CALLSIGN_DATA_DIR`, else the platform default.
pub fn data_dir() -> Option<PathBuf> {
    std::env::var_os("CALLSIGN_DATA_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(callsign_sync::paths::default_data_dir)
}

/// The command handler, shared by the app and the command tests.
pub fn handler<R: Runtime>() -> impl Fn(tauri::ipc::Invoke<R>) -> bool + Send + Sync + 'static {
    tauri::generate_handler![
        commands::list_tasks,
        commands::parse_filter,
        commands::create_task,
        commands::edit_task,
        commands::complete_task,
        commands::reopen_task,
        commands::delete_task,
        commands::resolve_task,
        commands::retry_task,
        commands::restore_conflict,
        commands::dismiss_conflict,
        commands::get_settings,
        commands::save_settings,
        commands::join_team,
        commands::sync_now,
        commands::sync_status,
        commands::list_projects,
        commands::list_tasks_page,
        commands::set_task_project,
        commands::discard_task,
        commands::send_inbox,
        commands::move_task,
        commands::create_project,
        commands::assign_task,
        commands::list_members,
        commands::standup,
        import::import_export,
        import::import_progress,
        desktop::get_desktop_prefs,
        desktop::save_desktop_prefs,
        desktop::open_capture,
        desktop::close_capture,
        desktop::tray_action,
        desktop::tray_status,
        desktop::notifications,
        desktop::open_task_from_notification,
    ]
}

/// Forwards engine events to the UI until the engine's channel closes. A lagging receiver
/// asks the UI to reload (`tasks-reload`). The status a task's view needs (online, logged in)
/// is the one the last `SyncStatus` event carried, not read again per task: a sync of
/// thousands of tasks sends as many `TaskChanged` events.
pub async fn forward_events<R: Runtime>(app: AppHandle<R>, engine: Engine) {
    let mut rx = engine.subscribe();
    if let Some(desktop) = app.try_state::<Desktop>() {
        desktop.prime(&engine);
    }
    let server_and_token = |engine: &Engine| -> (Option<String>, bool) {
        let url = engine.settings().ok().and_then(|s| s.server_url);
        let token = engine.has_token().unwrap_or(false);
        (url, token)
    };
    let mut status = engine.status().unwrap_or_default();
    let (url, token) = server_and_token(&engine);
    let mut logged_in = url.is_some() && token;
    loop {
        match rx.recv().await {
            Ok(Event::TaskChanged { uuid }) => {
                let Ok(task) = engine.get(&uuid.to_string()) else {
                    continue;
                };
                if let Some(desktop) = app.try_state::<Desktop>() {
                    if let Some(note) = desktop.decide(|n, p| n.task_changed(&task, p)) {
                        notify::send(&app, note);
                    }
                }
                let view = UiTask::new(task, &status, logged_in);
                let _ = app.emit("task-changed", view);
            }
            Ok(Event::TaskRemoved { uuid }) => {
                let _ = app.emit("task-removed", dto::Removed { uuid });
            }
            Ok(Event::SyncStatus(s)) => {
                let (url, token) = server_and_token(&engine);
                logged_in = url.is_some() && token;
                status = s.clone();
                tray::show(&app, tray::look(&s, logged_in));
                if let Some(desktop) = app.try_state::<Desktop>() {
                    if let Some(note) = desktop.decide(|n, p| n.status_changed(&s, p)) {
                        notify::send(&app, note);
                    }
                }
                let _ = app.emit("sync-status", UiStatus::new(s, url, token));
            }
            Err(RecvError::Lagged(_)) => {
                let _ = app.emit("tasks-reload", ());
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// The state every command and surface needs, shared by the app and the command tests.
pub fn manage<R: Runtime>(builder: tauri::Builder<R>, engine: &Engine) -> tauri::Builder<R> {
    builder
        .manage(AppEngine(engine.clone()))
        .manage(Desktop::open(engine))
        .manage(TrayState::<R>::default())
        .manage(notify::Shown::default())
}

/// Runs the app until it quits: closing the main window quits, unless the user chose to keep
/// syncing in the tray (then it hides, and the tray's Quit ends the app). The sync loop is
/// stopped (its lock released, the outbox as it is) on exit.
pub fn run() -> Result<(), StartError> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let dir = data_dir().ok_or(StartError::NoDataDir)?;
    let engine = Engine::open(&dir).map_err(|e| StartError::Engine(dir.clone(), e))?;
    let builder = tauri::Builder::default()
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_global_shortcut::Builder::new().build());
    let app = manage(builder, &engine)
        .invoke_handler(handler())
        .setup(move |app| {
            let handle = app.handle().clone();
            let first = engine.status().unwrap_or_default();
            let configured = engine.settings()?.server_url.is_some() && engine.has_token()?;
            if let Err(e) = tray::install(&handle, tray::look(&first, configured)) {
                tracing::warn!("no tray icon: {e}");
            }
            notify::install(&handle);
            let shortcut = app.state::<Desktop>().prefs().capture_shortcut;
            if let Err(e) = capture::register_shortcut(&handle, &shortcut) {
                tracing::warn!("the quick-capture shortcut is not available: {e}");
            }
            let engine = engine.clone();
            tauri::async_runtime::spawn(async move {
                engine.start();
                forward_events(handle, engine).await;
            });
            Ok(())
        })
        .on_window_event(|window, event| {
            if window.label() != capture::MAIN {
                return;
            }
            if let tauri::WindowEvent::CloseRequested { api, .. } = event {
                let app = window.app_handle();
                if app.state::<Desktop>().prefs().close_to_tray
                    && app.tray_by_id(tray::ID).is_some()
                {
                    api.prevent_close();
                    let _ = window.hide();
                } else {
                    app.exit(0);
                }
            }
        })
        .build(tauri::generate_context!())?;
    app.run(|app, event| {
        if let tauri::RunEvent::Exit = event {
            let engine = app.state::<AppEngine>().0.clone();
            tauri::async_runtime::block_on(engine.stop());
        }
    });
    Ok(())
}
