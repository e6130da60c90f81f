//! Keys the devices bring back after a rollback (migration 0010, docs/RECOVERY.md), as SQLite's
//! `alloc/witness.rs`: a witnessed create binds the numbers it carries ([`Binder::bind_current`],
//! [`Binder::bind_earlier`]) in phase 2's commit (the account row is locked, so nothing else
//! numbers in the account meanwhile), and the devices' check-ins tell when a recovery may end.
//!
//! A number is bound only where no task holds it (G1): the counter is raised past it with
//! `GREATEST`, never lowered, so a number once handed out is not handed out again. A key another
//! task holds stays with that task and is recorded as a clash for the admin's report.
use callsign_core::TaskKey;
use callsign_storage::{AccountId, Clash, DeviceRow, KeyRow, LostKey, RecoveryReport, Witness};
use deadpool_postgres::{GenericClient, Transaction};
use uuid::Uuid;

use super::moves;
use crate::error::{DbError, Result};

/// The fingerprint of a reservation a witness made (SQLite's too): it stands for no one
/// request, so no later create of the task is refused by it.
pub(super) const WITNESSED: &[u8] = b"witnessed";

/// How one witnessed key fared.
enum Bound {
    /// Bound to the task now.
    New(KeyRow),
    /// The task holds it already.
    Same,
    /// Another task holds it (a clash, recorded), or the account has no such prefix.
    Refused,
}

/// Binds the keys of a commit's witnesses, in the order the commit meets them.
pub(super) struct Binder<'a, 't> {
    tx: &'a Transaction<'t>,
    account: AccountId,
    now: i64,
    /// The next key's `bound_rank`: keys bound in one commit share `assigned_at`, and their
    /// earlier keys are listed in the order they were bound (SQLite's rowid order).
    rank: i32,
}

impl<'a, 't> Binder<'a, 't> {
    pub(super) fn new(tx: &'a Transaction<'t>, account: AccountId, now: i64) -> Self {
        Binder {
            tx,
            account,
            now,
            rank: 0,
        }
    }

    /// Binds a witness's keys to `uuid`, a task with no key yet: its key as the current one,
    /// then its earlier keys. `None` when the task does not get that key (another task holds
    /// it): the caller numbers the task from the counter instead. An earlier key that is the
    /// same number under an earlier prefix of the project (a rename) is no other row: the
    /// current one is in force from that prefix's epoch.
    pub(super) async fn bind_current(
        &mut self,
        uuid: Uuid,
        witness: &Witness,
    ) -> Result<Option<KeyRow>> {
        let aliases = witness.aliases();
        let bound = self.bind(uuid, &witness.key, Some(&aliases)).await?;
        for k in &witness.previous_keys {
            self.bind(uuid, k, None).await?;
        }
        Ok(match bound {
            Bound::New(row) => Some(row),
            Bound::Same | Bound::Refused => None,
        })
    }

    /// Binds a witness's keys to `uuid`, a task that has its key `current`, as earlier keys: a
    /// key a device was told for this task keeps naming it.
    pub(super) async fn bind_earlier(
        &mut self,
        uuid: Uuid,
        witness: &Witness,
        current: &KeyRow,
    ) -> Result<()> {
        let current = current.key();
        for k in witness.previous_keys.iter().chain([&witness.key]) {
            if TaskKey::parse(k).is_ok_and(|k| k.to_string() != current) {
                self.bind(uuid, k, None).await?;
            }
        }
        Ok(())
    }

    /// Opens a savepoint: a witnessed create that fails after binding leaves nothing behind,
    /// as SQLite rolls back a failed item.
    pub(super) async fn savepoint(&self) -> Result<()> {
        Ok(self.tx.batch_execute("SAVEPOINT witness").await?)
    }

    /// Keeps what was bound since [`Self::savepoint`].
    pub(super) async fn release(&self) -> Result<()> {
        Ok(self.tx.batch_execute("RELEASE SAVEPOINT witness").await?)
    }

    /// Undoes what was bound since [`Self::savepoint`], and closes it.
    pub(super) async fn roll_back(&self) -> Result<()> {
        Ok(self
            .tx
            .batch_execute("ROLLBACK TO SAVEPOINT witness; RELEASE SAVEPOINT witness")
            .await?)
    }

