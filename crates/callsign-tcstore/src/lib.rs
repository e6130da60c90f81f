//! A TaskChampion [`Storage`] that runs SQLite on the caller's thread.
//!
//! TaskChampion 3.1's `SqliteStorage` runs its connection on a thread of its own behind a
//! channel, so every storage call (about 25 for one created task) is a round trip between two
//! threads, and it prepares each statement anew. On the server that hand-off, not SQLite, was
//! most of the time of a create (see `docs/PERFORMANCE.md`). [`InlineStorage`] does the same
//! work on the thread that owns the replica, with cached prepared statements, and keeps the
//! working set in memory between transactions (TaskChampion reads all of it on every commit).
//!
//! The file is TaskChampion's own: `taskchampion.sqlite3`, created or upgraded by
//! TaskChampion's `SqliteStorage` itself on open, so the schema, the JSON encodings and the
//! schema version are exactly TaskChampion's and Taskwarrior 3 reads the file as its own.
//!
//! Not `Sync`: one owner, like TaskChampion's `Replica`. Writes by another connection (for
//! example Taskwarrior writing into the file) are noticed through `PRAGMA data_version` at the
//! start of every transaction, and the in-memory working set is dropped then.
use std::collections::HashSet;
use std::path::Path;

use async_trait::async_trait;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use taskchampion::storage::{AccessMode, Storage, StorageTxn, TaskMap};
use taskchampion::{Error, Operation, SqliteStorage};
use uuid::Uuid;

type Result<T> = std::result::Result<T, Error>;

/// The file TaskChampion keeps its replica in, inside the replica's directory.
pub const FILE_NAME: &str = "taskchampion.sqlite3";

/// How long a transaction waits for another connection's lock before it fails.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// TaskChampion's working set: element 0 is always `None`, task `i` at index `i`.
type WorkingSet = Vec<Option<Uuid>>;

mod direct;
mod sync;
mod trim;
mod working;

pub use direct::task_data;
pub use sync::Touched;

/// A read-write TaskChampion storage on one SQLite connection used from the owner's thread.
pub struct InlineStorage {
    con: Connection,
    /// The committed working set, with the `data_version` it was read at.
    working_set: Option<CachedWorkingSet>,
    /// The working set's size after its last rebuild here ([`InlineStorage::compact_working_set`]).
    live_at_rebuild: usize,
}

/// The committed working set as of `version` (this connection's `PRAGMA data_version`).
struct CachedWorkingSet {
    version: i64,
    slots: WorkingSet,
    /// The UUIDs in `slots`, built when first needed.
    members: Option<HashSet<Uuid>>,
}

impl InlineStorage {
    /// Opens (creating if missing) the replica in `dir`, at `dir/taskchampion.sqlite3`.
    ///
    /// TaskChampion's own `SqliteStorage` opens the file first, so it creates the schema or
    /// upgrades an older one exactly as TaskChampion does; then this storage takes over.
    pub async fn open(dir: &Path) -> Result<InlineStorage> {
        drop(SqliteStorage::new(dir, AccessMode::ReadWrite, true).await?);
        let con = Connection::open_with_flags(dir.join(FILE_NAME), OpenFlags::default())?;
        con.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))?;
        con.busy_timeout(BUSY_TIMEOUT)?;
        con.set_prepared_statement_cache_capacity(32);
        Ok(InlineStorage {
            con,
            working_set: None,
            live_at_rebuild: 0,
        })
    }

    /// The replica's file (SQLite's own record of it).
    pub fn path(&self) -> Option<&Path> {
        self.con.path().filter(|p| !p.is_empty()).map(Path::new)
    }

    /// How many WAL pages a commit may leave behind before it checkpoints them into the
    /// database (SQLite's default is 1,000).
    pub fn set_wal_autocheckpoint(&self, pages: u32) -> Result<()> {
        self.con.pragma_update(None, "wal_autocheckpoint", pages)?;
        Ok(())
    }

    /// Runs `work` in one write transaction of its own: committed if it succeeds, rolled back
    /// if not.
    fn in_transaction<T>(&mut self, work: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        self.begin()?;
        let res = work(&self.con).and_then(|v| {
            self.con.execute_batch("COMMIT")?;
            Ok(v)
        });
        if res.is_err() {
            let _ = self.con.execute_batch("ROLLBACK");
        }
        res
    }

    /// `BEGIN IMMEDIATE`; drops the cached working set if another connection has committed
    /// since it was read. Returns the `data_version` the transaction sees.
    fn begin(&mut self) -> Result<i64> {
        self.con.execute_batch("BEGIN IMMEDIATE")?;
        let version: i64 = match self.con.query_row("PRAGMA data_version", [], |r| r.get(0)) {
            Ok(v) => v,
            Err(e) => {
                let _ = self.con.execute_batch("ROLLBACK");
                return Err(e.into());
            }
        };
        if self
            .working_set
            .as_ref()
            .is_some_and(|c| c.version != version)
        {
            self.working_set = None;
        }
        Ok(version)
    }
}

