//! What the server needs to take part in TaskChampion's sync protocol with its replica.
//!
//! [`Replica::sync`](taskchampion::Replica::sync) runs over `&mut InlineStorage` (the replica
//! stays with its owner); [`InlineStorage::restate_operations`] makes the log say the whole
//! current state once, before the replica first joins a chain (a log trimmed of old history
//! would otherwise send updates of tasks the chain never saw created); and
//! [`InlineStorage::operations_after`] tells the server which tasks a sync (or anything since
//! a given point) changed.
use std::collections::HashSet;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::params;
use taskchampion::storage::{Storage, StorageTxn};
use taskchampion::Operation;
use uuid::Uuid;

use super::{parse_op, parse_task, parse_uuid, text, InlineStorage, Result};

/// The replica, lent to a [`taskchampion::Replica`] for one sync.
#[async_trait]
impl Storage for &mut InlineStorage {
    async fn txn<'a>(&'a mut self) -> Result<Box<dyn StorageTxn + Send + 'a>> {
        <InlineStorage as Storage>::txn(&mut **self).await
    }
}

/// The tasks touched by operations after a point of the log, and where the log ends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Touched {
    /// Each task once, in the order of its first operation.
    pub uuids: Vec<Uuid>,
    /// The id of the last operation in the log (`0` when it is empty).
    pub last: i64,
}

impl InlineStorage {
    /// Replaces the operations log with one that creates every task as it is now (a `Create`
    /// and an `Update` per property, all unsynced) and forgets the base version, in one
    /// transaction. Returns the id of the last operation written.
    pub fn restate_operations(&mut self, now: DateTime<Utc>) -> Result<i64> {
        self.in_transaction(|con| restate(con, now))
    }

    /// The tasks of the operations after `after` (by log id), and the log's last id.
    pub fn operations_after(&mut self, after: i64) -> Result<Touched> {
        let mut q = self
            .con
            .prepare_cached("SELECT id, data FROM operations WHERE id > ? ORDER BY id")?;
        let mut rows = q.query([after])?;
        let mut seen = HashSet::new();
        let mut out = Touched {
            uuids: Vec::new(),
            last: after,
        };
        while let Some(r) = rows.next()? {
            out.last = r.get(0)?;
            let uuid = match parse_op(text(r, 1)?)? {
                Operation::Create { uuid }
                | Operation::Delete { uuid, .. }
                | Operation::Update { uuid, .. } => uuid,
                Operation::UndoPoint => continue,
            };
            if seen.insert(uuid) {
                out.uuids.push(uuid);
            }
        }
        drop(rows);
        drop(q);
        if out.last == after {
            out.last = self.last_operation()?.max(after);
        }
        Ok(out)
    }

    /// The id of the last operation in the log (`0` when it is empty).
    pub fn last_operation(&self) -> Result<i64> {
        Ok(self
            .con
            .prepare_cached("SELECT coalesce(max(id), 0) FROM operations")?
            .query_row([], |r| r.get(0))?)
    }

    /// The base version (`None` before the replica's first sync).
    pub fn base_version(&self) -> Result<Option<Uuid>> {
        base_version(&self.con)
    }

    /// How many operations wait to be sent to the sync server.
    pub fn unsynced_operations(&self) -> Result<i64> {
        Ok(self
            .con
            .prepare_cached("SELECT count(*) FROM operations WHERE NOT synced")?
            .query_row([], |r| r.get(0))?)
    }
}

pub(super) fn base_version(con: &rusqlite::Connection) -> Result<Option<Uuid>> {
    let mut q = con.prepare_cached("SELECT value FROM sync_meta WHERE key = 'base_version'")?;
    let mut rows = q.query([])?;
    match rows.next()? {
        Some(r) => Ok(Some(parse_uuid(text(r, 0)?)?)),
        None => Ok(None),
    }
}

fn restate(con: &rusqlite::Connection, now: DateTime<Utc>) -> Result<i64> {
    con.execute("DELETE FROM operations", [])?;
    con.execute("DELETE FROM sync_meta WHERE key = 'base_version'", [])?;
    let mut tasks = con.prepare_cached("SELECT uuid, data FROM tasks")?;
    let mut rows = tasks.query([])?;
    let mut insert = con.prepare_cached("INSERT INTO operations (data, synced) VALUES (?, 0)")?;
    while let Some(r) = rows.next()? {
        let uuid = parse_uuid(text(r, 0)?)?;
        let task = parse_task(text(r, 1)?)?;
        insert.execute(params![serde_json::to_string(&Operation::Create { uuid })?])?;
        let mut props: Vec<_> = task.into_iter().collect();
        props.sort();
        for (property, value) in props {
            let op = Operation::Update {
                uuid,
                property,
                old_value: None,
                value: Some(value),
                timestamp: now,
            };
            insert.execute(params![serde_json::to_string(&op)?])?;
        }
    }
    Ok(con
        .prepare_cached("SELECT coalesce(max(id), 0) FROM operations")?
        .query_row([], |r| r.get(0))?)
}
