//! The default data dir, shared by the desktop app and the CLI.
use std::path::PathBuf;

/// `$XDG_DATA_HOME/callsign`, else `~/.local/share/callsign` (Linux and other Unix);
/// `~/Library/Application Support/callsign` (macOS); `%APPDATA%\callsign` (Windows).
/// `None` if no home directory is known.
pub fn default_data_dir() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if cfg!(windows) {
        return env("APPDATA").map(|p| p.join("callsign"));
    }
    let home = env("HOME");
    if cfg!(target_os = "macos") {
        return home.map(|h| h.join("Library/Application Support/callsign"));
    }
    env("XDG_DATA_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|h| h.join(".local/share")))
        .map(|p| p.join("callsign"))
}
