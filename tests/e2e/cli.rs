//! The `callsign` CLI as a fixture: commands on one data dir, JSON in and out, and the small
//! polling and listing helpers the scenarios share.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use serde_json::Value;

use crate::fixture::cli_bin;

/// The `callsign` CLI on one data dir.
pub struct Cli {
    pub dir: PathBuf,
}

impl Cli {
    pub fn new(dir: &Path) -> Cli {
        Cli {
            dir: dir.to_owned(),
        }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(cli_bin());
        c.args(args)
            .env("CALLSIGN_DATA_DIR", &self.dir)
            .env_remove("CALLSIGN_LOG")
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE");
        c
    }

    pub fn output(&self, args: &[&str]) -> Result<Output> {
        Ok(self.command(args).output()?)
    }

    /// Runs a command that must succeed; returns stdout.
    pub fn ok(&self, args: &[&str]) -> Result<String> {
        let out = self.output(args)?;
        if !out.status.success() {
            bail!(
                "callsign {args:?} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8(out.stdout)?)
    }

    pub fn json(&self, args: &[&str]) -> Result<Value> {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        Ok(serde_json::from_str(&self.ok(&all)?)?)
    }

    pub fn login(&self, url: &str, token: &str) -> Result<()> {
        self.ok(&["login", "--server", url, "--token", token])?;
        Ok(())
    }

    /// Adds a task; returns its UUID.
    pub fn add(&self, text: &str, extra: &[&str]) -> Result<String> {
        let mut args = vec!["add", text];
        args.extend_from_slice(extra);
        let v = self.json(&args)?;
        Ok(v["uuid"]
            .as_str()
            .ok_or_else(|| anyhow!("no uuid in {v}"))?
            .to_owned())
    }

    /// `list --all --json`.
    pub fn list(&self) -> Result<Vec<Value>> {
        match self.json(&["list", "--all"])? {
            Value::Array(v) => Ok(v),
            other => bail!("list is not an array: {other}"),
        }
    }
}

/// Polls `cond` every 50 ms until it holds or `limit` passes.
pub fn wait_for(limit: Duration, what: &str, mut cond: impl FnMut() -> Result<bool>) -> Result<()> {
    let end = std::time::Instant::now() + limit;
    loop {
        if cond()? {
            return Ok(());
        }
        if std::time::Instant::now() > end {
            bail!("timed out after {limit:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `(uuid, key)` of every listed task, failing if any task has no key.
pub fn keyed(list: &[Value]) -> Result<Vec<(String, String)>> {
    list.iter()
        .map(|t| {
            let key = t["key"]
                .as_str()
                .ok_or_else(|| anyhow!("task without key: {t}"))?;
            Ok((
                t["uuid"].as_str().unwrap_or_default().to_owned(),
                key.to_owned(),
            ))
        })
        .collect()
}