    /// Binds one key to `uuid`: as its current key when `aliases` is given (the earlier
    /// prefixes it was known by), else as an earlier key.
    async fn bind(&mut self, uuid: Uuid, key: &str, aliases: Option<&[String]>) -> Result<Bound> {
        let current = aliases.is_some();
        let Ok(key) = TaskKey::parse(key) else {
            return Ok(Bound::Refused);
        };
        let Ok(number) = i64::try_from(key.number) else {
            return Ok(Bound::Refused);
        };
        let prefix = key.prefix.as_str();
        let Some(project) = moves::project_id(self.tx, self.account, prefix).await? else {
            return Ok(Bound::Refused);
        };
        let scope = key.scope();
        match self.holder(project, &scope, number).await? {
            Some(h) if h == uuid => return Ok(Bound::Same),
            Some(h) => {
                self.clash(&key.to_string(), h, uuid).await?;
                return Ok(Bound::Refused);
            }
            None => {}
        }
        // In force from the epoch of the earliest prefix the device knew it by.
        let mut epoch = self.epoch_of(project, prefix).await?;
        for alias in aliases.unwrap_or_default() {
            if moves::project_id(self.tx, self.account, alias).await? == Some(project) {
                epoch = epoch.min(self.epoch_of(project, alias).await?);
            }
        }
        self.insert_key(project, &scope, number, uuid, current, epoch)
            .await?;
        self.raise_counter(project, &scope, number).await?;
        if current {
            moves::set_project(self.tx, self.account, uuid, project).await?;
        }
        let prefix: String = self
            .tx
            .query_one("SELECT prefix FROM projects WHERE id = $1", &[&project])
            .await?
            .get(0);
        Ok(Bound::New(KeyRow {
            project_id: project,
            prefix,
            scope,
            number,
        }))
    }

    /// The task that holds `(project, scope, number)`, current or earlier.
    async fn holder(&self, project: i64, scope: &str, number: i64) -> Result<Option<Uuid>> {
        let st = self
            .tx
            .prepare_cached(
                "SELECT task_uuid FROM keys
                 WHERE account_id = $1 AND project_id = $2 AND scope = $3 AND number = $4",
            )
            .await?;
        Ok(self
            .tx
            .query_opt(&st, &[&self.account, &project, &scope, &number])
            .await?
            .map(|r| r.get(0)))
    }

    async fn clash(&self, key: &str, held_by: Uuid, claimed_by: Uuid) -> Result<()> {
        self.tx
            .execute(
                "INSERT INTO clashes (account_id, key, held_by, claimed_by, at)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                &[&self.account, &key, &held_by, &claimed_by, &self.now],
            )
            .await?;
        Ok(())
    }

    /// The epoch of the prefix the device knew the key by: the row is in force from it.
    async fn epoch_of(&self, project: i64, prefix: &str) -> Result<i64> {
        self.tx
            .query_one(
                "SELECT MAX(epoch) FROM prefix_epochs WHERE project_id = $1 AND prefix = $2",
                &[&project, &prefix],
            )
            .await?
            .get::<_, Option<i64>>(0)
            .ok_or_else(|| DbError::Corrupt(format!("prefix {prefix} has no epoch")))
    }

    /// Inserts a key row; an earlier one (not `current`) is in force in `epoch` only.
    async fn insert_key(
        &mut self,
        project: i64,
        scope: &str,
        number: i64,
        uuid: Uuid,
        current: bool,
        epoch: i64,
    ) -> Result<()> {
        let until = (!current).then_some(epoch);
        self.tx
            .execute(
                "INSERT INTO keys (account_id, project_id, scope, number, task_uuid, current,
                                   assigned_at, epoch, until_epoch, bound_rank)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                &[
                    &self.account,
                    &project,
                    &scope,
                    &number,
                    &uuid,
                    &current,
                    &self.now,
                    &epoch,
                    &until,
                    &self.rank,
                ],
            )
            .await?;
        self.rank = self.rank.saturating_add(1);
        Ok(())
    }

    /// Moves the counter of `(project, scope)` up to `number` if it is below; never down.
    /// `number` is bound now: an import that passed over it (`skipped`) no longer did.
    async fn raise_counter(&self, project: i64, scope: &str, number: i64) -> Result<()> {
        self.tx
            .execute(
                "WITH unskipped AS (
                     DELETE FROM skipped WHERE project_id = $1 AND scope = $2 AND number = $3)
                 INSERT INTO counters (project_id, scope, last) VALUES ($1, $2, $3)
                 ON CONFLICT (project_id, scope)
                     DO UPDATE SET last = GREATEST(counters.last, EXCLUDED.last)",
                &[&project, &scope, &number],
            )
            .await?;
        Ok(())
    }
}

