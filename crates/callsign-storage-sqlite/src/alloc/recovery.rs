//! Recovery after a rollback (migration 0014, docs/RECOVERY.md): the projects that number
//! nothing until their recovery ends, and the SQL that starts, lists and ends it.
use callsign_core::Prefix;
use callsign_storage::{RecoveringRow, RecoveryReason, Rollback};
use rusqlite::{params, Connection, OptionalExtension};

use super::{AccountId, DbError, Result};

/// The prefix of `project` if it is recovering.
pub fn recovering_prefix(conn: &Connection, project: i64) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached(
            "SELECT p.prefix FROM recovering r JOIN projects p ON p.id = r.project_id
             WHERE r.project_id = ?1",
        )?
        .query_row([project], |r| r.get(0))
        .optional()?)
}

/// Marks the projects of `account` (every account's: `None`) recovering since `now`; one
/// already recovering keeps its start and reason. The caller records the rollback
/// ([`record_rollback`]) in the same transaction.
pub fn start(
    conn: &Connection,
    account: Option<AccountId>,
    reason: RecoveryReason,
    now: i64,
) -> Result<Vec<RecoveringRow>> {
    conn.execute(
        "INSERT INTO recovering (project_id, since, reason)
         SELECT id, ?2, ?3 FROM projects WHERE ?1 IS NULL OR account_id = ?1
         ON CONFLICT (project_id) DO NOTHING",
        params![account, now, reason.as_str()],
    )?;
    list(conn)
}

/// Records a rollback (`taken_at`: when the restored backup was taken).
pub fn record_rollback(
    conn: &Connection,
    reason: RecoveryReason,
    now: i64,
    taken_at: Option<i64>,
) -> Result<()> {
    conn.execute(
        "INSERT INTO rollbacks (at, reason, taken_at) VALUES (?1, ?2, ?3)",
        params![now, reason.as_str(), taken_at],
    )?;
    Ok(())
}

/// The latest rollback, if any.
pub fn last_rollback(conn: &Connection) -> Result<Option<Rollback>> {
    let row = conn
        .prepare_cached("SELECT at, reason, taken_at FROM rollbacks ORDER BY id DESC LIMIT 1")?
        .query_row([], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get(2)?))
        })
        .optional()?;
    row.map(|(at, reason, taken_at)| {
        Ok(Rollback {
            at,
            reason: RecoveryReason::parse(&reason)
                .ok_or_else(|| DbError::CommitFailed(format!("unknown rollback {reason:?}")))?,
            taken_at,
        })
    })
    .transpose()
}

/// Every recovering project, with its counter as it stands.
pub fn list(conn: &Connection) -> Result<Vec<RecoveringRow>> {
    let mut st = conn.prepare_cached(
        "SELECT p.account_id, p.prefix, r.since, r.reason,
                COALESCE((SELECT last FROM counters c WHERE c.project_id = p.id AND c.scope = ''), 0)
         FROM recovering r JOIN projects p ON p.id = r.project_id
         ORDER BY p.account_id, p.prefix",
    )?;
    let rows = st.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, i64>(4)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (account, prefix, since, reason, last) = row?;
        let reason = RecoveryReason::parse(&reason)
            .ok_or_else(|| DbError::CommitFailed(format!("unknown recovery reason {reason:?}")))?;
        out.push(RecoveringRow {
            account,
            prefix,
            since,
            reason,
            last,
        });
    }
    Ok(out)
}

/// Ends the recovery of `account`'s projects (every account's: `None`), or of its project
/// `prefix` only; returns the projects whose recovery ended.
pub fn end(
    conn: &Connection,
    account: Option<AccountId>,
    prefix: Option<&Prefix>,
) -> Result<Vec<RecoveringRow>> {
    let prefix = prefix.map(|p| p.as_str().to_owned());
    let ended: Vec<RecoveringRow> = list(conn)?
        .into_iter()
        .filter(|r| account.is_none_or(|a| a == r.account))
        .filter(|r| prefix.as_deref().is_none_or(|p| p == r.prefix))
        .collect();
    conn.execute(
        "DELETE FROM recovering WHERE project_id IN (
             SELECT id FROM projects
             WHERE (?1 IS NULL OR account_id = ?1) AND (?2 IS NULL OR prefix = ?2))",
        params![account, prefix],
    )?;
    Ok(ended)
}
