//! Imported tasks on PostgreSQL (migration 0011, `callsign import`), as SQLite's
//! `alloc/imports.rs`: the key each had in its tracker keeps naming it (`origins`, written with
//! the commit's rows, [`holders`]), and a create with `keep_number` takes that key as its own
//! ([`Kept`]) in phase 2's commit (the account row is locked, so nothing else binds or numbers
//! in the account meanwhile).
//!
//! G1 holds as for a witness: a kept number is bound only where no task holds it, and the
//! counter is raised past it with `GREATEST`, never lowered; a kept key another task holds stays
//! with it, and the clash is reported. The numbers a raise passes over are `skipped`, not lost:
//! the recovery report leaves them out until one is bound (by a later import, or a witness).
//!
//! An import binds hundreds of kept keys a commit, so [`Kept`] reads what they need in one
//! statement, decides each in memory in batch order (a key bound earlier in the batch is held),
//! and writes them in one statement per table.
use std::collections::HashMap;

use callsign_core::TaskKey;
use callsign_storage::{AccountId, KeyRow};
use deadpool_postgres::{GenericClient, Transaction};
use tokio_postgres::types::ToSql;
use uuid::Uuid;

use super::batch::prepare;
use crate::error::Result;

/// What [`Kept::flush`] runs: the keys, the counters raised, the numbers passed over, the
/// numbers no longer passed over, the tasks' projects.
const BIND: [&str; 5] = [
    "INSERT INTO keys (account_id, project_id, scope, number, task_uuid, assigned_at, epoch)
     SELECT $1, t.p, t.s, t.n, t.u, $2, t.e
     FROM UNNEST($3::bigint[], $4::text[], $5::bigint[], $6::uuid[], $7::bigint[])
          AS t(p, s, n, u, e)",
    "INSERT INTO counters (project_id, scope, last)
     SELECT t.p, t.s, MAX(t.n) FROM UNNEST($1::bigint[], $2::text[], $3::bigint[]) AS t(p, s, n)
     GROUP BY t.p, t.s ORDER BY t.p, t.s
     ON CONFLICT (project_id, scope) DO UPDATE SET last = GREATEST(counters.last, EXCLUDED.last)",
    "INSERT INTO skipped (project_id, scope, number)
     SELECT t.p, t.s, g.n
     FROM UNNEST($1::bigint[], $2::text[], $3::bigint[], $4::bigint[]) AS t(p, s, lo, hi)
     CROSS JOIN LATERAL generate_series(t.lo, t.hi) AS g(n)
     ON CONFLICT DO NOTHING",
    "DELETE FROM skipped x USING UNNEST($1::bigint[], $2::text[], $3::bigint[]) AS t(p, s, n)
     WHERE x.project_id = t.p AND x.scope = t.s AND x.number = t.n",
    "UPDATE tasks x SET project_id = t.p FROM UNNEST($2::uuid[], $3::bigint[]) AS t(u, p)
     WHERE x.account_id = $1 AND x.uuid = t.u AND x.project_id <> t.p",
];

/// For each kept key `(prefix, scope, number)`: the project its prefix names, that project's
/// prefix now, the epoch of the prefix given (the row is in force from it), the task holding
/// the number, and the counter. A prefix that names no project has no row.
const READ: &str = "SELECT t.i, x.project_id, p.prefix, e.epoch, k.task_uuid, c.last
     FROM UNNEST($2::text[], $3::text[], $4::bigint[]) WITH ORDINALITY AS t(prefix, s, n, i)
     JOIN prefixes x ON x.account_id = $1 AND x.prefix = t.prefix
     JOIN projects p ON p.id = x.project_id
     CROSS JOIN LATERAL (SELECT MAX(h.epoch) AS epoch FROM prefix_epochs h
                         WHERE h.project_id = x.project_id AND h.prefix = t.prefix) e
     LEFT JOIN keys k ON k.account_id = $1 AND k.project_id = x.project_id AND k.scope = t.s
                     AND k.number = t.n
     LEFT JOIN counters c ON c.project_id = x.project_id AND c.scope = t.s";

/// Records each task as the one its origin key names, in batch order: a key another task holds
/// already stays with it (the server refused such a create before it got here, short of a
/// race). Rows are `(key, task, prefix)`.
pub(super) const RECORD: &str = "INSERT INTO origins (account_id, key, task_uuid, prefix)
     SELECT $1, t.k, t.u, t.p FROM UNNEST($2::text[], $3::uuid[], $4::text[]) AS t(k, u, p)
     ON CONFLICT (account_id, key) DO NOTHING";

