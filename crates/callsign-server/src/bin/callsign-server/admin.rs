//! What the admin commands share: the allocation store alone, and the account's first owner.
use anyhow::Context;
use callsign_core::{MemberName, Role};
use callsign_storage::AllocStore;

pub use callsign_server::open_alloc;

/// The account's first current owner (by name), whom `token create` gives a token by default.
pub async fn first_owner(alloc: &dyn AllocStore, account: i64) -> anyhow::Result<MemberName> {
    let members = alloc
        .list_members(account)
        .await?
        .with_context(|| format!("no account {account}"))?;
    members
        .into_iter()
        .find(|m| m.role == Role::Owner && m.removed_at.is_none())
        .map(|m| m.name)
        .with_context(|| format!("account {account} has no owner"))
}
