//! Trimming the operations log: what is older than the history kept goes, oldest first.
//!
//! TaskChampion appends every change to `operations` and never removes one unless a sync
//! server has taken it and its task is gone; a replica that never syncs (the server's) keeps
//! them all, ≈ 0.5 KiB an update. They serve only as history (`Replica::get_task_operations`,
//! Taskwarrior's `task info`) and for undo, so those older than the history kept can go.
//!
//! The log is in commit order (`id`), and an `Update` carries its time. A trim deletes a prefix
//! of the log: up to the last `Update` older than the cutoff that comes before the first one at
//! or after it. The `Create` (and `Delete`, `UndoPoint`) operations in that prefix go with it;
//! those after it stay, even if old, so a task created just before the cutoff keeps its
//! `Create` with its first updates. Tasks themselves are never touched. A replica that syncs
//! with a server (Taskwarrior sync) keeps every operation not yet sent.
use chrono::{DateTime, Utc};
use rusqlite::params;
use taskchampion::Operation;

use super::{parse_op, text, InlineStorage, Result};

impl InlineStorage {
    /// Deletes, oldest first, the operations older than `before` (see the module docs), at most
    /// `max` in one transaction. Returns how many went: fewer than `max` means nothing older
    /// is left for now.
    pub fn trim_operations(&mut self, before: DateTime<Utc>, max: usize) -> Result<usize> {
        if max == 0 {
            return Ok(0);
        }
        self.in_transaction(|con| {
            let base = super::sync::base_version(con)?;
            trim(con, before, max, base.is_some())
        })
    }
}

/// `synced_only`: the replica syncs with a server (it has a base version), so an operation not
/// yet sent must stay, and the trim stops before the first one.
fn trim(
    con: &rusqlite::Connection,
    before: DateTime<Utc>,
    max: usize,
    synced_only: bool,
) -> Result<usize> {
    let mut q =
        con.prepare_cached("SELECT id, data, synced FROM operations ORDER BY id LIMIT ?")?;
    let mut rows = q.query([max as i64])?;
    let mut last_old = None;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        if synced_only && !r.get::<_, bool>(2)? {
            break;
        }
        match parse_op(text(r, 1)?)? {
            Operation::Update { timestamp, .. } if timestamp < before => last_old = Some(id),
            Operation::Update { .. } => break,
            _ => {}
        }
    }
    drop(rows);
    let Some(last) = last_old else {
        return Ok(0);
    };
    let n = con
        .prepare_cached("DELETE FROM operations WHERE id <= ?")?
        .execute(params![last])?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use chrono::Duration;
    use taskchampion::storage::Storage;
    use taskchampion::{Operations, TaskData};
    use uuid::Uuid;

    use super::*;

    /// Updates `uuid`'s `property` to `value`, at `at`.
    fn update(uuid: Uuid, property: &str, value: &str, at: DateTime<Utc>) -> Operation {
        Operation::Update {
            uuid,
            property: property.into(),
            old_value: None,
            value: Some(value.into()),
            timestamp: at,
        }
    }

    fn ops(list: Vec<Operation>) -> Operations {
        let mut o = Operations::new();
        for op in list {
            o.push(op);
        }
        o
    }

    async fn history(s: &mut InlineStorage, uuid: Uuid) -> Vec<Operation> {
        let mut txn = s.txn().await.unwrap();
        txn.get_task_operations(uuid).await.unwrap()
    }

    /// A task made 100 days ago and edited since, and one made 100 days ago and never again:
    /// a trim at 90 days removes the old operations of both, keeps the recent ones, and never
    /// a task. Trimming again removes nothing.
    #[tokio::test]
    async fn operations_older_than_the_cutoff_go_and_tasks_stay() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = InlineStorage::open(dir.path()).await.unwrap();
        let now = Utc::now();
        let old = now - Duration::days(100);
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        s.commit_operations(ops(vec![
            Operation::Create { uuid: a },
            update(a, "status", "pending", old),
            update(a, "description", "old", old),
            Operation::Create { uuid: b },
            update(b, "status", "pending", old),
        ]))
        .unwrap();
        s.commit_operations(ops(vec![update(a, "description", "new", now)]))
            .unwrap();

        assert_eq!(s.trim_operations(now - Duration::days(90), 100).unwrap(), 5);
        assert_eq!(
            history(&mut s, a).await,
            vec![update(a, "description", "new", now)]
        );
        assert_eq!(history(&mut s, b).await, vec![]);
        let task = s.get_task_data(a).unwrap().unwrap();
        assert_eq!(task.get("description"), Some("new"));
        assert_eq!(
            s.get_task_data(b).unwrap().unwrap().get("status"),
            Some("pending")
        );
        assert_eq!(s.trim_operations(now - Duration::days(90), 100).unwrap(), 0);
    }

    /// At most `max` at a time, oldest first; a `Create` whose updates are recent stays.
    #[tokio::test]
    async fn a_trim_takes_at_most_max_and_stops_at_the_first_recent_update() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = InlineStorage::open(dir.path()).await.unwrap();
        let now = Utc::now();
        let old = now - Duration::days(100);
        let a = Uuid::new_v4();
        let mut list = vec![Operation::Create { uuid: a }];
        list.extend((0..10).map(|i| update(a, "n", &i.to_string(), old)));
        let fresh = Uuid::new_v4();
        list.push(Operation::Create { uuid: fresh });
        list.push(update(fresh, "status", "pending", now));
        s.commit_operations(ops(list)).unwrap();

        let cutoff = now - Duration::days(90);
        assert_eq!(s.trim_operations(cutoff, 4).unwrap(), 4);
        assert_eq!(s.trim_operations(cutoff, 4).unwrap(), 4);
        assert_eq!(s.trim_operations(cutoff, 4).unwrap(), 3, "the rest of a's");
        assert_eq!(s.trim_operations(cutoff, 4).unwrap(), 0);
        assert_eq!(
            history(&mut s, fresh).await,
            vec![
                Operation::Create { uuid: fresh },
                update(fresh, "status", "pending", now)
            ]
        );
        assert_eq!(history(&mut s, a).await, vec![]);
        // The log goes on after a trim.
        let mut t: TaskData = s.get_task_data(fresh).unwrap().unwrap();
        let mut more = Operations::new();
        t.update("description", Some("x".into()), &mut more);
        s.commit_operations(more).unwrap();
        assert_eq!(history(&mut s, fresh).await.len(), 3);
    }
}
