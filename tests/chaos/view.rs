//! What the checker looks at: the server's state (allocation tables and task store) and every
//! device's local database, read once after a campaign into plain values. The server's part
//! comes from the SQLite data dir (here) or from PostgreSQL (`pgview.rs`); the checks run over
//! these values alone, so they are the same for both backends. The campaign's Taskwarrior
//! replica, when it has one, is read the same way (it is TaskChampion's SQLite storage too).
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::types::{Type, Value};
use rusqlite::{Connection, OpenFlags};

use crate::pgview;

/// Where the server kept its data.
#[derive(Debug, Clone)]
pub enum ServerStore {
    /// The embedded SQLite data dir.
    Sqlite(PathBuf),
    /// A `postgres://` URL (a schema of its own) that every node served.
    Postgres(String),
}

/// A task's conflicts as (field, replaced value as compact JSON), oldest first.
pub type Conflicts = Vec<(String, String)>;

/// The conflicts in a task's `conflicts` JSON (the store's property, a device's column).
pub fn conflicts_of(json: Option<&str>) -> Conflicts {
    let list: Vec<serde_json::Value> = json
        .and_then(|j| serde_json::from_str(j).ok())
        .unwrap_or_default();
    list.iter()
        .map(|c| {
            let field = c["field"].as_str().unwrap_or_default().to_owned();
            (field, c["value"].to_string())
        })
        .collect()
}

/// A task as the server's task store holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreTask {
    pub description: String,
    pub notes: String,
    pub status: String,
    pub key: Option<String>,
    /// Its project's prefix (a written key carries its prefix here).
    pub project: String,
    /// Values concurrent edits of the same field replaced.
    pub conflicts: Conflicts,
    /// The member whose token created it (the property `created_by`, stamped by the server).
    pub created_by: Option<String>,
}

impl StoreTask {
    /// From TaskChampion's task map (property → value).
    pub fn from_map(map: &HashMap<String, String>) -> StoreTask {
        StoreTask {
            description: map.get("description").cloned().unwrap_or_default(),
            notes: map.get("notes").cloned().unwrap_or_default(),
            status: map.get("status").cloned().unwrap_or_default(),
            key: map.get("key").cloned(),
            project: map.get("project").cloned().unwrap_or_default(),
            conflicts: conflicts_of(map.get("conflicts").map(String::as_str)),
            created_by: map.get("created_by").cloned(),
        }
    }
}

/// One row of the `keys` table: a key a task has (`current`) or had (a move renumbered it).
/// Rows are never deleted.
#[derive(Debug, Clone)]
pub struct KeyRow {
    pub uuid: String,
    pub prefix: String,
    /// The parent's key path for a subtask's key (`42` for SYN-42.1); empty for a task's.
    pub scope: String,
    pub number: i64,
    pub current: bool,
    pub in_store: bool,
}

impl KeyRow {
    /// The key as the API writes it: `SYN-42`, `SYN-42.1`.
    pub fn key(&self) -> String {
        format!("{}-{}", self.prefix, self.path())
    }

    /// The scope this key's subtasks are numbered in (`42.1` for SYN-42.1).
    pub fn path(&self) -> String {
        if self.scope.is_empty() {
            self.number.to_string()
        } else {
            format!("{}.{}", self.scope, self.number)
        }
    }
}

/// A task UUID the allocation database has reserved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reserved {
    /// The prefix of the project it is in now (a move or its parent's changes it).
    pub prefix: String,
    /// Its parent's UUID, for a subtask.
    pub parent: Option<String>,
}

/// One idempotency slot (settled ones past the window are purged; pending ones never are).
#[derive(Debug, Clone)]
pub struct SlotRow {
    pub idem_key: String,
    pub uuid: String,
    pub op: String,
    pub state: String,
    pub number: Option<i64>,
    pub response_status: Option<i64>,
    pub attempts: i64,
}

/// The server's state for one account.
#[derive(Debug, Default)]
pub struct ServerView {
    /// UUID → its reservation (the `tasks` table).
    pub reserved: HashMap<String, Reserved>,
    /// Every key row, each task's oldest first (the order of its `previous_keys`).
    pub keys: Vec<KeyRow>,
    pub slots: Vec<SlotRow>,
    /// UUID → the task in the task store (TaskChampion's model).
    pub store: HashMap<String, StoreTask>,
}