#[async_trait]
impl Storage for InlineStorage {
    async fn txn<'a>(&'a mut self) -> Result<Box<dyn StorageTxn + Send + 'a>> {
        let version = self.begin()?;
        Ok(Box::new(Txn {
            con: &mut self.con,
            committed_ws: &mut self.working_set,
            version,
            ws: WsState::Untouched,
            open: true,
        }))
    }
}

/// What a transaction did to the working set, to carry over to the cache on commit.
enum WsState {
    /// Not read nor changed: the cache stays as it is.
    Untouched,
    /// Read (and maybe extended) in this transaction: the cache becomes this on commit.
    Loaded(WorkingSet),
    /// Changed in a way not mirrored here: read again from the database.
    Stale,
}

struct Txn<'a> {
    con: &'a mut Connection,
    committed_ws: &'a mut Option<CachedWorkingSet>,
    version: i64,
    ws: WsState,
    /// Still inside `BEGIN` (rolled back on drop).
    open: bool,
}

impl Txn<'_> {
    fn con(&self) -> Result<&Connection> {
        if self.open {
            Ok(self.con)
        } else {
            Err(Error::Database("transaction already committed".into()))
        }
    }

    fn working_set(&mut self) -> Result<&mut WorkingSet> {
        if !matches!(self.ws, WsState::Loaded(_)) {
            let ws = match (&self.ws, &*self.committed_ws) {
                (WsState::Untouched, Some(cached)) => cached.slots.clone(),
                _ => read_working_set(self.con()?)?,
            };
            self.ws = WsState::Loaded(ws);
        }
        match &mut self.ws {
            WsState::Loaded(ws) => Ok(ws),
            _ => unreachable!("loaded above"),
        }
    }
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if self.open {
            // Nothing of this transaction is kept; the cache was not touched.
            let _ = self.con.execute_batch("ROLLBACK");
        }
    }
}

fn uuid_text(u: Uuid) -> String {
    u.as_hyphenated().to_string()
}

fn parse_uuid(s: &str) -> Result<Uuid> {
    Uuid::parse_str(s).map_err(|e| Error::Database(format!("bad uuid {s:?} in replica: {e}")))
}

fn parse_task(data: &str) -> Result<TaskMap> {
    Ok(serde_json::from_str(data)?)
}

fn parse_op(data: &str) -> Result<Operation> {
    Ok(serde_json::from_str(data)?)
}

/// Column `i` of a row as text, without copying it.
fn text<'r>(row: &'r rusqlite::Row<'_>, i: usize) -> rusqlite::Result<&'r str> {
    Ok(row.get_ref(i)?.as_str()?)
}

fn read_working_set(con: &Connection) -> Result<WorkingSet> {
    let mut q = con.prepare_cached("SELECT id, uuid FROM working_set ORDER BY id ASC")?;
    let rows = q.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
    let mut ws: WorkingSet = vec![None];
    for row in rows {
        let (id, uuid) = row?;
        let id =
            usize::try_from(id).map_err(|_| Error::Database(format!("bad working set id {id}")))?;
        if ws.len() <= id {
            ws.resize(id + 1, None);
        }
        ws[id] = Some(parse_uuid(&uuid)?);
    }
    Ok(ws)
}

fn get_task(con: &Connection, uuid: Uuid) -> Result<Option<TaskMap>> {
    let mut q = con.prepare_cached("SELECT data FROM tasks WHERE uuid = ? LIMIT 1")?;
    let data: Option<String> = q.query_row([uuid_text(uuid)], |r| r.get(0)).optional()?;
    data.map(|d| parse_task(&d)).transpose()
}

