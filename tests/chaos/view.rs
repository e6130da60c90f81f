//! What the checker looks at: the server's state (allocation tables and task store) and every
//! device's local database, read once after a campaign into plain values. The server's part
//! comes from the SQLite data dir (here) or from PostgreSQL (`pgview.rs`); the checks run over
//! these values alone, so they are the same for both backends.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rusqlite::types::Value;
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

/// A task as the server's task store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreTask {
    pub description: String,
    pub status: String,
    pub key: Option<String>,
}

impl StoreTask {
    /// From TaskChampion's task map (property → value).
    pub fn from_map(map: &HashMap<String, String>) -> StoreTask {
        StoreTask {
            description: map.get("description").cloned().unwrap_or_default(),
            status: map.get("status").cloned().unwrap_or_default(),
            key: map.get("key").cloned(),
        }
    }
}

/// One row of the `keys` table (top-level scope only: the campaign makes no subtasks).
#[derive(Debug, Clone)]
pub struct KeyRow {
    pub uuid: String,
    pub prefix: String,
    pub number: i64,
    pub current: bool,
    pub in_store: bool,
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
    /// UUID → the prefix of the project it was reserved in (the `tasks` table).
    pub reserved: HashMap<String, String>,
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
}

/// A device's local database: its tasks' keys and its outbox.
#[derive(Debug, Default)]
pub struct DeviceView {
    /// UUID → the key the device shows (`None` before the server gave one).
    pub tasks: HashMap<String, Option<String>>,
    pub outbox: Vec<OutboxRow>,
}

/// Everything the checker reads.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub server: ServerView,
    pub devices: Vec<DeviceView>,
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
    Ok(Snapshot { server, devices })
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
            rusqlite::types::Type::Text,
        )),
    }
}

fn load_sqlite(dir: &Path, account: i64) -> Result<ServerView> {
    let db = open(&sqlite_alloc_db(dir))?;
    let reserved = db
        .prepare(
            "SELECT t.uuid, p.prefix FROM tasks t JOIN projects p ON p.id = t.project_id
             WHERE t.account_id = ?1",
        )?
        .query_map([account], |r| Ok((uuid_text(r.get(0)?)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let keys = db
        .prepare(
            "SELECT k.task_uuid, p.prefix, k.number, k.current, k.in_store FROM keys k
             JOIN projects p ON p.id = k.project_id WHERE k.account_id = ?1 AND k.scope = ''",
        )?
        .query_map([account], |r| {
            Ok(KeyRow {
                uuid: uuid_text(r.get(0)?)?,
                prefix: r.get(1)?,
                number: r.get(2)?,
                current: r.get::<_, i64>(3)? == 1,
                in_store: r.get::<_, i64>(4)? == 1,
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
    let replica = open(&sqlite_replica_db(dir, account))?;
    let mut st = replica.prepare("SELECT uuid, data FROM tasks")?;
    let rows = st.query_map([], |r| Ok((r.get::<_, Value>(0)?, r.get::<_, String>(1)?)))?;
    let mut store = HashMap::new();
    for row in rows {
        let (uuid, data) = row?;
        let uuid = uuid_text(uuid)?;
        let map: HashMap<String, String> =
            serde_json::from_str(&data).with_context(|| format!("TaskChampion data of {uuid}"))?;
        store.insert(uuid, StoreTask::from_map(&map));
    }
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
        .prepare("SELECT uuid, key FROM tasks")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let outbox = c
        .prepare(
            "SELECT uuid, op, state, sent, try_count, last_error, idempotency_key
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
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(DeviceView { tasks, outbox })
}
