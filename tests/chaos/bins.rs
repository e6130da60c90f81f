//! The binaries a campaign runs: `callsign-server` (built with `fault-injection`) and the
//! `callsign` CLI, found in the target profile dir of the running executable and built there
//! first if needed (cargo builds a package's own binaries, not other packages').
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// `target/<profile>/`, whether we run as a test (`target/<profile>/deps/x`) or a bin.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("executable path");
    let dir = exe.parent().expect("executable dir");
    if dir.ends_with("deps") {
        dir.parent().expect("profile dir").to_owned()
    } else {
        dir.to_owned()
    }
}

pub fn server_bin() -> PathBuf {
    ensure_built();
    profile_dir().join("callsign-server")
}

pub fn cli_bin() -> PathBuf {
    ensure_built();
    profile_dir().join("callsign")
}

/// Runs `cargo build` for the server (with `fault-injection`) and the CLI into this
/// executable's target dir and profile, once per process; an up-to-date build is a no-op.
/// `CALLSIGN_CHAOS_PREBUILT=1` skips it (binaries copied beside the executable for a long run).
fn ensure_built() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        if std::env::var_os("CALLSIGN_CHAOS_PREBUILT").is_some() {
            return;
        }
        let profile = profile_dir();
        let target_dir = profile.parent().expect("target dir");
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("workspace root");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(workspace)
            .args([
                "build",
                "--quiet",
                "-p",
                "callsign-cli",
                "-p",
                "callsign-server",
            ])
            .args([
                "--features",
                "callsign-server/fault-injection",
                "--target-dir",
            ])
            .arg(target_dir);
        if profile.ends_with("release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("running cargo build for the binaries");
        assert!(
            status.success(),
            "cargo build of callsign-server and callsign failed"
        );
    });
}
