//! Imported tasks (migration 0016, `callsign import`): the key each had in its tracker keeps
//! naming it ([`record`], [`holders`]), and a create with `keep_number` takes that key as its
//! own ([`bind_kept`]) in the transaction that commits its slot.
//!
//! G1 holds as for a witness: a kept number is bound only where no task holds it, and the
//! counter is raised past it, never lowered. The numbers the raise passes over are `skipped`,
//! not lost ([`skip_below`]): the recovery report leaves them out until one is bound.
use std::collections::HashMap;

use callsign_core::TaskKey;
use callsign_storage::Imported;
use rusqlite::{params, Connection, OptionalExtension};
use uuid::Uuid;

use super::{slots, witness, AccountId, KeyRow, Result};

/// Records `uuid` as the task its origin key names; a key another task holds already stays
/// with it (the server refused such a create before it got here, short of a race).
pub fn record(conn: &Connection, account: AccountId, uuid: Uuid, origin: &Imported) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO origins (account_id, key, task_uuid, prefix) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (account_id, key) DO NOTHING",
    )?
    .execute(params![account, origin.key, uuid, origin.prefix])?;
    Ok(())
}

/// The tasks holding these origin keys.
pub fn holders(
    conn: &Connection,
    account: AccountId,
    keys: &[String],
) -> Result<HashMap<String, Uuid>> {
    let mut st =
        conn.prepare_cached("SELECT task_uuid FROM origins WHERE account_id = ?1 AND key = ?2")?;
    let mut out = HashMap::new();
    for k in keys {
        let found: Option<Uuid> = st.query_row(params![account, k], |r| r.get(0)).optional()?;
        if let Some(u) = found {
            out.insert(k.clone(), u);
        }
    }
    Ok(out)
}

/// Whether an import's keys use `prefix` (a new project may not take it).
pub fn prefix_used(conn: &Connection, account: AccountId, prefix: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM origins WHERE account_id = ?1 AND prefix = ?2)",
        )?
        .query_row(params![account, prefix], |r| r.get(0))?)
}

/// Binds `key` as the current key of `uuid`, a task with no key yet. `None` when another task
/// holds it (a clash, recorded; the caller numbers the task from the counter instead).
pub fn bind_kept(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
    key: &TaskKey,
    now: i64,
) -> Result<Option<KeyRow>> {
    let Some(project) = slots::project_id(conn, account, key.prefix.as_str())? else {
        return Ok(None);
    };
    let last = last(conn, project, &key.scope())?;
    let bound = witness::bind_key(conn, account, uuid, &key.to_string(), now)?;
    if bound.is_some() {
        skip_below(conn, project, &key.scope(), last, key.number as i64)?;
    }
    Ok(bound)
}

/// A counter's value (0 before its first number).
fn last(conn: &Connection, project: i64, scope: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT last FROM counters WHERE project_id = ?1 AND scope = ?2")?
        .query_row(params![project, scope], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// Marks the numbers a kept number passed over (`last + 1 .. number`) skipped, and `number`
/// no longer so.
fn skip_below(conn: &Connection, project: i64, scope: &str, last: i64, number: i64) -> Result<()> {
    conn.prepare_cached(
        "DELETE FROM skipped WHERE project_id = ?1 AND scope = ?2 AND number = ?3",
    )?
    .execute(params![project, scope, number])?;
    let mut st = conn.prepare_cached(
        "INSERT INTO skipped (project_id, scope, number) VALUES (?1, ?2, ?3)
         ON CONFLICT DO NOTHING",
    )?;
    for n in (last + 1)..number {
        st.execute(params![project, scope, n])?;
    }
    Ok(())
}

/// A key bound by anything but an import (a witness): the number is no longer skipped.
pub fn unskip(conn: &Connection, project: i64, scope: &str, number: i64) -> Result<()> {
    conn.prepare_cached(
        "DELETE FROM skipped WHERE project_id = ?1 AND scope = ?2 AND number = ?3",
    )?
    .execute(params![project, scope, number])?;
    Ok(())
}

/// Whether `number` is skipped in `(project, scope)`.
pub fn is_skipped(conn: &Connection, project: i64, scope: &str, number: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM skipped
                            WHERE project_id = ?1 AND scope = ?2 AND number = ?3)",
        )?
        .query_row(params![project, scope, number], |r| r.get(0))?)
}
