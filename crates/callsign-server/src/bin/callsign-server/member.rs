//! `callsign-server member`: a team's members (each with their own tokens).
use anyhow::{bail, Context};
use callsign_core::MemberName;
use callsign_storage::{now_ms, AddMember, RemoveMember};
use clap::Subcommand;

use crate::admin::open_alloc;
use crate::args::{parse_member, DatabaseArg, RoleArg};

#[derive(Subcommand)]
pub enum MemberCmd {
    /// Add a member with a first token; prints JSON `{member_id, name, role, token}`.
    Add {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
        /// Their handle (1-32 characters, a letter first; `@name` in captures).
        #[arg(long, value_parser = parse_member)]
        name: MemberName,
        #[arg(long, value_enum, default_value_t = RoleArg::Member)]
        role: RoleArg,
        /// The device the first token is for.
        #[arg(long, default_value = "default")]
        device: String,
    },
    /// List the members, current ones first; prints JSON.
    List {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
    },
    /// Remove a member: their tokens stop working from their next request on, also while the
    /// server runs; the tasks they made stay and still name them.
    Remove {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
        #[arg(long, value_parser = parse_member)]
        name: MemberName,
    },
}

pub async fn run(cmd: MemberCmd) -> anyhow::Result<()> {
    match cmd {
        MemberCmd::Add {
            database,
            account,
            name,
            role,
            device,
        } => {
            let alloc = open_alloc(&database.get()?).await?;
            match alloc
                .add_member(account, &name, role.into(), &device)
                .await?
            {
                AddMember::Added(made) => println!("{}", serde_json::to_string(&made)?),
                AddMember::NoAccount => bail!("no account {account}"),
                AddMember::Taken => bail!(
                    "account {account} has or had a member {name} (a removed member's name \
                     still names the tasks they made): choose another name"
                ),
            }
        }
        MemberCmd::List { database, account } => {
            let alloc = open_alloc(&database.get()?).await?;
            let members = alloc
                .list_members(account)
                .await?
                .with_context(|| format!("no account {account}"))?;
            println!("{}", serde_json::json!({ "members": members }));
        }
        MemberCmd::Remove {
            database,
            account,
            name,
        } => {
            let database = database.get()?;
            let alloc = open_alloc(&database).await?;
            match alloc.remove_member(account, &name, now_ms()).await? {
                RemoveMember::Removed { tokens } => {
                    // A server running on this data dir stops taking their cached tokens now;
                    // on PostgreSQL every node heard the removal's NOTIFY.
                    if let Some(dir) = database.data_dir() {
                        callsign_server::api::auth::mark_revoked(dir)
                            .with_context(|| format!("telling the server in {}", dir.display()))?;
                    }
                    println!(
                        "{}",
                        serde_json::json!({ "removed": name, "tokens": tokens })
                    );
                }
                RemoveMember::NotFound => bail!("account {account} has no member {name}"),
                RemoveMember::LastOwner => bail!(
                    "{name} is the only owner of account {account}: add another owner first \
                     (member add --role owner)"
                ),
            }
        }
    }
    Ok(())
}
