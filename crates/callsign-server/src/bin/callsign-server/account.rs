//! `callsign-server account`: make a team, link it to Taskwarrior.
use anyhow::{bail, Context};
use callsign_core::{MemberName, Prefix};
use callsign_server::taskwarrior::envelope::ServerKey;
use clap::Subcommand;

use crate::admin::open_alloc;
use crate::args::{parse_member, DatabaseArg};
use crate::serve::read_key_file;

#[derive(Subcommand)]
pub enum AccountCmd {
    /// Create an account (a team) with its first project and its first member, an owner,
    /// and a token of theirs; prints JSON.
    Create {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        name: String,
        /// The first project's key prefix (2-10 characters, a letter first).
        #[arg(long)]
        prefix: String,
        /// The first project's name (default: the prefix).
        #[arg(long)]
        project_name: Option<String>,
        /// The first member's name (an owner).
        #[arg(long, default_value = "owner", value_parser = parse_member)]
        owner: MemberName,
    },
    /// Link an account to Taskwarrior 3: makes a new TaskChampion client id and encryption
    /// secret and prints them once as JSON (a new link replaces the old one). The secret is
    /// kept sealed under the server key, made in --taskwarrior-key-file if that file does not
    /// exist yet. Works while the server runs.
    Taskwarrior {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
        #[arg(long, env = "CALLSIGN_TASKWARRIOR_KEY_FILE")]
        taskwarrior_key_file: std::path::PathBuf,
    },
}

pub async fn run(cmd: AccountCmd) -> anyhow::Result<()> {
    match cmd {
        AccountCmd::Create {
            database,
            name,
            prefix,
            project_name,
            owner,
        } => {
            let prefix = Prefix::parse(prefix.trim())?;
            if prefix.is_local() {
                bail!("{}", callsign_server::api::projects::RESERVED);
            }
            let project_name = project_name.unwrap_or_else(|| prefix.to_string());
            let alloc = open_alloc(&database.get()?).await?;
            let made = alloc
                .create_account(&name, &prefix, &project_name, &owner)
                .await?;
            println!("{}", serde_json::to_string(&made)?);
        }
        AccountCmd::Taskwarrior {
            database,
            account,
            taskwarrior_key_file,
        } => {
            let database = database.get()?;
            let alloc = open_alloc(&database).await?;
            if !alloc.account_ids().await?.contains(&account) {
                bail!("no account {account}");
            }
            if !taskwarrior_key_file.exists() {
                write_key_file(&taskwarrior_key_file)?;
                eprintln!(
                    "made a new server key in {} (start the server with \
                 --taskwarrior-key-file {0}; keep a copy: without it no linked \
                 Taskwarrior can sync)",
                    taskwarrior_key_file.display()
                );
            }
            let key = ServerKey::parse(&read_key_file(&taskwarrior_key_file)?)
                .with_context(|| taskwarrior_key_file.display().to_string())?;
            let tw = callsign_server::open_taskwarrior(&database, key).await?;
            let made = tw.link(account).await?;
            println!("{}", serde_json::to_string(&made)?);
            eprintln!(
                "In Taskwarrior 3 (shown once; docs/TASKWARRIOR.md):\n  \
             task config sync.server.url http://HOST:PORT\n  \
             task config sync.server.client_id {}\n  \
             task config sync.encryption_secret {}",
                made.client_id, made.encryption_secret
            );
        }
    }
    Ok(())
}

/// Writes a new server key to `path`, readable by its owner only, never over an existing file.
fn write_key_file(path: &std::path::Path) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    writeln!(f, "{}", ServerKey::generate()?)?;
    f.sync_all()?;
    Ok(())
}
