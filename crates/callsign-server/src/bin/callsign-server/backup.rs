//! `callsign-server backup` and `restore`: a consistent copy of a SQLite data dir while the
//! server runs, and putting one back with every project recovering (docs/OPERATIONS.md,
//! "Backup and restore").
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use callsign_storage::Database;
use callsign_storage_sqlite::backup;
use clap::Args;

use crate::args::DatabaseArg;

#[derive(Args)]
pub struct BackupArgs {
    #[command(flatten)]
    database: DatabaseArg,
    /// A new directory to write the backup into (it must not exist yet).
    #[arg(long)]
    to: PathBuf,
}

#[derive(Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    database: DatabaseArg,
    /// A directory `callsign-server backup` wrote.
    #[arg(long)]
    from: PathBuf,
}

/// The SQLite data dir of `database`, or why this command does not apply to it.
fn data_dir(database: DatabaseArg, what: &str) -> anyhow::Result<PathBuf> {
    match database.get()? {
        Database::Sqlite(dir) => Ok(dir),
        Database::Postgres(_) => bail!(
            "{what} is for the embedded SQLite data dir; on PostgreSQL back up with pg_dump or a \
             base backup, and after restoring one run `callsign-server recovery start` \
             (docs/OPERATIONS.md, \"Backup and restore\")"
        ),
    }
}

pub fn run_backup(args: BackupArgs) -> anyhow::Result<()> {
    let dir = data_dir(args.database, "backup")?;
    let manifest = backup::backup(&dir, &args.to, env!("CARGO_PKG_VERSION"))?;
    let bytes: u64 = manifest.files.iter().map(|f| f.bytes).sum();
    eprintln!(
        "backed up {} account(s), {} file(s), {:.1} MiB to {}",
        manifest.accounts.len(),
        manifest.files.len(),
        bytes as f64 / (1024.0 * 1024.0),
        args.to.display()
    );
    println!(
        "{}",
        serde_json::json!({
            "to": args.to,
            "taken_at": millis_to_rfc3339(manifest.taken_at),
            "accounts": manifest.accounts,
            "files": manifest.files.len(),
            "bytes": bytes,
        })
    );
    Ok(())
}

pub fn run_restore(args: RestoreArgs) -> anyhow::Result<()> {
    let dir = data_dir(args.database, "restore")?;
    let from: &Path = &args.from;
    let restored = backup::restore(from, &dir)
        .with_context(|| format!("restoring {} into {}", from.display(), dir.display()))?;
    let taken = millis_to_rfc3339(restored.manifest.taken_at);
    eprintln!(
        "restored the backup taken {taken} into {}; {} project(s) recovering: they number \
         nothing new until the team's devices have brought back the keys they hold, or until \
         `callsign-server recovery end`",
        dir.display(),
        restored.recovering.len()
    );
    if let Some(aside) = &restored.replaced {
        eprintln!(
            "what the data dir held before is in {} (delete it once the server runs well)",
            aside.display()
        );
    }
    println!(
        "{}",
        serde_json::json!({
            "data_dir": dir,
            "taken_at": taken,
            "replaced": restored.replaced,
            "recovering": restored.recovering,
        })
    );
    Ok(())
}

pub fn millis_to_rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| ms.to_string())
}
