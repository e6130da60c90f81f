//! `callsign-server recovery`: which projects number nothing until their recovery ends, and
//! starting or ending it by hand (docs/RECOVERY.md).
use anyhow::Context;
use callsign_core::Prefix;
use callsign_storage::{now_ms, RecoveringRow, RecoveryReason};
use clap::Subcommand;

use crate::admin::open_alloc;
use crate::args::DatabaseArg;
use crate::backup::millis_to_rfc3339;

#[derive(Subcommand)]
pub enum RecoveryCmd {
    /// The projects recovering (with their counters), the devices each recovery still waits
    /// for, and what recovery could not bring back (lost numbers, clashes); prints JSON.
    Status {
        #[command(flatten)]
        database: DatabaseArg,
        /// The devices waited for: those seen in this period before the backup (as the
        /// server's --recovery-active).
        #[arg(long, default_value = "30d", value_parser = humantime::parse_duration)]
        recovery_active: std::time::Duration,
    },
    /// Declare a rollback (a database restored outside `callsign-server restore`, a
    /// PostgreSQL failover): every project (of --account) numbers nothing until its
    /// recovery ends.
    Start {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: Option<i64>,
    },
    /// End recovery: numbering resumes after each counter. A number handed out before the
    /// rollback that no device brought back may then be handed out again; end it only when the
    /// team's devices have synced.
    End {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: Option<i64>,
        /// Only this project of --account.
        #[arg(long, requires = "account")]
        project: Option<String>,
    },
}

pub async fn run(cmd: RecoveryCmd) -> anyhow::Result<()> {
    let (rows, verb) = match cmd {
        RecoveryCmd::Status {
            database,
            recovery_active,
        } => return status(database, recovery_active).await,
        RecoveryCmd::Start { database, account } => {
            let alloc = open_alloc(&database.get()?).await?;
            let rows = alloc
                .start_recovery(account, RecoveryReason::Declared, now_ms())
                .await?;
            (rows, "recovering")
        }
        RecoveryCmd::End {
            database,
            account,
            project,
        } => {
            let project = project
                .map(|p| Prefix::parse(p.trim()))
                .transpose()
                .context("--project")?;
            let alloc = open_alloc(&database.get()?).await?;
            let rows = alloc.end_recovery(account, project.as_ref()).await?;
            (rows, "recovery ended")
        }
    };
    report(&rows, verb);
    println!("{}", serde_json::to_string(&rows)?);
    Ok(())
}

/// One line per project on stderr, for the admin reading the terminal.
fn report(rows: &[RecoveringRow], verb: &str) {
    if rows.is_empty() {
        eprintln!("no project {verb}");
    }
    for r in rows {
        eprintln!(
            "account {} project {}: {verb} (since {}, {}; numbers handed out up to {})",
            r.account,
            r.prefix,
            millis_to_rfc3339(r.since),
            r.reason.as_str(),
            r.last
        );
    }
}

/// `recovery status`: what recovers, whom it waits for, and what it could not bring back.
async fn status(database: DatabaseArg, active: std::time::Duration) -> anyhow::Result<()> {
    let alloc = open_alloc(&database.get()?).await?;
    let rows = alloc.recovering().await?;
    report(&rows, "recovering");
    let mut waiting = Vec::new();
    if let Some(rollback) = alloc.last_rollback().await? {
        let taken = rollback.taken_at.unwrap_or(rollback.at);
        let since = taken.saturating_sub(active.as_millis() as i64);
        let mut accounts: Vec<i64> = rows.iter().map(|r| r.account).collect();
        accounts.dedup();
        for account in accounts {
            for d in alloc.unwitnessed(account, since, rollback.at).await? {
                eprintln!(
                    "account {}: waiting for {}'s device {:?} (last seen {})",
                    d.account,
                    d.member,
                    d.device,
                    d.last_seen_at
                        .map_or_else(|| "never".to_owned(), millis_to_rfc3339)
                );
                waiting.push(d);
            }
        }
    }
    let lost = alloc.recovery_report(None).await?;
    if !lost.lost.is_empty() {
        let keys: Vec<&str> = lost.lost.iter().map(|l| l.key.as_str()).collect();
        eprintln!(
            "lost (handed out before a rollback, brought back by no device, never handed out \
             again): {}",
            keys.join(" ")
        );
    }
    for c in &lost.clashes {
        eprintln!(
            "clash: {} stays with task {}; task {} was told it too and is numbered anew",
            c.key, c.held_by, c.claimed_by
        );
    }
    let out = serde_json::json!({
        "recovering": rows,
        "waiting_for": waiting,
        "lost": lost.lost,
        "clashes": lost.clashes,
    });
    println!("{out}");
    Ok(())
}
