//! Accounts, device tokens and projects.
use rusqlite::{params, Connection, OptionalExtension};

use callsign_core::dto::{Member, Project};
use callsign_core::{MemberName, Prefix, Role};

use super::members::MemberId;
use super::{now_ms, Result};
pub use callsign_storage::rows::{hash_token, new_token, AccountId, NewAccount};

pub fn create_account(
    conn: &Connection,
    name: &str,
    prefix: &Prefix,
    project_name: &str,
    owner: &MemberName,
) -> Result<NewAccount> {
    let now = now_ms();
    conn.execute(
        "INSERT INTO accounts (name, created_at) VALUES (?1, ?2)",
        params![name, now],
    )?;
    let account_id = conn.last_insert_rowid();
    let member = super::members::insert_member(conn, account_id, owner, Role::Owner, now)?
        .expect("a new account has no members, so the name is free");
    let token = create_token(conn, account_id, member, "default")?;
    let project = create_project(conn, account_id, project_name, prefix)?
        .expect("a new account has no projects, so the prefix is free");
    Ok(NewAccount {
        account_id,
        token,
        project,
        member: Member {
            name: owner.to_string(),
            role: Role::Owner,
        },
    })
}

pub fn account_exists(conn: &Connection, account: AccountId) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM accounts WHERE id = ?1",
            [account],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// A new token for one of the account's members.
pub fn create_token(
    conn: &Connection,
    account: AccountId,
    member: MemberId,
    device: &str,
) -> Result<String> {
    let token = new_token();
    conn.execute(
        "INSERT INTO tokens (account_id, member_id, token_hash, device, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![account, member, hash_token(&token), device, now_ms()],
    )?;
    Ok(token)
}

/// Creates a project; `None` when the prefix is one of the account's projects has or ever had
/// (a prefix names one project forever: its old keys still resolve), or one that keys of
/// imported tasks have (`ENG-4` imported into OPS). Its `id` on the wire
/// is its number within the account (1, 2, ...), not the row id, so an account cannot count
/// the projects of others.
pub fn create_project(
    conn: &Connection,
    account: AccountId,
    name: &str,
    prefix: &Prefix,
) -> Result<Option<Project>> {
    let now = now_ms();
    let made: Option<(i64, i64)> = conn
        .query_row(
            "INSERT INTO projects (account_id, name, prefix, created_at, number)
             SELECT ?1, ?2, ?3, ?4,
                    (SELECT COALESCE(MAX(number), 0) + 1 FROM projects WHERE account_id = ?1)
             WHERE NOT EXISTS (SELECT 1 FROM prefixes WHERE account_id = ?1 AND prefix = ?3)
               AND NOT EXISTS (SELECT 1 FROM origins WHERE account_id = ?1 AND prefix = ?3)
             ON CONFLICT (account_id, prefix) DO NOTHING
             RETURNING id, number",
            params![account, name, prefix.as_str(), now],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((id, number)) = made else {
        return Ok(None);
    };
    super::renames::record_prefix(conn, account, id, 0, prefix.as_str(), now)?;
    Ok(Some(Project {
        id: number,
        name: name.to_owned(),
        prefix: prefix.to_string(),
        previous_prefixes: Vec::new(),
    }))
}

/// The account's projects by prefix, each with the prefixes it had before, oldest first.
pub fn list_projects(conn: &Connection, account: AccountId) -> Result<Vec<Project>> {
    let mut st = conn.prepare_cached(
        "SELECT number, name, prefix, id FROM projects WHERE account_id = ?1 ORDER BY prefix",
    )?;
    let rows = st.query_map([account], |r| {
        Ok(((r.get(0)?, r.get(3)?), r.get(1)?, r.get(2)?))
    })?;
    let rows: Vec<((i64, i64), String, String)> = rows.collect::<rusqlite::Result<_>>()?;
    let earlier = super::renames::earlier_prefixes(conn, account)?;
    Ok(rows
        .into_iter()
        .map(|(ids, name, prefix)| super::renames::project(ids, name, prefix, &earlier))
        .collect())
}

/// The project a prefix names: its current one or one it had before (a create or move that
/// names an old prefix goes to the project that had it).
pub fn project_by_prefix(
    conn: &Connection,
    account: AccountId,
    prefix: &Prefix,
) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT project_id FROM prefixes WHERE account_id = ?1 AND prefix = ?2")?
        .query_row(params![account, prefix.as_str()], |r| r.get(0))
        .optional()?)
}
