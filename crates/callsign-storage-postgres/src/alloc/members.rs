//! Members and their tokens on PostgreSQL: SQLite's `callsign_storage_sqlite::alloc::members`.
//! Removing an owner locks the account's current owners first, so two removals at once cannot
//! leave the team with none. A removal also sends `NOTIFY callsign_members` in its transaction,
//! so every node's `crate::listen` connection hears it when it commits and stops trusting the
//! tokens it has cached.
use callsign_core::{MemberName, Role};
use deadpool_postgres::{GenericClient, Transaction};
use tokio_postgres::Row;

use crate::error::{DbError, Result};
use callsign_storage::rows::{hash_token, new_token};
use callsign_storage::rows::{invite_refusal as refusal, name_of, role_of, MemberId};
use callsign_storage::{
    AccountId, AddMember, Caller, MemberRow, NewInvite, NewMember, Redeem, RemoveMember,
};

fn stored<T>(r: std::result::Result<T, String>) -> Result<T> {
    r.map_err(DbError::Corrupt)
}

pub(super) async fn insert_member(
    tx: &Transaction<'_>,
    account: AccountId,
    name: &MemberName,
    role: Role,
    now: i64,
) -> Result<Option<MemberId>> {
    Ok(tx
        .query_opt(
            "INSERT INTO members (account_id, name, role, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (account_id, name) DO NOTHING RETURNING id",
            &[&account, &name.as_str(), &role.as_str(), &now],
        )
        .await?
        .map(|r| r.get(0)))
}

pub(super) async fn insert_token(
    tx: &impl GenericClient,
    account: AccountId,
    member: MemberId,
    device: &str,
    now: i64,
) -> Result<String> {
    let token = new_token();
    tx.execute(
        "INSERT INTO tokens (account_id, member_id, token_hash, device, created_at)
         VALUES ($1, $2, $3, $4, $5)",
        &[&account, &member, &hash_token(&token), &device, &now],
    )
    .await?;
    Ok(token)
}

pub(super) async fn current_member(
    c: &impl GenericClient,
    account: AccountId,
    name: &MemberName,
) -> Result<Option<(MemberId, Role)>> {
    let row = c
        .query_opt(
            "SELECT id, role FROM members
             WHERE account_id = $1 AND name = $2 AND removed_at IS NULL",
            &[&account, &name.as_str()],
        )
        .await?;
    row.map(|r| Ok((r.get(0), stored(role_of(r.get(1)))?)))
        .transpose()
}

pub(super) async fn add_member(
    tx: &Transaction<'_>,
    account: AccountId,
    name: &MemberName,
    role: Role,
    device: &str,
    now: i64,
) -> Result<AddMember> {
    let exists = tx
        .query_opt("SELECT 1 FROM accounts WHERE id = $1", &[&account])
        .await?
        .is_some();
    if !exists {
        return Ok(AddMember::NoAccount);
    }
    let Some(member_id) = insert_member(tx, account, name, role, now).await? else {
        return Ok(AddMember::Taken);
    };
    let token = insert_token(tx, account, member_id, device, now).await?;
    Ok(AddMember::Added(NewMember {
        account_id: account,
        member_id,
        name: name.clone(),
        role,
        token,
    }))
}

pub(super) async fn caller_by_token_hash(
    c: &impl GenericClient,
    hash: &[u8],
) -> Result<Option<Caller>> {
    let st = c
        .prepare_cached(
            "SELECT t.account_id, m.id, m.name, m.role, t.last_seen_at FROM tokens t
             JOIN members m ON m.id = t.member_id
             WHERE t.token_hash = $1 AND m.removed_at IS NULL",
        )
        .await?;
    let row = c.query_opt(&st, &[&hash]).await?;
    row.map(|r| {
        Ok(Caller {
            account: r.get(0),
            member: r.get(1),
            name: stored(name_of(r.get(2)))?,
            role: stored(role_of(r.get(3)))?,
            last_seen_at: r.get(4),
        })
    })
    .transpose()
}

