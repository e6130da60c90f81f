//! The bound under the server's create path on SQLite: a TaskChampion replica alone, doing
//! what the server's task store does per task, on TaskChampion's own `Replica` and on
//! `callsign_tcstore::InlineStorage` (what the server uses).
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::server::PREFIX;

/// A TaskChampion replica as the bound figures drive it.
trait Replica {
    async fn get(&mut self, uuid: uuid::Uuid) -> Result<Option<taskchampion::TaskData>>;
    async fn commit(&mut self, ops: taskchampion::Operations) -> Result<()>;
}

impl Replica for taskchampion::Replica<taskchampion::SqliteStorage> {
    async fn get(&mut self, uuid: uuid::Uuid) -> Result<Option<taskchampion::TaskData>> {
        Ok(self.get_task_data(uuid).await?)
    }
    async fn commit(&mut self, ops: taskchampion::Operations) -> Result<()> {
        Ok(self.commit_operations(ops).await?)
    }
}

impl Replica for callsign_tcstore::InlineStorage {
    async fn get(&mut self, uuid: uuid::Uuid) -> Result<Option<taskchampion::TaskData>> {
        Ok(self.get_task_data(uuid)?)
    }
    async fn commit(&mut self, ops: taskchampion::Operations) -> Result<()> {
        Ok(self.commit_operations(ops)?)
    }
}

/// Which replica a bound figure measures.
#[derive(Clone, Copy)]
pub enum Storage {
    /// TaskChampion 3.1's `Replica` on its `SqliteStorage` (what the server used before).
    TaskChampion,
    /// The server's `callsign_tcstore::InlineStorage`, used directly as the server does.
    Inline,
}

/// The bound under the server's create path: a TaskChampion replica alone, doing what the
/// server does per task (create with entry, modified, description, status, project; then a
/// second commit writing `key`), in groups of `group` tasks per commit, as the server's group
/// commit does. Returns µs per task.
pub async fn taskchampion_alone(storage: Storage, n: usize, group: usize) -> Result<f64> {
    let dir = tempfile::tempdir()?;
    match storage {
        Storage::TaskChampion => {
            use taskchampion::storage::AccessMode;
            let s =
                taskchampion::SqliteStorage::new(dir.path(), AccessMode::ReadWrite, true).await?;
            per_task(&mut taskchampion::Replica::new(s), n, group).await
        }
        Storage::Inline => {
            let mut s = callsign_tcstore::InlineStorage::open(dir.path()).await?;
            per_task(&mut s, n, group).await
        }
    }
}

async fn per_task(replica: &mut impl Replica, n: usize, group: usize) -> Result<f64> {
    use taskchampion::{Operations, TaskData};
    let t = Instant::now();
    let mut made = 0;
    while made < n {
        let k = group.min(n - made);
        let uuids: Vec<uuid::Uuid> = (0..k).map(|_| uuid::Uuid::new_v4()).collect();
        let mut ops = Operations::new();
        for (i, u) in uuids.iter().enumerate() {
            // The server checks first that the UUID is new.
            if replica.get(*u).await?.is_some() {
                bail!("uuid collision");
            }
            let mut task = TaskData::create(*u, &mut ops);
            let now = Some("1700000000".to_owned());
            task.update("entry", now.clone(), &mut ops);
            task.update("modified", now, &mut ops);
            task.update("description", Some(format!("task {}", made + i)), &mut ops);
            task.update("status", Some("pending".into()), &mut ops);
            task.update("project", Some(PREFIX.into()), &mut ops);
        }
        replica.commit(ops).await?;
        let mut ops = Operations::new();
        for (i, u) in uuids.iter().enumerate() {
            let mut task = replica.get(*u).await?.context("created above")?;
            task.update("key", Some(format!("{PREFIX}-{}", made + i + 1)), &mut ops);
        }
        replica.commit(ops).await?;
        made += k;
    }
    Ok(t.elapsed().as_secs_f64() * 1e6 / n as f64)
}
