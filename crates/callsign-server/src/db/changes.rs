//! The change feed: one row per committed create or update of a task, in commit order.
//!
//! SQLite has one writer, so sequence numbers become visible in order and a reader that has
//! seen `seq` has seen every smaller one: a cursor never skips a change.
use rusqlite::{params, Connection};
use uuid::Uuid;

use super::{AccountId, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRow {
    pub task_uuid: Uuid,
    pub seq: i64,
}

/// Appends a change of `uuid`; returns its sequence number.
pub fn append(conn: &Connection, account: AccountId, uuid: Uuid, now: i64) -> Result<i64> {
    conn.prepare_cached("INSERT INTO changes (account_id, task_uuid, at) VALUES (?1, ?2, ?3)")?
        .execute(params![account, uuid, now])?;
    Ok(conn.last_insert_rowid())
}

/// Tasks changed after `after`, each once at its latest change, oldest first. Returns the
/// page and whether more remain.
pub fn since(
    conn: &Connection,
    account: AccountId,
    after: i64,
    limit: usize,
) -> Result<(Vec<ChangeRow>, bool)> {
    let mut st = conn.prepare_cached(
        "SELECT task_uuid, MAX(seq) AS s FROM changes WHERE account_id = ?1 AND seq > ?2
         GROUP BY task_uuid ORDER BY s LIMIT ?3",
    )?;
    let rows = st.query_map(params![account, after, (limit + 1) as i64], |r| {
        Ok(ChangeRow {
            task_uuid: r.get(0)?,
            seq: r.get(1)?,
        })
    })?;
    let mut rows: Vec<ChangeRow> = rows.collect::<rusqlite::Result<_>>()?;
    let has_more = rows.len() > limit;
    rows.truncate(limit);
    Ok((rows, has_more))
}

/// The newest sequence number of the account (0 when it has none).
pub fn latest(conn: &Connection, account: AccountId) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM changes WHERE account_id = ?1")?
        .query_row([account], |r| r.get(0))?)
}
