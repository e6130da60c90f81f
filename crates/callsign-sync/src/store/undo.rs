//! The undo journal (`undo_journal`, migration 008; what it holds is `crate::undo`): written in
//! the transaction of each journaled change, bounded in that same transaction, and popped by
//! `Store::undo` (in `edit`), which applies the newest step's reverts as new local changes (each
//! through the outbox as an edit or move is) and deletes the step, in one transaction: either the
//! whole step is undone and gone from the journal, or nothing changed.
use callsign_core::dto::TaskPatch;
use chrono::{DateTime, Utc};
use rusqlite::{params, Transaction};
use uuid::Uuid;

use super::tasks::ts;
#[cfg(test)]
use super::Store;
use crate::error::{Error, Result};
use crate::undo::{Journal, UndoKind, MAX_ROWS, MAX_STEPS};

/// The step and kind a change journaled as `journal` goes in (`None`: not journaled).
pub(super) fn step_for(tx: &Transaction<'_>, journal: Journal) -> Result<Option<(i64, UndoKind)>> {
    let (kind, join) = match journal {
        Journal::Skip => return Ok(None),
        Journal::Step(k) => (k, false),
        Journal::Join(k) => (k, true),
    };
    let newest: Option<i64> =
        tx.query_row("SELECT MAX(step) FROM undo_journal", [], |r| r.get(0))?;
    let step = match (newest, join) {
        (Some(s), true) => s,
        (Some(s), false) => s + 1,
        (None, _) => 1,
    };
    Ok(Some((step, kind)))
}

/// Writes one entry; a revert that sets nothing (a change that only cleared conflicts) has
/// nothing to put back and is not written.
pub(super) fn record(
    tx: &Transaction<'_>,
    (step, kind): (i64, UndoKind),
    uuid: Uuid,
    revert: &TaskPatch,
    now: DateTime<Utc>,
) -> Result<()> {
    if revert.is_empty() {
        return Ok(());
    }
    let revert = serde_json::to_string(revert).map_err(|e| Error::Invalid(e.to_string()))?;
    tx.prepare_cached(
        "INSERT INTO undo_journal (step, uuid, kind, at, revert) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        step,
        uuid.to_string(),
        kind.as_str(),
        ts(now),
        revert
    ])?;
    Ok(())
}

/// Keeps the newest [`MAX_STEPS`] steps, and of those only as many (newest first) as fit in
/// [`MAX_ROWS`] rows; the newest step always stays.
pub(super) fn prune(tx: &Transaction<'_>) -> Result<()> {
    prune_to(tx, MAX_STEPS, MAX_ROWS)
}

fn prune_to(tx: &Transaction<'_>, max_steps: i64, max_rows: i64) -> Result<()> {
    tx.prepare_cached(
        "DELETE FROM undo_journal WHERE step IN (
            WITH s AS (SELECT step, COUNT(*) AS n FROM undo_journal GROUP BY step),
                 r AS (SELECT step, ROW_NUMBER() OVER (ORDER BY step DESC) AS rank,
                              SUM(n) OVER (ORDER BY step DESC) AS upto FROM s)
            SELECT step FROM r WHERE rank > ?1 OR (rank > 1 AND upto > ?2))",
    )?
    .execute(params![max_steps, max_rows])?;
    Ok(())
}

/// Journals one change of `uuid` whose revert is `revert`, and bounds the journal.
pub(super) fn journal(
    tx: &Transaction<'_>,
    journal: Journal,
    uuid: Uuid,
    revert: &TaskPatch,
    now: DateTime<Utc>,
) -> Result<()> {
    if let Some(step) = step_for(tx, journal)? {
        record(tx, step, uuid, revert, now)?;
        prune(tx)?;
    }
    Ok(())
}

#[cfg(test)]
impl Store {
    /// The journal as `(step, uuid, kind, revert)`, oldest first (tests look at what a change
    /// journaled).
    pub fn journal_for_test(&self) -> Vec<(i64, Uuid, UndoKind, TaskPatch)> {
        let mut stmt = self
            .conn
            .prepare("SELECT step, uuid, kind, revert FROM undo_journal ORDER BY id")
            .unwrap();
        stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ))
        })
        .unwrap()
        .map(|r| {
            let (step, uuid, kind, revert) = r.unwrap();
            (
                step,
                Uuid::parse_str(&uuid).unwrap(),
                UndoKind::parse(&kind).unwrap(),
                serde_json::from_str(&revert).unwrap(),
            )
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps of 1, 3, 1 and 4 rows (oldest first), bounded to `steps` steps and `rows` rows:
    /// the sizes of the steps left.
    fn left_after(steps: i64, rows: i64) -> Vec<i64> {
        let mut s = Store::in_memory().unwrap();
        let tx = s.conn.transaction().unwrap();
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        for (step, n) in [(1, 1), (2, 3), (3, 1), (4, 4)] {
            for _ in 0..n {
                let u = Uuid::new_v4();
                tx.execute(
                    "INSERT INTO tasks (uuid, project, description, status, created_at,
                        modified_at) VALUES (?1, 'SYN', 'd', 'pending', 'x', 'x')",
                    [u.to_string()],
                )
                .unwrap();
                let revert = crate::undo::revert_of_capture();
                record(&tx, (step, UndoKind::Create), u, &revert, now).unwrap();
            }
        }
        prune_to(&tx, steps, rows).unwrap();
        let mut stmt = tx
            .prepare("SELECT COUNT(*) FROM undo_journal GROUP BY step ORDER BY step")
            .unwrap();
        let left = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        left
    }

    #[test]
    fn the_journal_keeps_the_newest_steps_that_fit_and_always_the_newest() {
        assert_eq!(left_after(100, 100), [1, 3, 1, 4]);
        assert_eq!(left_after(3, 100), [3, 1, 4], "by steps");
        assert_eq!(
            left_after(100, 5),
            [1, 4],
            "by rows: whole steps, newest first"
        );
        assert_eq!(
            left_after(100, 2),
            [4],
            "the newest step stays, however large"
        );
    }
}