fn create_task(con: &Connection, uuid: Uuid) -> Result<bool> {
    let mut q = con.prepare_cached("INSERT OR IGNORE INTO tasks (uuid, data) VALUES (?, '{}')")?;
    Ok(q.execute([uuid_text(uuid)])? > 0)
}

fn set_task(con: &Connection, uuid: Uuid, task: &TaskMap) -> Result<()> {
    let data = serde_json::to_string(task)?;
    let mut q = con.prepare_cached("INSERT OR REPLACE INTO tasks (uuid, data) VALUES (?, ?)")?;
    q.execute(params![uuid_text(uuid), data])?;
    Ok(())
}

/// `set_task` for the owner's path: the row is rewritten in place when it exists (same content
/// as TaskChampion's `INSERT OR REPLACE`, which deletes the row and appends it again, touching
/// the uuid index and two table pages instead of one).
fn update_task(con: &Connection, uuid: Uuid, task: &TaskMap) -> Result<()> {
    let data = serde_json::to_string(task)?;
    let mut q = con.prepare_cached("UPDATE tasks SET data = ? WHERE uuid = ?")?;
    if q.execute(params![data, uuid_text(uuid)])? == 0 {
        con.prepare_cached("INSERT INTO tasks (uuid, data) VALUES (?, ?)")?
            .execute(params![uuid_text(uuid), data])?;
    }
    Ok(())
}

fn delete_task(con: &Connection, uuid: Uuid) -> Result<bool> {
    let mut q = con.prepare_cached("DELETE FROM tasks WHERE uuid = ?")?;
    Ok(q.execute([uuid_text(uuid)])? > 0)
}

fn add_operation(con: &Connection, op: &Operation) -> Result<()> {
    let data = serde_json::to_string(op)?;
    let mut q = con.prepare_cached("INSERT INTO operations (data) VALUES (?)")?;
    q.execute([data])?;
    Ok(())
}

fn insert_working_set(con: &Connection, id: usize, uuid: Uuid) -> Result<()> {
    con.prepare_cached("INSERT INTO working_set (id, uuid) VALUES (?, ?)")?
        .execute(params![id as i64, uuid_text(uuid)])?;
    Ok(())
}

fn ops_query(con: &Connection, sql: &str, arg: Option<String>) -> Result<Vec<Operation>> {
    let mut q = con.prepare_cached(sql)?;
    let mut rows = match arg {
        Some(a) => q.query([a])?,
        None => q.query([])?,
    };
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(parse_op(text(r, 0)?)?);
    }
    Ok(out)
}

fn tasks_query(con: &Connection, sql: &str) -> Result<Vec<(Uuid, TaskMap)>> {
    let mut q = con.prepare_cached(sql)?;
    let mut rows = q.query([])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let uuid = parse_uuid(text(r, 0)?)?;
        out.push((uuid, parse_task(text(r, 1)?)?));
    }
    Ok(out)
}