/// Records the kept keys other tasks held: `(key, held_by, claimed_by)` at `$2`.
pub(super) const CLASHES: &str = "INSERT INTO clashes (account_id, key, held_by, claimed_by, at)
     SELECT $1, t.k, t.h, t.c, $2 FROM UNNEST($3::text[], $4::uuid[], $5::uuid[]) AS t(k, h, c)
     ON CONFLICT DO NOTHING";

/// The tasks holding these origin keys.
pub(super) async fn holders(
    c: &impl GenericClient,
    account: AccountId,
    keys: &[String],
) -> Result<HashMap<String, Uuid>> {
    let st = c
        .prepare_cached(
            "SELECT key, task_uuid FROM origins WHERE account_id = $1 AND key = ANY($2)",
        )
        .await?;
    Ok(c.query(&st, &[&account, &keys])
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect())
}

/// Whether an import's keys use `prefix` (a new project may not take it).
pub(super) async fn prefix_used(
    c: &impl GenericClient,
    account: AccountId,
    prefix: &str,
) -> Result<bool> {
    Ok(c.query_one(
        "SELECT EXISTS (SELECT 1 FROM origins WHERE account_id = $1 AND prefix = $2)",
        &[&account, &prefix],
    )
    .await?
    .get(0))
}

/// A counter: (project, scope).
type Counter = (i64, String);

/// What the kept keys of a commit need, as read and as bound since.
#[derive(Default)]
struct Known {
    /// By prefix: the project it names, that project's prefix now, the prefix's epoch.
    projects: HashMap<String, (i64, String, i64)>,
    /// The task holding each number read (or bound since).
    holders: HashMap<(i64, String, i64), Uuid>,
    /// Each counter's last number (0 before its first).
    lasts: HashMap<Counter, i64>,
}

/// A kept key bound, not yet written.
struct Bind {
    project: i64,
    scope: String,
    number: i64,
    uuid: Uuid,
    epoch: i64,
    /// The counter's last number before: `last + 1 .. number` are passed over.
    last: i64,
}

/// Binds the kept keys of a commit's imports, in the order the commit meets them.
pub(super) struct Kept<'a, 't> {
    tx: &'a Transaction<'t>,
    account: AccountId,
    now: i64,
    /// Every kept key the commit may bind: (prefix, scope, number).
    wanted: Vec<(String, String, i64)>,
    /// `None` until read, and again once something else bound keys (a witness).
    known: Option<Known>,
    /// Bound since the last [`Self::flush`].
    pending: Vec<Bind>,
    /// Kept keys another task holds: (key, held_by, claimed_by).
    clashes: Vec<(String, Uuid, Uuid)>,
}

