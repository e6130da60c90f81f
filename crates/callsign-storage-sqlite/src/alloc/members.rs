//! Members of a team (an account) and the tokens that belong to them, on SQLite.
//!
//! The types they speak are the seam's (`callsign_storage::rows`), the same on every backend.
use callsign_core::{MemberName, Role};
use rusqlite::{params, Connection, OptionalExtension};

use super::accounts::{self, AccountId};
use super::Result;
pub use callsign_storage::rows::{
    invite_refusal as refusal, name_of, role_of, AddMember, Caller, MemberId, MemberRow, NewInvite,
    NewMember, Redeem, RemoveMember, INVITE_KEPT_MS,
};

fn convert<T>(col: usize, r: std::result::Result<T, String>) -> rusqlite::Result<T> {
    r.map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(col, rusqlite::types::Type::Text, e.into())
    })
}

/// Adds a member; `None` when the account has or had one of this name.
pub fn insert_member(
    conn: &Connection,
    account: AccountId,
    name: &MemberName,
    role: Role,
    now: i64,
) -> Result<Option<MemberId>> {
    Ok(conn
        .query_row(
            "INSERT INTO members (account_id, name, role, created_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (account_id, name) DO NOTHING RETURNING id",
            params![account, name.as_str(), role.as_str(), now],
            |r| r.get(0),
        )
        .optional()?)
}

/// Adds a member with a first token, one transaction.
pub fn add_member(
    conn: &Connection,
    account: AccountId,
    name: &MemberName,
    role: Role,
    device: &str,
    now: i64,
) -> Result<AddMember> {
    if !accounts::account_exists(conn, account)? {
        return Ok(AddMember::NoAccount);
    }
    let Some(member_id) = insert_member(conn, account, name, role, now)? else {
        return Ok(AddMember::Taken);
    };
    let token = accounts::create_token(conn, account, member_id, device)?;
    Ok(AddMember::Added(NewMember {
        account_id: account,
        member_id,
        name: name.clone(),
        role,
        token,
    }))
}

/// The id of the account's current member of this name.
pub fn current_member(
    conn: &Connection,
    account: AccountId,
    name: &MemberName,
) -> Result<Option<(MemberId, Role)>> {
    Ok(conn
        .query_row(
            "SELECT id, role FROM members
             WHERE account_id = ?1 AND name = ?2 AND removed_at IS NULL",
            params![account, name.as_str()],
            |r| Ok((r.get(0)?, convert(1, role_of(&r.get::<_, String>(1)?))?)),
        )
        .optional()?)
}

/// The member a token belongs to, if the token exists and its member is current.
pub fn caller_by_token_hash(conn: &Connection, hash: &[u8]) -> Result<Option<Caller>> {
    Ok(conn
        .prepare_cached(
            "SELECT t.account_id, m.id, m.name, m.role, t.last_seen_at FROM tokens t
             JOIN members m ON m.id = t.member_id
             WHERE t.token_hash = ?1 AND m.removed_at IS NULL",
        )?
        .query_row([hash], |r| {
            Ok(Caller {
                account: r.get(0)?,
                member: r.get(1)?,
                name: convert(2, name_of(&r.get::<_, String>(2)?))?,
                role: convert(3, role_of(&r.get::<_, String>(3)?))?,
                last_seen_at: r.get(4)?,
            })
        })
        .optional()?)
}

/// Every member the account has had, current ones first, each by name; `None`: no account.
pub fn list_members(conn: &Connection, account: AccountId) -> Result<Option<Vec<MemberRow>>> {
    if !accounts::account_exists(conn, account)? {
        return Ok(None);
    }
    let mut st = conn.prepare_cached(
        "SELECT m.name, m.role, m.created_at, m.removed_at,
                (SELECT COUNT(*) FROM tokens t WHERE t.member_id = m.id)
         FROM members m WHERE m.account_id = ?1
         ORDER BY m.removed_at IS NOT NULL, m.name",
    )?;
    let rows = st.query_map([account], |r| {
        Ok(MemberRow {
            name: convert(0, name_of(&r.get::<_, String>(0)?))?,
            role: convert(1, role_of(&r.get::<_, String>(1)?))?,
            created_at: r.get(2)?,
            removed_at: r.get(3)?,
            tokens: r.get(4)?,
        })
    })?;
    Ok(Some(rows.collect::<rusqlite::Result<_>>()?))
}