/// One row of a device's outbox.
#[derive(Debug, Clone)]
pub struct OutboxRow {
    pub uuid: String,
    pub op: String,
    pub state: String,
    pub sent: bool,
    pub tries: i64,
    pub error: Option<String>,
    pub idem_key: String,
    /// The request body (an update's patch, with its `base`).
    pub body: String,
}

/// A task as a device holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceTask {
    /// The key the device shows (`None` before the server gave one).
    pub key: Option<String>,
    /// The keys it had before, oldest first, as the server reported them.
    pub previous_keys: Vec<String>,
    pub parent: Option<String>,
    pub notes: String,
    pub conflicts: Conflicts,
    /// The creating member the server reported (`None` until it did).
    pub created_by: Option<String>,
}

/// A device's local database: its tasks and its outbox.
#[derive(Debug, Default)]
pub struct DeviceView {
    /// UUID → the task.
    pub tasks: HashMap<String, DeviceTask>,
    pub outbox: Vec<OutboxRow>,
}

/// Who each key ever assigned names, asked of the running server after healing
/// (`GET /v1/tasks/{key}`) and of each device's engine (`Engine::get`).
#[derive(Debug, Default, Clone)]
pub struct Resolved {
    /// Key → the UUID and current key the server answered (`None`: not found, or an error).
    pub server: BTreeMap<String, Option<(String, String)>>,
    /// Per device, key → the UUID its engine found.
    pub devices: Vec<BTreeMap<String, Option<String>>>,
}

/// The campaign's Taskwarrior replica (TaskChampion's SQLite storage), read after its last
/// sync: every task it holds, its own and those it pulled.
#[derive(Debug, Default, Clone)]
pub struct TaskwarriorView {
    /// UUID → the task (its `key` is what Taskwarrior shows as the key UDA).
    pub tasks: HashMap<String, StoreTask>,
}

/// Everything the checker reads.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub server: ServerView,
    pub devices: Vec<DeviceView>,
    /// `None` when nobody asked (a snapshot of databases whose server no longer runs).
    pub resolved: Option<Resolved>,
    /// `None` when the campaign ran without a Taskwarrior.
    pub taskwarrior: Option<TaskwarriorView>,
}

/// Reads the server's state for `account` and each device's database.
pub fn load(server: &ServerStore, account: i64, devices: &[PathBuf]) -> Result<Snapshot> {
    let server = match server {
        ServerStore::Sqlite(dir) => load_sqlite(dir, account)?,
        ServerStore::Postgres(url) => pgview::load(url, account)?,
    };
    let devices = devices
        .iter()
        .map(|d| load_device(d))
        .collect::<Result<_>>()?;
    Ok(Snapshot {
        server,
        devices,
        resolved: None,
        taskwarrior: None,
    })
}

/// Reads the Taskwarrior replica in `dir` (closed: nothing writes it any more).
pub fn load_taskwarrior(dir: &Path) -> Result<TaskwarriorView> {
    let tasks = replica_tasks(&dir.join("taskchampion.sqlite3"))?;
    Ok(TaskwarriorView { tasks })
}

/// Every task of a TaskChampion replica's SQLite storage (the server's or Taskwarrior's).
fn replica_tasks(path: &Path) -> Result<HashMap<String, StoreTask>> {
    let replica = open(path)?;
    let mut st = replica.prepare("SELECT uuid, data FROM tasks")?;
    let rows = st.query_map([], |r| Ok((r.get::<_, Value>(0)?, r.get::<_, String>(1)?)))?;
    let mut tasks = HashMap::new();
    for row in rows {
        let (uuid, data) = row?;
        let uuid = uuid_text(uuid)?;
        let map: HashMap<String, String> =
            serde_json::from_str(&data).with_context(|| format!("TaskChampion data of {uuid}"))?;
        tasks.insert(uuid, StoreTask::from_map(&map));
    }
    Ok(tasks)
}

/// The SQLite allocation database in a server data dir.
pub fn sqlite_alloc_db(dir: &Path) -> PathBuf {
    dir.join("callsign.sqlite3")
}

