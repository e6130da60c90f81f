//! An import (`callsign import --from jira FILE`): many tasks from another tracker, each under the
//! UUID and idempotency key the importer derived from its source, saved in one transaction.
//!
//! Importing the same source again queues nothing twice: a task whose UUID names a task here
//! already is left as it is (edited, synced or deleted since), whatever the source says now. A
//! subtask's parent comes before it, in the import or on this device, so the parent's create is
//! queued first and the plan ([`crate::plan`]) holds the subtask's until the parent's is answered.
use std::collections::HashSet;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::edit::insert_local;
use super::types::ImportTask;
use super::Store;
use crate::error::{Error, Result};
use crate::undo::{revert_of_capture, Journal, UndoKind};

impl Store {
    /// Saves each task of `items` not here yet as a capture is saved (its task row and its
    /// `create` outbox row, body as given), in import order, which is capture order; all in
    /// one transaction and one undo step (an `import`: undoing it deletes every task it
    /// saved). Returns the UUIDs saved; the others were here already (or earlier in `items`).
    ///
    /// A subtask's `parent` must be the UUID of an earlier task of `items` or of a task here;
    /// otherwise the import is refused as a whole ([`Error::Invalid`], `task N: ...` naming the
    /// first such task by its 1-based position) and nothing is written.
    pub fn import_local(&mut self, items: &[ImportTask], now: DateTime<Utc>) -> Result<Vec<Uuid>> {
        let tx = self.conn.transaction()?;
        // Every UUID up to the current item: the parents a subtask may have in the import.
        let mut earlier: HashSet<Uuid> = HashSet::with_capacity(items.len());
        let mut new = Vec::with_capacity(items.len());
        {
            let mut here =
                tx.prepare_cached("SELECT EXISTS (SELECT 1 FROM tasks WHERE uuid = ?1)")?;
            let mut is_here =
                |u: &Uuid| -> Result<bool> { Ok(here.query_row([u.to_string()], |r| r.get(0))?) };
            for (i, item) in items.iter().enumerate() {
                if !earlier.contains(&item.uuid) && !is_here(&item.uuid)? {
                    if let Some(p) = item.body.parent.as_deref() {
                        let bad =
                            |why: &str| Error::Invalid(format!("task {}: parent {p} {why}", i + 1));
                        let parent = Uuid::parse_str(p).map_err(|_| bad("is not a UUID"))?;
                        if !earlier.contains(&parent) && !is_here(&parent)? {
                            return Err(bad(
                                "is neither an earlier task of the import nor a task here",
                            ));
                        }
                    }
                    new.push(item);
                }
                earlier.insert(item.uuid);
            }
        }
        let step = super::undo::step_for(&tx, Journal::Step(UndoKind::Import))?;
        for item in &new {
            insert_local(&tx, item.uuid, &item.idempotency_key, &item.body, now)?;
            if let Some(step) = step {
                super::undo::record(&tx, step, item.uuid, &revert_of_capture(), now)?;
            }
        }
        super::undo::prune(&tx)?;
        tx.commit()?;
        Ok(new.iter().map(|item| item.uuid).collect())
    }
}