/// Removes a current member: marks them removed and deletes their tokens, one transaction.
/// The team's last owner cannot be removed.
pub fn remove_member(
    conn: &Connection,
    account: AccountId,
    name: &MemberName,
    now: i64,
) -> Result<RemoveMember> {
    let Some((id, role)) = current_member(conn, account, name)? else {
        return Ok(RemoveMember::NotFound);
    };
    if role == Role::Owner {
        let owners: i64 = conn.query_row(
            "SELECT COUNT(*) FROM members
             WHERE account_id = ?1 AND role = 'owner' AND removed_at IS NULL",
            [account],
            |r| r.get(0),
        )?;
        if owners <= 1 {
            return Ok(RemoveMember::LastOwner);
        }
    }
    conn.execute(
        "UPDATE members SET removed_at = ?2 WHERE id = ?1",
        params![id, now],
    )?;
    let tokens = conn.execute("DELETE FROM tokens WHERE member_id = ?1", [id])?;
    Ok(RemoveMember::Removed {
        tokens: tokens as u64,
    })
}

pub fn create_invite(conn: &Connection, inv: &NewInvite) -> Result<()> {
    conn.execute(
        "INSERT INTO invites (account_id, code_hash, role, made_by, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            inv.account,
            inv.code_hash,
            inv.role.as_str(),
            inv.made_by,
            inv.now,
            inv.expires_at
        ],
    )?;
    Ok(())
}

/// Redeems an invite, one transaction: a new member of its account with its role, and a first
/// token; the invite is used from then on.
pub fn redeem_invite(
    conn: &Connection,
    code_hash: &[u8],
    name: &MemberName,
    device: &str,
    now: i64,
) -> Result<Redeem> {
    let found = conn
        .query_row(
            "SELECT id, account_id, role, expires_at, used_at FROM invites WHERE code_hash = ?1",
            [code_hash],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, AccountId>(1)?,
                    convert(2, role_of(&r.get::<_, String>(2)?))?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                ))
            },
        )
        .optional()?;
    let Some((id, account, role, expires_at, used_at)) = found else {
        return Ok(Redeem::NotFound);
    };
    if let Some(no) = refusal(used_at, expires_at, now) {
        return Ok(no);
    }
    let Some(member_id) = insert_member(conn, account, name, role, now)? else {
        return Ok(Redeem::Taken);
    };
    conn.execute(
        "UPDATE invites SET used_at = ?2, used_by = ?3 WHERE id = ?1",
        params![id, now, member_id],
    )?;
    let token = accounts::create_token(conn, account, member_id, device)?;
    Ok(Redeem::Joined(NewMember {
        account_id: account,
        member_id,
        name: name.clone(),
        role,
        token,
    }))
}

/// Deletes invites that expired before `before`; how many.
pub fn purge_invites(conn: &Connection, before: i64) -> Result<u64> {
    Ok(conn.execute("DELETE FROM invites WHERE expires_at < ?1", [before])? as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::accounts::hash_token;
    use crate::alloc::{migrations, open_conn};

    #[test]
    fn an_invite_is_refused_once_used_and_from_its_expiry_on() {
        assert_eq!(refusal(None, 100, 99), None);
        assert_eq!(refusal(None, 100, 100), Some(Redeem::Expired));
        assert_eq!(refusal(Some(50), 100, 99), Some(Redeem::Used));
        // Used wins over expired: the code was good once, which is what the user should hear.
        assert_eq!(refusal(Some(50), 100, 200), Some(Redeem::Used));
    }

    #[test]
    fn the_migration_gives_each_account_an_owner_who_holds_its_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = open_conn(&dir.path().join("a.sqlite3")).unwrap();
        migrations().to_version(&mut c, 11).unwrap();
        for (account, token) in [(1, "t1"), (1, "t2"), (2, "t3")] {
            c.execute(
                "INSERT OR IGNORE INTO accounts (id, name, created_at) VALUES (?1, 'a', 0)",
                [account],
            )
            .unwrap();
            c.execute(
                "INSERT INTO tokens (account_id, token_hash, device, created_at)
                 VALUES (?1, ?2, 'd', 0)",
                params![account, hash_token(token)],
            )
            .unwrap();
        }
        migrations().to_latest(&mut c).unwrap();
        for (account, token) in [(1, "t1"), (1, "t2"), (2, "t3")] {
            let caller = caller_by_token_hash(&c, &hash_token(token))
                .unwrap()
                .unwrap();
            assert_eq!(caller.account, account);
            assert_eq!((caller.name.as_str(), caller.role), ("owner", Role::Owner));
        }
        let listed = list_members(&c, 1).unwrap().unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].tokens, 2);
    }
}
