//! Renaming a project's prefix on SQLite (migration 0011): a move of the prefix. The project
//! keeps its row, numbers and counters; `projects.epoch` goes up by one and `prefix_epochs`
//! records the new prefix for it. Key rows name their task by the prefixes of the epochs they
//! were in force (`keys.epoch ..= keys.until_epoch`: set when the row is inserted, and when a
//! move retires it), so every key a task had keeps resolving, and `prefixes` keeps each prefix
//! for one project forever (G1).
//!
//! The resolver (`slots::uuid_for_key`) finds the project through `prefixes` (every prefix
//! ever, PRIMARY KEY `(account, prefix)`; a project may take back its own) and accepts a key
//! only if that prefix was the project's while the row was in force; `previous_keys` lists
//! every such name but the current one. [`update_project`] is one transaction: in it every
//! current key of the project gets `in_store = 0` and every task a change-feed entry, each one
//! set-based statement, so the server writes the new keys onto the tasks afterwards and the
//! reaper writes any a crash leaves out.
use std::collections::HashMap;

use callsign_core::Prefix;
use rusqlite::{params, Connection, OptionalExtension};
use uuid::Uuid;

use super::{AccountId, KeyRow, Result};
pub use callsign_storage::rows::project;
use callsign_storage::Renamed;

/// Records that `project` has `prefix` from `epoch` on (a prefix it had before keeps its row
/// in `prefixes`).
pub fn record_prefix(
    conn: &Connection,
    account: AccountId,
    project: i64,
    epoch: i64,
    prefix: &str,
    now: i64,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO prefixes (account_id, prefix, project_id) VALUES (?1, ?2, ?3)
         ON CONFLICT (account_id, prefix) DO NOTHING",
    )?
    .execute(params![account, prefix, project])?;
    conn.prepare_cached(
        "INSERT INTO prefix_epochs (project_id, epoch, account_id, prefix, at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![project, epoch, account, prefix, now])?;
    Ok(())
}

/// Every prefix of the account's projects by epoch: project row id → prefixes, oldest first.
pub fn earlier_prefixes(
    conn: &Connection,
    account: AccountId,
) -> Result<HashMap<i64, Vec<String>>> {
    let mut st = conn.prepare_cached(
        "SELECT project_id, prefix FROM prefix_epochs WHERE account_id = ?1
         ORDER BY project_id, epoch",
    )?;
    let rows = st.query_map([account], |r| Ok((r.get::<_, i64>(0)?, r.get(1)?)))?;
    let mut out: HashMap<i64, Vec<String>> = HashMap::new();
    for row in rows {
        let (id, prefix) = row?;
        out.entry(id).or_default().push(prefix);
    }
    Ok(out)
}

/// The project `prefix` names (current or earlier prefix): its row id and its prefix now.
fn owner(conn: &Connection, account: AccountId, prefix: &str) -> Result<Option<(i64, String)>> {
    Ok(conn
        .prepare_cached(
            "SELECT x.project_id, p.prefix FROM prefixes x JOIN projects p ON p.id = x.project_id
             WHERE x.account_id = ?1 AND x.prefix = ?2",
        )?
        .query_row(params![account, prefix], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// `AllocStore::update_project` in the caller's transaction.
pub fn update_project(
    conn: &Connection,
    account: AccountId,
    from: &Prefix,
    to: Option<&Prefix>,
    name: Option<&str>,
    now: i64,
) -> Result<Renamed> {
    let found: Option<(i64, i64, String, i64)> = conn
        .prepare_cached(
            "SELECT id, number, name, epoch FROM projects WHERE account_id = ?1 AND prefix = ?2",
        )?
        .query_row(params![account, from.as_str()], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?;
    let Some((id, number, mut project_name, epoch)) = found else {
        let now_named = owner(conn, account, from.as_str())?.map(|(_, p)| p);
        return Ok(Renamed::NotFound(now_named));
    };
    let mut prefix = from.to_string();
    let mut keys = Vec::new();
    if let Some(to) = to.filter(|to| *to != from) {
        match owner(conn, account, to.as_str())? {
            Some((other, now_named)) if other != id => return Ok(Renamed::Taken(now_named)),
            None if super::imports::prefix_used(conn, account, to.as_str())? => {
                return Ok(Renamed::Imported)
            }
            _ => {}
        }
        let epoch = epoch + 1;
        conn.prepare_cached("UPDATE projects SET prefix = ?2, epoch = ?3 WHERE id = ?1")?
            .execute(params![id, to.as_str(), epoch])?;
        record_prefix(conn, account, id, epoch, to.as_str(), now)?;
        prefix = to.to_string();
        // Each task's key is to be written onto it again (crash-safe: the reaper writes what
        // is left `in_store = 0`), and each is in the feed, so clients learn its new key.
        let mut st = conn.prepare_cached(
            "UPDATE keys SET in_store = 0 WHERE account_id = ?1 AND project_id = ?2 AND current = 1
             RETURNING task_uuid, scope, number",
        )?;
        let rows = st.query_map(params![account, id], |r| {
            Ok((r.get::<_, Uuid>(0)?, r.get::<_, String>(1)?, r.get(2)?))
        })?;
        for row in rows {
            let (uuid, scope, number) = row?;
            let key = KeyRow {
                project_id: id,
                prefix: prefix.clone(),
                scope,
                number,
            };
            keys.push((uuid, key.key()));
        }
        conn.prepare_cached(
            "INSERT OR REPLACE INTO changes (account_id, task_uuid, at)
             SELECT account_id, task_uuid, ?3 FROM keys
             WHERE account_id = ?1 AND project_id = ?2 AND current = 1
             ORDER BY scope, number",
        )?
        .execute(params![account, id, now])?;
    }
    if let Some(name) = name {
        conn.prepare_cached("UPDATE projects SET name = ?2 WHERE id = ?1")?
            .execute(params![id, name])?;
        project_name = name.to_owned();
    }
    let earlier = earlier_prefixes(conn, account)?;
    let project = project((number, id), project_name, prefix, &earlier);
    Ok(Renamed::Done { project, keys })
}

#[cfg(test)]
mod tests {
    use crate::alloc::{migrations, open_conn};

    #[test]
    fn the_migration_gives_every_project_its_prefix_and_keys_their_epochs() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = open_conn(&dir.path().join("a.sqlite3")).unwrap();
        migrations().to_version(&mut c, 10).unwrap();
        c.execute_batch(
            "INSERT INTO accounts (id, name, created_at) VALUES (1, 'a', 0);
             INSERT INTO projects (id, account_id, name, prefix, created_at, number)
             VALUES (1, 1, 'Sync', 'SYN', 5, 1), (2, 1, 'Ops', 'OPS', 6, 2);
             INSERT INTO tasks (account_id, uuid, project_id, fingerprint, created_at)
             VALUES (1, 'u1', 2, x'00', 0);
             INSERT INTO keys (account_id, project_id, scope, number, task_uuid, current,
                               assigned_at)
             VALUES (1, 1, '', 1, 'u1', 0, 1), (1, 2, '', 1, 'u1', 1, 2);",
        )
        .unwrap();
        migrations().to_latest(&mut c).unwrap();
        let prefixes: Vec<(String, i64)> = c
            .prepare("SELECT prefix, project_id FROM prefixes ORDER BY prefix")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(prefixes, [("OPS".into(), 2), ("SYN".into(), 1)]);
        let epochs: Vec<(i64, Option<i64>)> = c
            .prepare("SELECT epoch, until_epoch FROM keys ORDER BY project_id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(epochs, [(0, Some(0)), (0, None)], "retired rows end at 0");
    }
}
