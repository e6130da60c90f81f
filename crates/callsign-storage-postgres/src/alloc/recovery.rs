//! Recovery after a rollback (migration 0009, docs/RECOVERY.md): the projects that number
//! nothing until their recovery ends, and the SQL that starts, lists and ends it.
use std::collections::HashMap;

use callsign_storage::{AccountId, RecoveringRow, RecoveryReason, Rollback};
use deadpool_postgres::{GenericClient, Transaction};

use crate::error::{DbError, Result};

/// The recovering projects of `account`: id → prefix (almost always none).
pub(super) async fn recovering_in(
    tx: &Transaction<'_>,
    account: AccountId,
) -> Result<HashMap<i64, String>> {
    let st = tx
        .prepare_cached(
            "SELECT p.id, p.prefix FROM recovering r JOIN projects p ON p.id = r.project_id
             WHERE p.account_id = $1",
        )
        .await?;
    let rows = tx.query(&st, &[&account]).await?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// Marks the projects of `account` (every account's: `None`) recovering since `now`; one
/// already recovering keeps its start and reason.
pub(super) async fn start(
    c: &impl GenericClient,
    account: Option<AccountId>,
    reason: RecoveryReason,
    now: i64,
) -> Result<Vec<RecoveringRow>> {
    c.execute(
        "INSERT INTO recovering (project_id, since, reason)
         SELECT id, $2, $3 FROM projects WHERE $1::bigint IS NULL OR account_id = $1
         ON CONFLICT (project_id) DO NOTHING",
        &[&account, &now, &reason.as_str()],
    )
    .await?;
    c.execute(
        "INSERT INTO rollbacks (at, reason) VALUES ($1, $2)",
        &[&now, &reason.as_str()],
    )
    .await?;
    list(c).await
}

/// The latest rollback, if any.
pub(super) async fn last_rollback(c: &impl GenericClient) -> Result<Option<Rollback>> {
    let row = c
        .query_opt(
            "SELECT at, reason, taken_at FROM rollbacks ORDER BY id DESC LIMIT 1",
            &[],
        )
        .await?;
    row.map(|r| {
        let reason: String = r.get(1);
        Ok(Rollback {
            at: r.get(0),
            reason: RecoveryReason::parse(&reason)
                .ok_or_else(|| DbError::Corrupt(format!("rollback reason {reason:?}")))?,
            taken_at: r.get(2),
        })
    })
    .transpose()
}

/// Every recovering project, with its counter as it stands.
pub(super) async fn list(c: &impl GenericClient) -> Result<Vec<RecoveringRow>> {
    let rows = c
        .query(
            "SELECT p.account_id, p.prefix, r.since, r.reason,
                    COALESCE((SELECT last FROM counters c
                              WHERE c.project_id = p.id AND c.scope = ''), 0)
             FROM recovering r JOIN projects p ON p.id = r.project_id
             ORDER BY p.account_id, p.prefix",
            &[],
        )
        .await?;
    rows.iter()
        .map(|r| {
            let reason: String = r.get(3);
            Ok(RecoveringRow {
                account: r.get(0),
                prefix: r.get(1),
                since: r.get(2),
                reason: RecoveryReason::parse(&reason)
                    .ok_or_else(|| DbError::Corrupt(format!("recovery reason {reason:?}")))?,
                last: r.get(4),
            })
        })
        .collect()
}

/// Ends the recovery of `account`'s projects (every account's: `None`), or of its project
/// `prefix` only; returns the projects whose recovery ended.
pub(super) async fn end(
    c: &impl GenericClient,
    account: Option<AccountId>,
    prefix: Option<&str>,
) -> Result<Vec<RecoveringRow>> {
    let ended: Vec<RecoveringRow> = list(c)
        .await?
        .into_iter()
        .filter(|r| account.is_none_or(|a| a == r.account))
        .filter(|r| prefix.is_none_or(|p| p == r.prefix))
        .collect();
    c.execute(
        "DELETE FROM recovering WHERE project_id IN (
             SELECT id FROM projects
             WHERE ($1::bigint IS NULL OR account_id = $1) AND ($2::text IS NULL OR prefix = $2))",
        &[&account, &prefix],
    )
    .await?;
    Ok(ended)
}