/// Records that the token hashing to `hash` reached the server at `now`; `witnessed` also that
/// its device brought back its keys.
pub(super) async fn token_seen(
    c: &impl GenericClient,
    hash: &[u8],
    now: i64,
    witnessed: bool,
) -> Result<()> {
    c.execute(
        "UPDATE tokens SET last_seen_at = $2,
                           witnessed_at = CASE WHEN $3::boolean THEN $2 ELSE witnessed_at END
         WHERE token_hash = $1",
        &[&hash, &now, &witnessed],
    )
    .await?;
    Ok(())
}

/// The current members' devices of `account` seen at or after `active_since` (a token never
/// seen: made at or after it) that have not brought back their keys at or after `after`.
pub(super) async fn unwitnessed(
    c: &impl GenericClient,
    account: AccountId,
    active_since: i64,
    after: i64,
) -> Result<Vec<DeviceRow>> {
    let rows = c
        .query(
            "SELECT t.account_id, m.name, t.device, t.last_seen_at
             FROM tokens t JOIN members m ON m.id = t.member_id
             WHERE t.account_id = $1 AND m.removed_at IS NULL
               AND COALESCE(t.last_seen_at, t.created_at) >= $2
               AND (t.witnessed_at IS NULL OR t.witnessed_at < $3)
             ORDER BY m.name COLLATE \"C\", t.device COLLATE \"C\"",
            &[&account, &active_since, &after],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| DeviceRow {
            account: r.get(0),
            member: r.get(1),
            device: r.get(2),
            last_seen_at: r.get(3),
        })
        .collect())
}

/// Numbers below a counter that no task holds (an import's skipped numbers left out), and the
/// clashes recorded, for `account` (every account's: `None`).
pub(super) async fn report(
    c: &impl GenericClient,
    account: Option<AccountId>,
) -> Result<RecoveryReport> {
    Ok(RecoveryReport {
        lost: lost(c, account).await?,
        clashes: clashes(c, account).await?,
    })
}

/// Numbers `1 ..= last` of each counter with no key row and not skipped by an import, by
/// account, prefix, scope, number.
async fn lost(c: &impl GenericClient, account: Option<AccountId>) -> Result<Vec<LostKey>> {
    let rows = c
        .query(
            "SELECT p.account_id, p.id, p.prefix, c.scope, n.number
             FROM counters c JOIN projects p ON p.id = c.project_id
             CROSS JOIN LATERAL generate_series(1::bigint, c.last) AS n(number)
             WHERE ($1::bigint IS NULL OR p.account_id = $1)
               AND NOT EXISTS (SELECT 1 FROM keys k
                               WHERE k.account_id = p.account_id AND k.project_id = c.project_id
                                 AND k.scope = c.scope AND k.number = n.number)
               AND NOT EXISTS (SELECT 1 FROM skipped s
                               WHERE s.project_id = c.project_id AND s.scope = c.scope
                                 AND s.number = n.number)
             ORDER BY p.account_id, p.prefix COLLATE \"C\", c.scope COLLATE \"C\", n.number",
            &[&account],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| {
            let row = KeyRow {
                project_id: r.get(1),
                prefix: r.get(2),
                scope: r.get(3),
                number: r.get(4),
            };
            LostKey {
                account: r.get(0),
                key: row.key(),
            }
        })
        .collect())
}

async fn clashes(c: &impl GenericClient, account: Option<AccountId>) -> Result<Vec<Clash>> {
    let rows = c
        .query(
            "SELECT account_id, key, held_by, claimed_by, at FROM clashes
             WHERE $1::bigint IS NULL OR account_id = $1 ORDER BY at, key COLLATE \"C\"",
            &[&account],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Clash {
            account: r.get(0),
            key: r.get(1),
            held_by: r.get(2),
            claimed_by: r.get(3),
            at: r.get(4),
        })
        .collect())
}
