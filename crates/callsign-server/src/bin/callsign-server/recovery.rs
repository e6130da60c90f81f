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
    /// List the projects recovering, with their counters; prints JSON.
    Status {
        #[command(flatten)]
        database: DatabaseArg,
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
        RecoveryCmd::Status { database } => {
            let alloc = open_alloc(&database.get()?).await?;
            (alloc.recovering().await?, "recovering")
        }
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
