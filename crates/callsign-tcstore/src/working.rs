//! Keeping the working set to the tasks that belong in it.
//!
//! TaskChampion adds a task to the working set when it becomes pending and takes it out only
//! when the working set is rebuilt (`Replica::rebuild_working_set`, which Taskwarrior runs as
//! its garbage collection). The server never ran one, so every task ever created stayed in it,
//! on disk and in the cached copy (a `Vec` and a `HashSet`), completed and deleted ones
//! included. [`InlineStorage::compact_working_set`] rebuilds it, as
//! `Replica::rebuild_working_set(true)` does, whenever it has grown to more than twice the
//! tasks it held after the last rebuild (plus [`SLACK`]): its size stays within twice the most
//! live tasks the account had at a rebuild, whatever the tasks ever created, at a cost that
//! amortizes to a constant per task added.
use std::collections::HashSet;

use rusqlite::params;
use uuid::Uuid;

use super::{parse_uuid, text, uuid_text, CachedWorkingSet, InlineStorage, Result, WorkingSet};

/// Entries the working set may hold beyond twice its live tasks before it is rebuilt.
pub const SLACK: usize = 256;

impl InlineStorage {
    /// Rebuilds the working set if it has grown past twice its size at the last rebuild (plus
    /// [`SLACK`]). Returns whether it did.
    pub fn compact_working_set(&mut self) -> Result<bool> {
        let Some(len) = self.working_set.as_ref().map(|ws| ws.slots.len() - 1) else {
            return Ok(false);
        };
        if len <= 2 * self.live_at_rebuild + SLACK {
            return Ok(false);
        }
        self.rebuild_working_set()?;
        Ok(true)
    }

    /// `Replica::rebuild_working_set(true)`: the pending and recurring tasks already in the
    /// working set keep their order and move down to 1, 2, ...; those missing are added after
    /// them; every other task leaves it. Returns its new size.
    pub fn rebuild_working_set(&mut self) -> Result<usize> {
        let version = self.begin()?;
        match rebuild(&self.con) {
            Ok(slots) => {
                if let Err(e) = self.con.execute_batch("COMMIT") {
                    let _ = self.con.execute_batch("ROLLBACK");
                    self.working_set = None;
                    return Err(e.into());
                }
                let live = slots.len() - 1;
                let members = slots.iter().flatten().copied().collect();
                self.working_set = Some(CachedWorkingSet {
                    version,
                    slots,
                    members: Some(members),
                });
                self.live_at_rebuild = live;
                Ok(live)
            }
            Err(e) => {
                let _ = self.con.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }
}

fn rebuild(con: &rusqlite::Connection) -> Result<WorkingSet> {
    let old = super::read_working_set(con)?;
    let mut q = con.prepare_cached(
        "SELECT uuid FROM tasks WHERE json_extract(data, '$.status') IN ('pending', 'recurring')",
    )?;
    let mut rows = q.query([])?;
    let mut live = Vec::new();
    while let Some(r) = rows.next()? {
        live.push(parse_uuid(text(r, 0)?)?);
    }
    drop(rows);
    let is_live: HashSet<Uuid> = live.iter().copied().collect();
    let mut seen = HashSet::new();
    let mut slots: WorkingSet = vec![None];
    for u in old.iter().flatten() {
        if is_live.contains(u) && seen.insert(*u) {
            slots.push(Some(*u));
        }
    }
    for u in live {
        if seen.insert(u) {
            slots.push(Some(u));
        }
    }
    con.execute("DELETE FROM working_set", [])?;
    let mut insert = con.prepare_cached("INSERT INTO working_set (id, uuid) VALUES (?, ?)")?;
    for (id, u) in slots.iter().enumerate().skip(1) {
        if let Some(u) = u {
            insert.execute(params![id as i64, uuid_text(*u)])?;
        }
    }
    Ok(slots)
}

#[cfg(test)]
mod tests {
    use taskchampion::storage::Storage;
    use taskchampion::{Operations, Replica, TaskData};

    use super::*;

    async fn working_set(s: &mut InlineStorage) -> Vec<Option<Uuid>> {
        let mut txn = s.txn().await.unwrap();
        txn.get_working_set().await.unwrap()
    }

    fn set_status(s: &mut InlineStorage, uuids: &[Uuid], status: &str) {
        let mut ops = Operations::new();
        for &u in uuids {
            let mut t: TaskData = s.get_task_data(u).unwrap().unwrap();
            t.update("status", Some(status.into()), &mut ops);
        }
        s.commit_operations(ops).unwrap();
    }

    /// 600 tasks made, 590 of them completed: the working set is rebuilt down to the 10
    /// pending ones in their order, the same as TaskChampion's own rebuild gives; a task made
    /// pending again joins at the end; a set within twice its live size is left alone.
    #[tokio::test]
    async fn a_working_set_of_mostly_finished_tasks_is_rebuilt_to_the_live_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = InlineStorage::open(dir.path()).await.unwrap();
        let uuids: Vec<Uuid> = (0..600).map(|_| Uuid::new_v4()).collect();
        let mut ops = Operations::new();
        for &u in &uuids {
            let mut t = TaskData::create(u, &mut ops);
            t.update("status", Some("pending".into()), &mut ops);
        }
        s.commit_operations(ops).unwrap();
        set_status(&mut s, &uuids[10..], "completed");
        assert_eq!(working_set(&mut s).await.len(), 601);

        // TaskChampion's own rebuild, on a copy of the file.
        let copy = tempfile::tempdir().unwrap();
        rusqlite::Connection::open(dir.path().join(crate::FILE_NAME))
            .unwrap()
            .execute(
                "VACUUM INTO ?",
                [copy.path().join(crate::FILE_NAME).to_str().unwrap()],
            )
            .unwrap();
        let mut theirs = Replica::new(InlineStorage::open(copy.path()).await.unwrap());
        theirs.rebuild_working_set(true).await.unwrap();
        let expected: Vec<Option<Uuid>> =
            theirs
                .working_set()
                .await
                .unwrap()
                .iter()
                .fold(vec![None], |mut v, (i, u)| {
                    assert_eq!(i, v.len());
                    v.push(Some(u));
                    v
                });

        assert!(s.compact_working_set().unwrap());
        let ours = working_set(&mut s).await;
        assert_eq!(ours, expected);
        assert_eq!(
            ours[1..],
            uuids[..10].iter().map(|u| Some(*u)).collect::<Vec<_>>()[..]
        );
        // The cache is what the file says.
        drop(s);
        let mut s = InlineStorage::open(dir.path()).await.unwrap();
        assert_eq!(working_set(&mut s).await, ours);

        set_status(&mut s, &uuids[20..21], "pending");
        let ws = working_set(&mut s).await;
        assert_eq!(ws.len(), 12);
        assert_eq!(ws[11], Some(uuids[20]));
        assert!(
            !s.compact_working_set().unwrap(),
            "11 entries: nothing to do"
        );
    }
}
