//! `callsign-server token`: another device token for a member.
use anyhow::bail;
use callsign_core::MemberName;
use clap::Subcommand;

use crate::admin::{first_owner, open_alloc};
use crate::args::{parse_member, DatabaseArg};

#[derive(Subcommand)]
pub enum TokenCmd {
    /// Create another token for a member's device; prints JSON `{token}`.
    Create {
        #[command(flatten)]
        database: DatabaseArg,
        #[arg(long)]
        account: i64,
        #[arg(long)]
        device: String,
        /// Whose token (default: the account's first owner).
        #[arg(long, value_parser = parse_member)]
        member: Option<MemberName>,
    },
}

pub async fn run(cmd: TokenCmd) -> anyhow::Result<()> {
    let TokenCmd::Create {
        database,
        account,
        device,
        member,
    } = cmd;
    let alloc = open_alloc(&database.get()?).await?;
    let member = match member {
        Some(m) => m,
        None => first_owner(&*alloc, account).await?,
    };
    let token = alloc.create_token(account, &member, &device).await?;
    match token {
        Some(token) => println!("{}", serde_json::json!({ "token": token })),
        None => bail!("account {account} has no member {member}"),
    }
    Ok(())
}
