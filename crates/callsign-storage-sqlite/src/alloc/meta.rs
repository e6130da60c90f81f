//! The allocation database's identity (migration 0004).
use rusqlite::Connection;

use super::Result;
pub use callsign_storage::InstanceId;

pub fn instance_id(conn: &Connection) -> Result<InstanceId> {
    Ok(conn.query_row(
        "SELECT instance_id FROM server_meta WHERE id = 1",
        [],
        |r| r.get(0),
    )?)
}

/// The ids of every account.
pub fn account_ids(conn: &Connection) -> Result<Vec<i64>> {
    let mut st = conn.prepare("SELECT id FROM accounts ORDER BY id")?;
    let rows = st.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The key change-feed cursors are enciphered with (migration 0005).
pub fn cursor_key(conn: &Connection) -> Result<Vec<u8>> {
    Ok(
        conn.query_row("SELECT cursor_key FROM server_meta WHERE id = 1", [], |r| {
            r.get(0)
        })?,
    )
}