/// An account's TaskChampion replica in a server data dir.
pub fn sqlite_replica_db(dir: &Path, account: i64) -> PathBuf {
    dir.join("accounts")
        .join(account.to_string())
        .join("taskchampion.sqlite3")
}

pub fn device_db(dir: &Path) -> PathBuf {
    dir.join("callsign.sqlite3")
}

fn open(path: &Path) -> Result<Connection> {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", path.display()))
}

/// The server stores UUIDs as 16-byte blobs (rusqlite's `uuid` feature); devices as text.
fn uuid_text(v: Value) -> rusqlite::Result<String> {
    match v {
        Value::Blob(b) => uuid::Uuid::from_slice(&b)
            .map(|u| u.to_string())
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e))),
        Value::Text(t) => Ok(t),
        other => Err(rusqlite::Error::InvalidColumnType(
            0,
            format!("{other:?}"),
            Type::Text,
        )),
    }
}

fn load_sqlite(dir: &Path, account: i64) -> Result<ServerView> {
    let db = open(&sqlite_alloc_db(dir))?;
    let reserved = db
        .prepare(
            "SELECT t.uuid, p.prefix, t.parent_uuid FROM tasks t
             JOIN projects p ON p.id = t.project_id WHERE t.account_id = ?1",
        )?
        .query_map([account], |r| {
            let parent: Option<Value> = r.get(2)?;
            let reserved = Reserved {
                prefix: r.get(1)?,
                parent: parent.map(uuid_text).transpose()?,
            };
            Ok((uuid_text(r.get(0)?)?, reserved))
        })?
        .collect::<rusqlite::Result<_>>()?;
    // In the order the server lists a task's previous keys (`db::slots::keys_of`).
    let keys = db
        .prepare(
            "SELECT k.task_uuid, p.prefix, k.scope, k.number, k.current, k.in_store FROM keys k
             JOIN projects p ON p.id = k.project_id WHERE k.account_id = ?1
             ORDER BY k.assigned_at, k.rowid",
        )?
        .query_map([account], |r| {
            Ok(KeyRow {
                uuid: uuid_text(r.get(0)?)?,
                prefix: r.get(1)?,
                scope: r.get(2)?,
                number: r.get(3)?,
                current: r.get::<_, i64>(4)? == 1,
                in_store: r.get::<_, i64>(5)? == 1,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let slots = db
        .prepare(
            "SELECT idem_key, task_uuid, op, state, number, response_status, attempts
             FROM slots WHERE account_id = ?1",
        )?
        .query_map([account], |r| {
            Ok(SlotRow {
                idem_key: r.get(0)?,
                uuid: uuid_text(r.get(1)?)?,
                op: r.get(2)?,
                state: r.get(3)?,
                number: r.get(4)?,
                response_status: r.get(5)?,
                attempts: r.get(6)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let store = replica_tasks(&sqlite_replica_db(dir, account))?;
    Ok(ServerView {
        reserved,
        keys,
        slots,
        store,
    })
}

fn load_device(dir: &Path) -> Result<DeviceView> {
    let c = open(&device_db(dir))?;
    let tasks = c
        .prepare(
            "SELECT uuid, key, previous_keys, parent, notes, conflicts, created_by FROM tasks",
        )?
        .query_map([], |r| {
            let previous: String = r.get(2)?;
            let previous_keys = serde_json::from_str(&previous)
                .map_err(|e| rusqlite::Error::FromSqlConversionFailure(2, Type::Text, e.into()))?;
            let task = DeviceTask {
                key: r.get(1)?,
                previous_keys,
                parent: r.get(3)?,
                notes: r.get(4)?,
                conflicts: conflicts_of(r.get::<_, Option<String>>(5)?.as_deref()),
                created_by: r.get(6)?,
            };
            Ok((r.get(0)?, task))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let outbox = c
        .prepare(
            "SELECT uuid, op, state, sent, try_count, last_error, idempotency_key, body
             FROM outbox ORDER BY id",
        )?
        .query_map([], |r| {
            Ok(OutboxRow {
                uuid: r.get(0)?,
                op: r.get(1)?,
                state: r.get(2)?,
                sent: r.get::<_, i64>(3)? == 1,
                tries: r.get(4)?,
                error: r.get(5)?,
                idem_key: r.get(6)?,
                body: r.get(7)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(DeviceView { tasks, outbox })
}
