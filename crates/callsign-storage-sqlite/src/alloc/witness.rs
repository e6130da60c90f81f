//! Keys the devices bring back after a rollback (migration 0015, docs/RECOVERY.md): a witnessed
//! create binds the numbers it carries ([`bind_current`], [`bind_earlier`]) in the transaction
//! that commits its slot, and the devices' check-ins tell when a recovery may end.
//!
//! A number is bound only where no task holds it (G1): the counter is raised past it, never
//! lowered, so a number once handed out is not handed out again. A key another task holds
//! stays with that task and is recorded as a clash for the admin's report.
use callsign_core::TaskKey;
use callsign_storage::{Clash, DeviceRow, LostKey, RecoveryReport, Witness};
use rusqlite::{params, Connection, OptionalExtension};
use uuid::Uuid;

use super::{imports, slots, AccountId, KeyRow, Result};

/// How one witnessed key fared.
enum Bound {
    /// Bound to the task now.
    New(KeyRow),
    /// The task holds it already.
    Same,
    /// Another task holds it (a clash, recorded), or the account has no such prefix.
    Refused,
}

/// Binds a witness's keys to `uuid`, a task with no key yet: its key as the current one, then
/// its earlier keys. `None` when another task holds that key (the caller numbers the task from
/// the counter instead). An earlier key that is the same number under an earlier prefix of the
/// project (a rename) is no other row: the current one is in force from that prefix's epoch.
pub fn bind_current(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
    witness: &Witness,
    now: i64,
) -> Result<Option<KeyRow>> {
    let aliases = witness.aliases();
    let bound = bind(conn, account, uuid, &witness.key, Some(&aliases), now)?;
    for k in &witness.previous_keys {
        bind(conn, account, uuid, k, None, now)?;
    }
    Ok(match bound {
        Bound::New(row) => Some(row),
        Bound::Same | Bound::Refused => None,
    })
}

/// Binds a witness's keys to `uuid`, a task that has its key `current`, as earlier keys: a key
/// a device was told for this task keeps naming it.
pub fn bind_earlier(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
    witness: &Witness,
    current: &KeyRow,
    now: i64,
) -> Result<()> {
    let current = current.key();
    for k in witness.previous_keys.iter().chain([&witness.key]) {
        if TaskKey::parse(k).is_ok_and(|k| k.to_string() != current) {
            bind(conn, account, uuid, k, None, now)?;
        }
    }
    Ok(())
}

/// Binds `key` as the current key of `uuid`, a task with no key yet; `None` when another task
/// holds it (a clash, recorded) or no project has its prefix.
pub fn bind_key(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
    key: &str,
    now: i64,
) -> Result<Option<KeyRow>> {
    Ok(match bind(conn, account, uuid, key, Some(&[]), now)? {
        Bound::New(row) => Some(row),
        Bound::Same | Bound::Refused => None,
    })
}

/// Binds one key to `uuid`: as its current key when `aliases` is given (the earlier prefixes it
/// was known by), else as an earlier key.
fn bind(
    conn: &Connection,
    account: AccountId,
    uuid: Uuid,
    key: &str,
    aliases: Option<&[String]>,
    now: i64,
) -> Result<Bound> {
    let current = aliases.is_some();
    let Ok(key) = TaskKey::parse(key) else {
        return Ok(Bound::Refused);
    };
    let Some(project) = slots::project_id(conn, account, key.prefix.as_str())? else {
        return Ok(Bound::Refused);
    };
    let (scope, number) = (key.scope(), key.number as i64);
    let holder: Option<Uuid> = conn
        .prepare_cached(
            "SELECT task_uuid FROM keys
             WHERE account_id = ?1 AND project_id = ?2 AND scope = ?3 AND number = ?4",
        )?
        .query_row(params![account, project, scope, number], |r| r.get(0))
        .optional()?;
    match holder {
        Some(h) if h == uuid => return Ok(Bound::Same),
        Some(h) => {
            conn.prepare_cached(
                "INSERT OR IGNORE INTO clashes (account_id, key, held_by, claimed_by, at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![account, key.to_string(), h, uuid, now])?;
            return Ok(Bound::Refused);
        }
        None => {}
    }
    // The row is in force from the epoch of the earliest prefix the device knew it by.
    let mut epoch = epoch_of(conn, project, key.prefix.as_str())?;
    for alias in aliases.unwrap_or_default() {
        if slots::project_id(conn, account, alias)? == Some(project) {
            epoch = epoch.min(epoch_of(conn, project, alias)?);
        }
    }
    conn.prepare_cached(
        "INSERT INTO keys (account_id, project_id, scope, number, task_uuid, current,
                           assigned_at, epoch, until_epoch)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, CASE WHEN ?6 THEN NULL ELSE ?8 END)",
    )?
    .execute(params![
        account, project, scope, number, uuid, current, now, epoch
    ])?;
    conn.prepare_cached(
        "INSERT INTO counters (project_id, scope, last) VALUES (?1, ?2, ?3)
         ON CONFLICT (project_id, scope) DO UPDATE SET last = MAX(last, excluded.last)",
    )?
    .execute(params![project, scope, number])?;
    imports::unskip(conn, project, &scope, number)?;
    if current {
        slots::set_task_project(conn, account, uuid, project)?;
    }
    let prefix: String = conn
        .prepare_cached("SELECT prefix FROM projects WHERE id = ?1")?
        .query_row([project], |r| r.get(0))?;
    Ok(Bound::New(KeyRow {
        project_id: project,
        prefix,
        scope,
        number,
    }))
}

