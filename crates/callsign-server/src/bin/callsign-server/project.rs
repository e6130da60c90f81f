//! `callsign-server project`: rename a project's prefix.
use anyhow::{bail, Context};
use callsign_core::Prefix;
use callsign_storage::{now_ms, Renamed};
use clap::Subcommand;

use crate::admin::open_alloc;
use crate::args::DatabaseArg;

#[derive(Subcommand)]
pub enum ProjectCmd {
    /// Rename a project's prefix (SYN-42 becomes SYX-42; every old key still finds its task);
    /// prints the project as JSON. A running server writes the new keys onto the tasks within
    /// a reaper interval.
    Rename {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
        /// The project's prefix now.
        #[arg(long)]
        from: String,
        /// Its new prefix (2-10 characters, a letter first), never one a project of the
        /// account has or had (but its own earlier ones).
        #[arg(long)]
        to: String,
    },
}

pub async fn run(cmd: ProjectCmd) -> anyhow::Result<()> {
    let ProjectCmd::Rename {
        database,
        account,
        from,
        to,
    } = cmd;
    let from = Prefix::parse(from.trim()).context("--from")?;
    let to = Prefix::parse(to.trim()).context("--to")?;
    if to.is_local() {
        bail!("{}", callsign_server::api::projects::RESERVED);
    }
    let alloc = open_alloc(&database.get()?).await?;
    let now = now_ms();
    match alloc
        .update_project(account, &from, Some(&to), None, now)
        .await?
    {
        Renamed::Done { project, .. } => println!("{}", serde_json::to_string(&project)?),
        Renamed::NotFound(Some(now)) => {
            bail!("{from} was renamed: the project is {now} now")
        }
        Renamed::NotFound(None) => bail!("account {account} has no project {from}"),
        Renamed::Taken(owner) if owner == to.as_str() => {
            bail!("account {account} already has a project {to}")
        }
        Renamed::Taken(owner) => bail!(
            "{to} was the prefix of project {owner} before a rename: its old keys still \
             name that project's tasks"
        ),
        Renamed::Imported => bail!(
            "{to} names keys that tasks imported from another tracker keep, so no project can \
             take it"
        ),
    }
    Ok(())
}