impl<'a, 't> Kept<'a, 't> {
    /// `keys`: the kept keys the commit's imports carry (read together, when first needed).
    pub(super) fn new<'k>(
        tx: &'a Transaction<'t>,
        account: AccountId,
        now: i64,
        keys: impl IntoIterator<Item = &'k TaskKey>,
    ) -> Self {
        let mut wanted: Vec<(String, String, i64)> = keys
            .into_iter()
            .filter_map(|k| {
                let n = i64::try_from(k.number).ok()?;
                Some((k.prefix.as_str().to_owned(), k.scope(), n))
            })
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        Kept {
            tx,
            account,
            now,
            wanted,
            known: None,
            pending: Vec::new(),
            clashes: Vec::new(),
        }
    }

    /// Binds `key` as the current key of `uuid`, a task with no key yet. `None` when another
    /// task holds it (a clash, recorded; the caller numbers the task from the counter instead)
    /// or no project has its prefix. The numbers the counter's raise passes over are skipped.
    pub(super) async fn bind(&mut self, uuid: Uuid, key: &TaskKey) -> Result<Option<KeyRow>> {
        let Ok(number) = i64::try_from(key.number) else {
            return Ok(None);
        };
        let known = self.known().await?;
        let Some((project, prefix, epoch)) = known.projects.get(key.prefix.as_str()).cloned()
        else {
            return Ok(None);
        };
        let scope = key.scope();
        let at = (project, scope.clone(), number);
        match known.holders.get(&at) {
            Some(&h) if h == uuid => return Ok(None),
            Some(&h) => {
                self.clashes.push((key.to_string(), h, uuid));
                return Ok(None);
            }
            None => {}
        }
        known.holders.insert(at, uuid);
        let last = known.lasts.entry((project, scope.clone())).or_insert(0);
        let before = *last;
        *last = before.max(number);
        self.pending.push(Bind {
            project,
            scope: scope.clone(),
            number,
            uuid,
            epoch,
            last: before,
        });
        Ok(Some(KeyRow {
            project_id: project,
            prefix,
            scope,
            number,
        }))
    }

    /// What the kept keys need, read now if it is not known (or no longer).
    async fn known(&mut self) -> Result<&mut Known> {
        if self.known.is_none() {
            self.known = Some(self.read().await?);
        }
        Ok(self.known.get_or_insert_with(Known::default))
    }

    async fn read(&self) -> Result<Known> {
        let mut known = Known::default();
        if self.wanted.is_empty() {
            return Ok(known);
        }
        let prefixes: Vec<&str> = self.wanted.iter().map(|w| w.0.as_str()).collect();
        let scopes: Vec<&str> = self.wanted.iter().map(|w| w.1.as_str()).collect();
        let numbers: Vec<i64> = self.wanted.iter().map(|w| w.2).collect();
        let st = self.tx.prepare_cached(READ).await?;
        let rows = self
            .tx
            .query(&st, &[&self.account, &prefixes, &scopes, &numbers])
            .await?;
        for r in rows {
            let i = usize::try_from(r.get::<_, i64>(0) - 1).unwrap_or(usize::MAX);
            let Some((prefix, scope, number)) = self.wanted.get(i) else {
                continue;
            };
            let project: i64 = r.get(1);
            let epoch: Option<i64> = r.get(3);
            known
                .projects
                .insert(prefix.clone(), (project, r.get(2), epoch.unwrap_or(0)));
            if let Some(h) = r.get::<_, Option<Uuid>>(4) {
                known.holders.insert((project, scope.clone(), *number), h);
            }
            let last: Option<i64> = r.get(5);
            known
                .lasts
                .insert((project, scope.clone()), last.unwrap_or(0));
        }
        Ok(known)
    }

    /// Writes the keys bound since the last flush (before anything else binds or numbers):
    /// the key rows, the counters raised past them, the numbers passed over skipped and the
    /// numbers bound no longer so, and each task's project.
    pub(super) async fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let projects: Vec<i64> = pending.iter().map(|b| b.project).collect();
        let scopes: Vec<&str> = pending.iter().map(|b| b.scope.as_str()).collect();
        let numbers: Vec<i64> = pending.iter().map(|b| b.number).collect();
        let uuids: Vec<Uuid> = pending.iter().map(|b| b.uuid).collect();
        let epochs: Vec<i64> = pending.iter().map(|b| b.epoch).collect();
        // A later kept number may be one an earlier one passed over: inserted here, it leaves
        // again with the numbers bound (the delete runs after the insert).
        let passed: Vec<&Bind> = pending.iter().filter(|b| b.last + 1 < b.number).collect();
        let passed_projects: Vec<i64> = passed.iter().map(|b| b.project).collect();
        let passed_scopes: Vec<&str> = passed.iter().map(|b| b.scope.as_str()).collect();
        let passed_lo: Vec<i64> = passed.iter().map(|b| b.last + 1).collect();
        let passed_hi: Vec<i64> = passed.iter().map(|b| b.number - 1).collect();
        let [keys, counters, skip, unskip, tasks] = prepare(self.tx, BIND).await?;
        let tx = self.tx;
        let account = self.account;
        tokio::try_join!(
            async {
                let p: [&(dyn ToSql + Sync); 7] = [
                    &account, &self.now, &projects, &scopes, &numbers, &uuids, &epochs,
                ];
                tx.execute(&keys, &p).await
            },
            async { tx.execute(&counters, &[&projects, &scopes, &numbers]).await },
            async {
                if passed.is_empty() {
                    return Ok(0);
                }
                let p: [&(dyn ToSql + Sync); 4] =
                    [&passed_projects, &passed_scopes, &passed_lo, &passed_hi];
                tx.execute(&skip, &p).await
            },
            async { tx.execute(&unskip, &[&projects, &scopes, &numbers]).await },
            async { tx.execute(&tasks, &[&account, &uuids, &projects]).await },
        )?;
        Ok(())
    }

    /// Keys were bound by other means (a witness) after [`Self::flush`]: read again when next
    /// needed.
    pub(super) fn forget(&mut self) {
        debug_assert!(self.pending.is_empty(), "kept keys bound but not written");
        self.known = None;
    }

    /// The clashes to record, of the tasks `committed` only (an item that fails leaves none,
    /// as SQLite rolls back a failed item).
    pub(super) fn clashes(
        &mut self,
        committed: impl Fn(Uuid) -> bool,
    ) -> Vec<(String, Uuid, Uuid)> {
        let mut out = std::mem::take(&mut self.clashes);
        out.retain(|c| committed(c.2));
        out
    }
}

#[cfg(test)]
mod tests;