/// The latest epoch in which `project` had `prefix`.
fn epoch_of(conn: &Connection, project: i64, prefix: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "SELECT MAX(epoch) FROM prefix_epochs WHERE project_id = ?1 AND prefix = ?2",
        )?
        .query_row(params![project, prefix], |r| r.get(0))?)
}

/// Records that the token hashing to `hash` reached the server at `now`; `witnessed` also that
/// its device brought back its keys.
pub fn token_seen(conn: &Connection, hash: &[u8], now: i64, witnessed: bool) -> Result<()> {
    conn.prepare_cached(
        "UPDATE tokens SET last_seen_at = ?2,
                           witnessed_at = CASE WHEN ?3 THEN ?2 ELSE witnessed_at END
         WHERE token_hash = ?1",
    )?
    .execute(params![hash, now, witnessed])?;
    Ok(())
}

/// The current members' devices of `account` seen at or after `active_since` (a token never
/// seen: made at or after it) that have not brought back their keys at or after `after`.
pub fn unwitnessed(
    conn: &Connection,
    account: AccountId,
    active_since: i64,
    after: i64,
) -> Result<Vec<DeviceRow>> {
    let mut st = conn.prepare_cached(
        "SELECT t.account_id, m.name, t.device, t.last_seen_at
         FROM tokens t JOIN members m ON m.id = t.member_id
         WHERE t.account_id = ?1 AND m.removed_at IS NULL
           AND COALESCE(t.last_seen_at, t.created_at) >= ?2
           AND (t.witnessed_at IS NULL OR t.witnessed_at < ?3)
         ORDER BY m.name, t.device",
    )?;
    let rows = st.query_map(params![account, active_since, after], |r| {
        Ok(DeviceRow {
            account: r.get(0)?,
            member: r.get(1)?,
            device: r.get(2)?,
            last_seen_at: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Numbers below a counter that no task holds (an import's skipped numbers left out), and the
/// clashes recorded, for `account` (every account's: `None`).
pub fn report(conn: &Connection, account: Option<AccountId>) -> Result<RecoveryReport> {
    let mut counters = conn.prepare_cached(
        "SELECT p.account_id, p.id, p.prefix, c.scope, c.last
         FROM counters c JOIN projects p ON p.id = c.project_id
         WHERE ?1 IS NULL OR p.account_id = ?1
         ORDER BY p.account_id, p.prefix, c.scope",
    )?;
    let counters = counters
        .query_map([account], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, i64>(4)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut numbers = conn.prepare_cached(
        "SELECT number FROM keys WHERE project_id = ?1 AND scope = ?2 ORDER BY number",
    )?;
    let mut lost = Vec::new();
    for (account, project_id, prefix, scope, last) in counters {
        let held = numbers
            .query_map(params![project_id, scope], |r| r.get::<_, i64>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut held = held.into_iter().peekable();
        for n in 1..=last {
            if held.next_if_eq(&n).is_some() || imports::is_skipped(conn, project_id, &scope, n)? {
                continue;
            }
            let row = KeyRow {
                project_id,
                prefix: prefix.clone(),
                scope: scope.clone(),
                number: n,
            };
            lost.push(LostKey {
                account,
                key: row.key(),
            });
        }
    }
    let mut st = conn.prepare_cached(
        "SELECT account_id, key, held_by, claimed_by, at FROM clashes
         WHERE ?1 IS NULL OR account_id = ?1 ORDER BY at, key",
    )?;
    let clashes = st
        .query_map([account], |r| {
            Ok(Clash {
                account: r.get(0)?,
                key: r.get(1)?,
                held_by: r.get(2)?,
                claimed_by: r.get(3)?,
                at: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(RecoveryReport { lost, clashes })
}
