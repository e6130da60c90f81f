//! `callsign-server`: parses the command line (DESIGN.md section 5) and runs the server.
//! Each command runs in a module of its own.
mod account;
mod admin;
mod args;
mod backup;
mod member;
mod project;
mod recovery;
mod serve;
mod token;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "callsign-server",
    version,
    about = "Callsign sync server: tasks with keys like SYN-42"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve the HTTP API.
    Serve(Box<serve::ServeArgs>),
    /// Manage accounts.
    Account {
        #[command(subcommand)]
        cmd: account::AccountCmd,
    },
    /// Manage a team's members (each with their own tokens).
    Member {
        #[command(subcommand)]
        cmd: member::MemberCmd,
    },
    /// Manage device tokens.
    Token {
        #[command(subcommand)]
        cmd: token::TokenCmd,
    },
    /// Manage projects.
    Project {
        #[command(subcommand)]
        cmd: project::ProjectCmd,
    },
    /// Copy a SQLite data dir, consistently, while the server runs.
    Backup(backup::BackupArgs),
    /// Put a backup in place (the server stopped); every project then recovers first.
    Restore(backup::RestoreArgs),
    /// After a rollback: the projects that number nothing until the devices have checked in.
    Recovery {
        #[command(subcommand)]
        cmd: recovery::RecoveryCmd,
    },
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell) to stdout.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().cmd {
        Cmd::Completions { shell } => {
            use clap::CommandFactory;
            use std::io::Write;
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "callsign-server", &mut script);
            // A closed pipe (`| head`) is not an error worth a message.
            let _ = std::io::stdout().write_all(&script);
            Ok(())
        }
        Cmd::Serve(args) => serve::run(*args).await,
        Cmd::Account { cmd } => account::run(cmd).await,
        Cmd::Member { cmd } => member::run(cmd).await,
        Cmd::Token { cmd } => token::run(cmd).await,
        Cmd::Project { cmd } => project::run(cmd).await,
        Cmd::Backup(args) => backup::run_backup(args),
        Cmd::Restore(args) => backup::run_restore(args),
        Cmd::Recovery { cmd } => recovery::run(cmd).await,
    }
}
