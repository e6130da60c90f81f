//! The desktop's own choices (tray, quick-capture shortcut, notifications), kept beside the
//! engine's data in `desktop.json`: the CLI has no use for them. A missing or unreadable file
//! gives the defaults; a save replaces the file whole (written to a temp file, then renamed).
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use tauri_plugin_global_shortcut::Shortcut;

/// The file in the data dir.
pub const FILE: &str = "desktop.json";

/// The quick-capture shortcut a new install has.
pub const DEFAULT_SHORTCUT: &str = "Ctrl+Alt+Space";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DesktopPrefs {
    /// Closing the main window hides it; the app keeps syncing in the tray until Quit.
    pub close_to_tray: bool,
    /// The global shortcut that opens quick capture (`""`: none).
    pub capture_shortcut: String,
    /// A notification when the server refuses a task (once per refusal).
    pub notify_failures: bool,
    /// A notification when a sync gives keys to a backlog of tasks captured offline.
    pub notify_keyed: bool,
}

impl Default for DesktopPrefs {
    fn default() -> Self {
        DesktopPrefs {
            close_to_tray: false,
            capture_shortcut: DEFAULT_SHORTCUT.to_owned(),
            notify_failures: true,
            notify_keyed: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PrefsError {
    #[error(
        "{input:?} is not a shortcut: write modifiers and one key joined by +, e.g. \
         Ctrl+Alt+Space or Super+Shift+N"
    )]
    Shortcut { input: String },
    #[error("a global shortcut needs Ctrl, Alt or Super: {input:?} alone would take the key from every other program")]
    NoModifier { input: String },
    #[error("cannot save the desktop settings in {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// The shortcut as the user typed it, checked: `None` for an empty one (no shortcut).
pub fn parse_shortcut(input: &str) -> Result<Option<Shortcut>, PrefsError> {
    let input = input.trim();
    if input.is_empty() {
        return Ok(None);
    }
    let shortcut = Shortcut::from_str(input).map_err(|_| PrefsError::Shortcut {
        input: input.to_owned(),
    })?;
    use tauri_plugin_global_shortcut::Modifiers;
    if !shortcut
        .mods
        .intersects(Modifiers::CONTROL | Modifiers::ALT | Modifiers::SUPER)
    {
        return Err(PrefsError::NoModifier {
            input: input.to_owned(),
        });
    }
    Ok(Some(shortcut))
}

impl DesktopPrefs {
    /// The prefs in `dir`, or the defaults when there are none or they cannot be read.
    pub fn load(dir: &Path) -> DesktopPrefs {
        let path = dir.join(FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!("{} is not valid ({e}); using the defaults", path.display());
                DesktopPrefs::default()
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => DesktopPrefs::default(),
            Err(e) => {
                tracing::warn!("cannot read {} ({e}); using the defaults", path.display());
                DesktopPrefs::default()
            }
        }
    }

    /// Checks and normalises what the user chose (the shortcut trimmed).
    pub fn checked(mut self) -> Result<DesktopPrefs, PrefsError> {
        self.capture_shortcut = self.capture_shortcut.trim().to_owned();
        parse_shortcut(&self.capture_shortcut)?;
        Ok(self)
    }

    pub fn save(&self, dir: &Path) -> Result<(), PrefsError> {
        let path = dir.join(FILE);
        let tmp = dir.join(format!("{FILE}.tmp"));
        let io = |source| PrefsError::Io {
            path: path.clone(),
            source,
        };
        let json = serde_json::to_vec_pretty(self).expect("prefs serialise");
        std::fs::write(&tmp, json).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortcuts_parse_or_say_how_to_write_them() {
        for ok in [
            "Ctrl+Alt+Space",
            "ctrl+alt+space",
            "Super+Shift+N",
            " Alt+F2 ",
        ] {
            assert!(parse_shortcut(ok).unwrap().is_some(), "{ok}");
        }
        assert!(parse_shortcut("").unwrap().is_none());
        let bad = parse_shortcut("Ctrl+Alt+Nope").unwrap_err().to_string();
        assert!(bad.contains("\"Ctrl+Alt+Nope\" is not a shortcut"), "{bad}");
        let bare = parse_shortcut("Shift+N").unwrap_err().to_string();
        assert!(bare.contains("needs Ctrl, Alt or Super"), "{bare}");
    }

    #[test]
    fn prefs_round_trip_and_a_broken_file_gives_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(DesktopPrefs::load(dir.path()), DesktopPrefs::default());
        let p = DesktopPrefs {
            close_to_tray: true,
            capture_shortcut: " Super+Shift+N ".into(),
            notify_failures: false,
            notify_keyed: true,
        }
        .checked()
        .unwrap();
        p.save(dir.path()).unwrap();
        let back = DesktopPrefs::load(dir.path());
        assert_eq!(back, p);
        assert_eq!(back.capture_shortcut, "Super+Shift+N");
        std::fs::write(dir.path().join(FILE), b"{not json").unwrap();
        assert_eq!(DesktopPrefs::load(dir.path()), DesktopPrefs::default());
    }
}
