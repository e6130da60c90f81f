//! A device's `callsign` CLI processes: one-shot commands, and the background sync process
//! (`watch` or `sync`) the campaign starts and SIGKILLs.
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use anyhow::{bail, Result};

use crate::bins::cli_bin;

/// The `callsign` CLI on one device's data dir.
pub struct Device {
    pub name: String,
    pub dir: PathBuf,
    proc: Option<(Child, &'static str)>,
}

impl Device {
    pub fn new(name: &str, dir: &Path) -> Device {
        Device {
            name: name.to_owned(),
            dir: dir.to_owned(),
            proc: None,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(cli_bin());
        c.args(args)
            .env("CALLSIGN_DATA_DIR", &self.dir)
            .env_remove("CALLSIGN_LOG")
            .stdin(Stdio::null());
        c
    }

    /// Runs a command to its end (bounded by the CLI's own `--timeout` where it has one).
    pub fn run(&self, args: &[&str]) -> Result<ExitStatus> {
        let out = self.command(args).output()?;
        Ok(out.status)
    }

    pub fn login(&self, url: &str, token: &str) -> Result<()> {
        let out = self
            .command(&["login", "--server", url, "--token", token])
            .output()?;
        if !out.status.success() {
            bail!("login failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(())
    }

    /// Starts a background sync process: `watch` (the app's loop) or a one-shot `sync`.
    pub fn spawn(&mut self, watch: bool) -> Result<()> {
        self.reap();
        if self.proc.is_some() {
            return Ok(());
        }
        let (args, kind): (&[&str], _) = if watch {
            (&["watch"], "watch")
        } else {
            (&["sync", "--timeout", "5"], "sync")
        };
        let child = self
            .command(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        self.proc = Some((child, kind));
        Ok(())
    }

    /// Forgets a process that has ended by itself.
    pub fn reap(&mut self) {
        if let Some((c, _)) = self.proc.as_mut() {
            if matches!(c.try_wait(), Ok(Some(_))) {
                self.proc = None;
            }
        }
    }

    pub fn busy(&mut self) -> bool {
        self.reap();
        self.proc.is_some()
    }

    /// SIGKILLs the sync process; returns its kind if one was running.
    pub fn kill(&mut self) -> Option<&'static str> {
        self.reap();
        let (mut c, kind) = self.proc.take()?;
        let _ = c.kill();
        let _ = c.wait();
        Some(kind)
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        self.kill();
    }
}
