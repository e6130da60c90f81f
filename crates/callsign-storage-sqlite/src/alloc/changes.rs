//! The change feed: one row per task, at its latest committed create or update, in commit order.
//!
//! SQLite has one writer, so sequence numbers become visible in order and a reader that has
//! seen `seq` has seen every smaller one: a cursor never skips a change. A change replaces the
//! task's earlier row with one at a new, higher `seq` (AUTOINCREMENT never reuses one), which
//! changes no page a cursor can ask for: the feed holds what cursors can still need, its size
//! follows the tasks, not the edits, and a first pull reads one row per task (migration 0008).
//!
//! A commit's entry goes back with its answer (`Reply::change`), so a sync response can leave
//! out the entries its own commits appended. Clients see the sequence only enciphered per
//! account (`callsign-server`'s `cursor`). On PostgreSQL the feed is numbered per account
//! instead, under the account row's lock (`callsign_storage_postgres::alloc`).
use rusqlite::{params, Connection};
use uuid::Uuid;

use super::{AccountId, Result};
pub use callsign_storage::ChangeRow;

/// Records a change of `uuid` (replacing its earlier row); returns its sequence number.
pub fn append(conn: &Connection, account: AccountId, uuid: Uuid, now: i64) -> Result<i64> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO changes (account_id, task_uuid, at) VALUES (?1, ?2, ?3)",
    )?
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
        "SELECT task_uuid, seq FROM changes WHERE account_id = ?1 AND seq > ?2
         ORDER BY seq LIMIT ?3",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::{migrations, open_conn};

    fn uuids(rows: &[ChangeRow]) -> Vec<Uuid> {
        rows.iter().map(|r| r.task_uuid).collect()
    }

    #[test]
    fn the_feed_keeps_one_row_per_task_and_no_cursor_skips_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = open_conn(&dir.path().join("a.sqlite3")).unwrap();
        migrations().to_latest(&mut c).unwrap();
        c.execute(
            "INSERT INTO accounts (id, name, created_at) VALUES (1, 'a', 0)",
            [],
        )
        .unwrap();
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        append(&c, 1, a, 0).unwrap();
        let after_a = append(&c, 1, b, 0).unwrap();
        // A device that has seen both, then 1,000 edits of `a`.
        for _ in 0..1_000 {
            append(&c, 1, a, 0).unwrap();
        }
        let n: i64 = c
            .query_row("SELECT COUNT(*) FROM changes", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2, "one row per task, however many edits");
        let (page, more) = since(&c, 1, after_a, 10).unwrap();
        assert_eq!(
            (uuids(&page), more),
            (vec![a], false),
            "the edits are not skipped"
        );
        let (page, _) = since(&c, 1, 0, 10).unwrap();
        assert_eq!(
            uuids(&page),
            vec![b, a],
            "a first pull: each task once, in commit order"
        );
        // A sequence number is never handed out again, even the one just replaced.
        let top = latest(&c, 1).unwrap();
        let next = append(&c, 1, a, 0).unwrap();
        assert!(next > top);
        // Paging stops at the cursor it was given, whatever happens after.
        let (page, more) = since(&c, 1, 0, 1).unwrap();
        assert_eq!((uuids(&page), more), (vec![b], true));
        append(&c, 1, b, 0).unwrap();
        let (page, more) = since(&c, 1, page[0].seq, 10).unwrap();
        assert_eq!((uuids(&page), more), (vec![a, b], false));
    }

    #[test]
    fn the_migration_keeps_each_tasks_latest_row() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = open_conn(&dir.path().join("a.sqlite3")).unwrap();
        migrations().to_version(&mut c, 7).unwrap();
        c.execute_batch(
            "INSERT INTO accounts (id, name, created_at) VALUES (1, 'a', 0), (2, 'b', 0);
             INSERT INTO changes (account_id, task_uuid, at) VALUES
               (1, 'u1', 0), (1, 'u2', 0), (1, 'u1', 0), (2, 'u1', 0), (1, 'u2', 0);",
        )
        .unwrap();
        migrations().to_latest(&mut c).unwrap();
        let rows: Vec<(i64, i64, String)> = c
            .prepare("SELECT seq, account_id, task_uuid FROM changes ORDER BY seq")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(
            rows,
            vec![
                (3, 1, "u1".to_owned()),
                (4, 2, "u1".to_owned()),
                (5, 1, "u2".to_owned())
            ]
        );
    }
}
