// No console window on Windows release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    if let Err(e) = callsign_desktop::run() {
        eprintln!("callsign: {e}");
        std::process::exit(1);
    }
}
