//! Renaming a project's prefix on PostgreSQL: SQLite's
//! `callsign_storage_sqlite::alloc::renames` (a new epoch of the project, its current keys to
//! be written again, a feed entry per task), with the account row locked first as phase 2's
//! commit does: it numbers the feed (`feed_last`), keeps every commit of the account out while
//! the prefix changes, and orders the locks, so a rename never deadlocks with a commit. The
//! feed entries and the cleared `in_store` marks are one statement for the whole project,
//! however many tasks it has.
use std::collections::HashMap;

use callsign_core::Prefix;
use deadpool_postgres::{GenericClient, Transaction};
use uuid::Uuid;

use crate::error::Result;
use callsign_storage::rows::project;
use callsign_storage::Renamed;
use callsign_storage::{AccountId, KeyRow};

/// Records that `project` has `prefix` from `epoch` on (a prefix it had before keeps its row
/// in `prefixes`).
pub(super) async fn record_prefix(
    tx: &Transaction<'_>,
    account: AccountId,
    project: i64,
    epoch: i64,
    prefix: &str,
    now: i64,
) -> Result<()> {
    tx.execute(
        "INSERT INTO prefixes (account_id, prefix, project_id) VALUES ($1, $2, $3)
         ON CONFLICT (account_id, prefix) DO NOTHING",
        &[&account, &prefix, &project],
    )
    .await?;
    tx.execute(
        "INSERT INTO prefix_epochs (project_id, epoch, account_id, prefix, at)
         VALUES ($1, $2, $3, $4, $5)",
        &[&project, &epoch, &account, &prefix, &now],
    )
    .await?;
    Ok(())
}

/// Every prefix of the account's projects by epoch: project row id → prefixes, oldest first.
pub(super) async fn earlier_prefixes(
    c: &impl GenericClient,
    account: AccountId,
) -> Result<HashMap<i64, Vec<String>>> {
    let rows = c
        .query(
            "SELECT project_id, prefix FROM prefix_epochs WHERE account_id = $1
             ORDER BY project_id, epoch",
            &[&account],
        )
        .await?;
    let mut out: HashMap<i64, Vec<String>> = HashMap::new();
    for r in rows {
        out.entry(r.get(0)).or_default().push(r.get(1));
    }
    Ok(out)
}

/// The project `prefix` names (current or earlier prefix): its row id and its prefix now.
async fn owner(
    tx: &Transaction<'_>,
    account: AccountId,
    prefix: &str,
) -> Result<Option<(i64, String)>> {
    Ok(tx
        .query_opt(
            "SELECT x.project_id, p.prefix FROM prefixes x JOIN projects p ON p.id = x.project_id
             WHERE x.account_id = $1 AND x.prefix = $2",
            &[&account, &prefix],
        )
        .await?
        .map(|r| (r.get(0), r.get(1))))
}

/// `AllocStore::update_project` in the caller's transaction.
pub(super) async fn update_project(
    tx: &Transaction<'_>,
    account: AccountId,
    from: &Prefix,
    to: Option<&Prefix>,
    name: Option<&str>,
    now: i64,
) -> Result<Renamed> {
    let feed_last = super::lock_feed(tx, account).await?;
    let found = tx
        .query_opt(
            "SELECT id, number, name, epoch FROM projects WHERE account_id = $1 AND prefix = $2",
            &[&account, &from.as_str()],
        )
        .await?;
    let Some(found) = found else {
        let now_named = owner(tx, account, from.as_str()).await?.map(|(_, p)| p);
        return Ok(Renamed::NotFound(now_named));
    };
    let (id, number, mut project_name, epoch): (i64, i64, String, i64) =
        (found.get(0), found.get(1), found.get(2), found.get(3));
    let mut prefix = from.to_string();
    let mut keys = Vec::new();
    if let Some(to) = to.filter(|to| *to != from) {
        match owner(tx, account, to.as_str()).await? {
            Some((other, now_named)) if other != id => return Ok(Renamed::Taken(now_named)),
            // Checked under the account row's lock: no import records a prefix meanwhile.
            None if super::imports::prefix_used(tx, account, to.as_str()).await? => {
                return Ok(Renamed::Imported)
            }
            _ => {}
        }
        let epoch = epoch + 1;
        tx.execute(
            "UPDATE projects SET prefix = $2, epoch = $3 WHERE id = $1",
            &[&id, &to.as_str(), &epoch],
        )
        .await?;
        record_prefix(tx, account, id, epoch, to.as_str(), now).await?;
        prefix = to.to_string();
        // Each task's key is to be written onto it again (the reaper writes what is left
        // unmarked), and each is in the feed after every entry before it, so clients learn its
        // new key.
        let rows = tx
            .query(
                "WITH k AS (
                     UPDATE keys SET in_store = false
                     WHERE account_id = $1 AND project_id = $2 AND current
                     RETURNING task_uuid, scope, number),
                 n AS (SELECT task_uuid, scope, number,
                              row_number() OVER (ORDER BY scope, number) AS i FROM k),
                 f AS (
                     INSERT INTO changes (account_id, task_uuid, seq, at)
                     SELECT $1, task_uuid, $3 + i, $4 FROM n
                     ON CONFLICT (account_id, task_uuid)
                         DO UPDATE SET seq = EXCLUDED.seq, at = EXCLUDED.at)
                 SELECT task_uuid, scope, number FROM n",
                &[&account, &id, &feed_last, &now],
            )
            .await?;
        let n = i64::try_from(rows.len()).unwrap_or(i64::MAX);
        tx.execute(
            "UPDATE accounts SET feed_last = feed_last + $2 WHERE id = $1",
            &[&account, &n],
        )
        .await?;
        for r in rows {
            let key = KeyRow {
                project_id: id,
                prefix: prefix.clone(),
                scope: r.get(1),
                number: r.get(2),
            };
            keys.push((r.get::<_, Uuid>(0), key.key()));
        }
    }
    if let Some(name) = name {
        tx.execute("UPDATE projects SET name = $2 WHERE id = $1", &[&id, &name])
            .await?;
        project_name = name.to_owned();
    }
    let earlier = earlier_prefixes(tx, account).await?;
    let project = project((number, id), project_name, prefix, &earlier);
    Ok(Renamed::Done { project, keys })
}