fn member_row(r: &Row) -> Result<MemberRow> {
    Ok(MemberRow {
        name: stored(name_of(r.get(0)))?,
        role: stored(role_of(r.get(1)))?,
        created_at: r.get(2),
        removed_at: r.get(3),
        tokens: r.get(4),
    })
}

pub(super) async fn list_members(
    c: &impl GenericClient,
    account: AccountId,
) -> Result<Option<Vec<MemberRow>>> {
    let exists = c
        .query_opt("SELECT 1 FROM accounts WHERE id = $1", &[&account])
        .await?
        .is_some();
    if !exists {
        return Ok(None);
    }
    let rows = c
        .query(
            "SELECT m.name, m.role, m.created_at, m.removed_at,
                    (SELECT COUNT(*) FROM tokens t WHERE t.member_id = m.id)
             FROM members m WHERE m.account_id = $1
             ORDER BY m.removed_at IS NOT NULL, m.name",
            &[&account],
        )
        .await?;
    rows.iter().map(member_row).collect::<Result<_>>().map(Some)
}

pub(super) async fn remove_member(
    tx: &Transaction<'_>,
    account: AccountId,
    name: &MemberName,
    now: i64,
) -> Result<RemoveMember> {
    // Lock the current owners (in id order) before deciding, so the last one stays.
    let owners = tx
        .query(
            "SELECT id FROM members
             WHERE account_id = $1 AND role = 'owner' AND removed_at IS NULL
             ORDER BY id FOR UPDATE",
            &[&account],
        )
        .await?;
    let Some((id, role)) = current_member(tx, account, name).await? else {
        return Ok(RemoveMember::NotFound);
    };
    if role == Role::Owner && owners.len() <= 1 {
        return Ok(RemoveMember::LastOwner);
    }
    tx.execute(
        "UPDATE members SET removed_at = $2 WHERE id = $1",
        &[&id, &now],
    )
    .await?;
    let tokens = tx
        .execute("DELETE FROM tokens WHERE member_id = $1", &[&id])
        .await?;
    // Heard by every node when this commits: each drops the tokens it has cached.
    tx.execute(
        "SELECT pg_notify($1, $2)",
        &[&crate::listen::MEMBERS, &account.to_string()],
    )
    .await?;
    Ok(RemoveMember::Removed { tokens })
}

pub(super) async fn create_invite(c: &impl GenericClient, inv: &NewInvite) -> Result<()> {
    c.execute(
        "INSERT INTO invites (account_id, code_hash, role, made_by, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            &inv.account,
            &inv.code_hash,
            &inv.role.as_str(),
            &inv.made_by,
            &inv.now,
            &inv.expires_at,
        ],
    )
    .await?;
    Ok(())
}

/// SQLite's `redeem_invite`, with the invite's row locked so two redemptions at once make one
/// member.
pub(super) async fn redeem_invite(
    tx: &Transaction<'_>,
    code_hash: &[u8],
    name: &MemberName,
    device: &str,
    now: i64,
) -> Result<Redeem> {
    let found = tx
        .query_opt(
            "SELECT id, account_id, role, expires_at, used_at FROM invites
             WHERE code_hash = $1 FOR UPDATE",
            &[&code_hash],
        )
        .await?;
    let Some(r) = found else {
        return Ok(Redeem::NotFound);
    };
    let (id, account, expires_at, used_at): (i64, AccountId, i64, Option<i64>) =
        (r.get(0), r.get(1), r.get(3), r.get(4));
    let role = stored(role_of(r.get(2)))?;
    if let Some(no) = refusal(used_at, expires_at, now) {
        return Ok(no);
    }
    let Some(member_id) = insert_member(tx, account, name, role, now).await? else {
        return Ok(Redeem::Taken);
    };
    tx.execute(
        "UPDATE invites SET used_at = $2, used_by = $3 WHERE id = $1",
        &[&id, &now, &member_id],
    )
    .await?;
    let token = insert_token(tx, account, member_id, device, now).await?;
    Ok(Redeem::Joined(NewMember {
        account_id: account,
        member_id,
        name: name.clone(),
        role,
        token,
    }))
}