#[async_trait]
impl StorageTxn for Txn<'_> {
    async fn get_task(&mut self, uuid: Uuid) -> Result<Option<TaskMap>> {
        get_task(self.con()?, uuid)
    }

    async fn get_pending_tasks(&mut self) -> Result<Vec<(Uuid, TaskMap)>> {
        tasks_query(
            self.con()?,
            "SELECT tasks.uuid, tasks.data FROM tasks \
             JOIN working_set ON tasks.uuid = working_set.uuid",
        )
    }

    async fn create_task(&mut self, uuid: Uuid) -> Result<bool> {
        create_task(self.con()?, uuid)
    }

    async fn set_task(&mut self, uuid: Uuid, task: TaskMap) -> Result<()> {
        set_task(self.con()?, uuid, &task)
    }

    async fn delete_task(&mut self, uuid: Uuid) -> Result<bool> {
        delete_task(self.con()?, uuid)
    }

    async fn all_tasks(&mut self) -> Result<Vec<(Uuid, TaskMap)>> {
        tasks_query(self.con()?, "SELECT uuid, data FROM tasks")
    }

    async fn all_task_uuids(&mut self) -> Result<Vec<Uuid>> {
        let con = self.con()?;
        let mut q = con.prepare_cached("SELECT uuid FROM tasks")?;
        let mut rows = q.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push(parse_uuid(text(r, 0)?)?);
        }
        Ok(out)
    }

    async fn base_version(&mut self) -> Result<Uuid> {
        let con = self.con()?;
        let mut q = con.prepare_cached("SELECT value FROM sync_meta WHERE key = 'base_version'")?;
        let v: Option<String> = q.query_row([], |r| r.get(0)).optional()?;
        match v {
            Some(s) => parse_uuid(&s),
            None => Ok(Uuid::nil()),
        }
    }

    async fn set_base_version(&mut self, version: Uuid) -> Result<()> {
        let con = self.con()?;
        let mut q = con.prepare_cached(
            "INSERT OR REPLACE INTO sync_meta (key, value) VALUES ('base_version', ?)",
        )?;
        q.execute([uuid_text(version)])?;
        Ok(())
    }

    async fn get_task_operations(&mut self, uuid: Uuid) -> Result<Vec<Operation>> {
        ops_query(
            self.con()?,
            "SELECT data FROM operations WHERE uuid = ? ORDER BY id ASC",
            Some(uuid_text(uuid)),
        )
    }

    async fn unsynced_operations(&mut self) -> Result<Vec<Operation>> {
        ops_query(
            self.con()?,
            "SELECT data FROM operations WHERE NOT synced ORDER BY id ASC",
            None,
        )
    }

    async fn num_unsynced_operations(&mut self) -> Result<usize> {
        let con = self.con()?;
        let mut q = con.prepare_cached("SELECT count(*) FROM operations WHERE NOT synced")?;
        Ok(q.query_row([], |r| r.get(0))?)
    }

    async fn add_operation(&mut self, op: Operation) -> Result<()> {
        add_operation(self.con()?, &op)
    }

    async fn remove_operation(&mut self, op: Operation) -> Result<()> {
        let con = self.con()?;
        let mut q = con.prepare_cached(
            "SELECT id, data FROM operations WHERE NOT synced ORDER BY id DESC LIMIT 1",
        )?;
        let last: Option<(i64, String)> =
            q.query_row([], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
        if let Some((id, data)) = last {
            if parse_op(&data)? == op {
                con.prepare_cached("DELETE FROM operations WHERE id = ?")?
                    .execute([id])?;
                return Ok(());
            }
        }
        Err(Error::Database(
            "Last operation does not match -- cannot remove".into(),
        ))
    }

    async fn sync_complete(&mut self) -> Result<()> {
        let con = self.con()?;
        con.prepare_cached("UPDATE operations SET synced = true WHERE synced = false")?
            .execute([])?;
        con.prepare_cached(
            "DELETE FROM operations WHERE uuid IN (SELECT operations.uuid FROM operations \
             LEFT JOIN tasks ON operations.uuid = tasks.uuid WHERE tasks.uuid IS NULL)",
        )?
        .execute([])?;
        Ok(())
    }

    async fn get_working_set(&mut self) -> Result<Vec<Option<Uuid>>> {
        Ok(self.working_set()?.clone())
    }

    async fn add_to_working_set(&mut self, uuid: Uuid) -> Result<usize> {
        let next = self.working_set()?.len();
        insert_working_set(self.con()?, next, uuid)?;
        self.working_set()?.push(Some(uuid));
        Ok(next)
    }

    async fn set_working_set_item(&mut self, index: usize, uuid: Option<Uuid>) -> Result<()> {
        let con = self.con()?;
        match uuid {
            Some(u) => con
                .prepare_cached("INSERT OR REPLACE INTO working_set (id, uuid) VALUES (?, ?)")?
                .execute(params![index as i64, uuid_text(u)])?,
            None => con
                .prepare_cached("DELETE FROM working_set WHERE id = ?")?
                .execute([index as i64])?,
        };
        self.ws = WsState::Stale;
        Ok(())
    }

    async fn clear_working_set(&mut self) -> Result<()> {
        self.con()?.execute("DELETE FROM working_set", [])?;
        self.ws = WsState::Loaded(vec![None]);
        Ok(())
    }

    async fn commit(&mut self) -> Result<()> {
        self.con()?.execute_batch("COMMIT")?;
        self.open = false;
        match std::mem::replace(&mut self.ws, WsState::Untouched) {
            WsState::Untouched => {}
            WsState::Loaded(ws) => {
                *self.committed_ws = Some(CachedWorkingSet {
                    version: self.version,
                    slots: ws,
                    members: None,
                })
            }
            WsState::Stale => *self.committed_ws = None,
        }
        Ok(())
    }
}
