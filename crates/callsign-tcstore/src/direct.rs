//! The owner's own path: reads and commits without TaskChampion's `Replica`.
//!
//! [`InlineStorage::commit_operations`] leaves the file exactly as `Replica::commit_operations`
//! does (tasks, working set, operations log), but at a cost that grows with the operations
//! committed: TaskChampion 3.1 reads the whole working set into a `HashSet` on every commit,
//! which on a server holding many pending tasks was a fifth of each commit. Here the working set
//! stays in memory between commits (see the crate docs for when it is read again).
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use taskchampion::storage::TaskMap;
use taskchampion::{Operation, Operations, TaskData};
use uuid::Uuid;

use super::{
    add_operation, create_task, delete_task, get_task, insert_working_set, read_working_set,
    update_task, CachedWorkingSet, InlineStorage, Result,
};

/// TaskChampion has no public constructor for an existing task's `TaskData`; setting each
/// property through `update` builds the same value (the operations it records are dropped).
pub fn task_data(uuid: Uuid, map: TaskMap) -> TaskData {
    let mut scratch = Operations::new();
    let mut task = TaskData::create(uuid, &mut scratch);
    for (property, value) in map {
        task.update(property, Some(value), &mut scratch);
    }
    task
}

/// TaskChampion's rule: a task joins the working set when its status becomes pending or
/// recurring from anything else.
fn joins_working_set(op: &Operation) -> bool {
    let active = |v: &Option<String>| matches!(v.as_deref(), Some("pending" | "recurring"));
    matches!(op, Operation::Update { property, old_value, value, .. }
        if property == "status" && !active(old_value) && active(value))
}

impl InlineStorage {
    /// The task, read outside any transaction (one statement sees one snapshot).
    pub fn get_task_data(&mut self, uuid: Uuid) -> Result<Option<TaskData>> {
        Ok(get_task(&self.con, uuid)?.map(|map| task_data(uuid, map)))
    }

    /// Commits `ops` in one transaction, with the effect of `Replica::commit_operations`.
    /// Nothing is kept if any step fails.
    pub fn commit_operations(&mut self, ops: Operations) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let version = self.begin()?;
        let added = match self.apply(&ops, version) {
            Ok(added) => added,
            Err(e) => {
                let _ = self.con.execute_batch("ROLLBACK");
                return Err(e);
            }
        };
        if let Err(e) = self.con.execute_batch("COMMIT") {
            let _ = self.con.execute_batch("ROLLBACK");
            return Err(e.into());
        }
        // `apply` left the committed working set cached; the new entries join it now.
        if let Some(ws) = self.working_set.as_mut() {
            let members = ws.members.get_or_insert_with(HashSet::new);
            for (id, uuid) in added {
                debug_assert_eq!(id, ws.slots.len());
                ws.slots.push(Some(uuid));
                members.insert(uuid);
            }
        }
        Ok(())
    }

    /// Everything of a commit inside the open transaction; returns the working-set entries
    /// added (index, UUID), for the cache once the commit holds.
    fn apply(&mut self, ops: &Operations, version: i64) -> Result<Vec<(usize, Uuid)>> {
        let con = &self.con;
        // As TaskChampion's `apply_operations`: updates gather per task, written once.
        let mut tasks: HashMap<Uuid, Option<TaskMap>> = HashMap::new();
        for op in ops {
            match op {
                Operation::Create { uuid } => {
                    if let Some(Some(task)) = tasks.remove(uuid) {
                        update_task(con, *uuid, &task)?;
                    }
                    if create_task(con, *uuid)? {
                        // Known empty: the updates that follow need not read it back.
                        tasks.insert(*uuid, Some(TaskMap::new()));
                    }
                }
                Operation::Delete { uuid, .. } => {
                    delete_task(con, *uuid)?;
                    tasks.insert(*uuid, None);
                }
                Operation::Update {
                    uuid,
                    property,
                    value,
                    ..
                } => {
                    let task = match tasks.entry(*uuid) {
                        Entry::Occupied(e) => e.into_mut(),
                        Entry::Vacant(e) => e.insert(get_task(con, *uuid)?),
                    };
                    if let Some(task) = task {
                        match value {
                            Some(v) => task.insert(property.clone(), v.clone()),
                            None => task.remove(property),
                        };
                    }
                }
                Operation::UndoPoint => {}
            }
        }
        for (uuid, task) in tasks {
            if let Some(task) = task {
                update_task(con, uuid, &task)?;
            }
        }

        let ws = match self.working_set.take() {
            Some(ws) => ws,
            None => CachedWorkingSet {
                version,
                slots: read_working_set(con)?,
                members: None,
            },
        };
        let ws = self.working_set.insert(ws);
        let members = ws
            .members
            .get_or_insert_with(|| ws.slots.iter().flatten().copied().collect());
        let mut added = Vec::new();
        let mut joining = HashSet::new();
        for uuid in ops
            .iter()
            .filter(|op| joins_working_set(op))
            .filter_map(Operation::get_uuid)
        {
            if !members.contains(&uuid) && joining.insert(uuid) {
                let id = ws.slots.len() + added.len();
                insert_working_set(con, id, uuid)?;
                added.push((id, uuid));
            }
        }

        for op in ops {
            add_operation(con, op)?;
        }
        Ok(added)
    }
}
