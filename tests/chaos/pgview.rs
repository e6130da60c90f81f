//! The server's state on PostgreSQL (`migrations/pg`): the allocation tables as on SQLite, and
//! the task store's `tc_tasks`, whose `data` is TaskChampion's task map as a JSON object of
//! strings. Read in one REPEATABLE READ transaction, so the parts agree with each other.
use std::collections::HashMap;

use anyhow::{Context, Result};
use tokio_postgres::NoTls;
use uuid::Uuid;

use crate::view::{KeyRow, Reserved, ServerView, SlotRow, StoreTask};

/// Reads `account`'s state from the schema `url` names.
pub fn load(url: &str, account: i64) -> Result<ServerView> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(read(url, account))
}

async fn read(url: &str, account: i64) -> Result<ServerView> {
    let (mut client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .context("connecting to PostgreSQL to check it")?;
    let connection = tokio::spawn(connection);
    let tx = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    let reserved = tx
        .query(
            "SELECT t.uuid, p.prefix, t.parent_uuid FROM tasks t
             JOIN projects p ON p.id = t.project_id WHERE t.account_id = $1",
            &[&account],
        )
        .await?
        .iter()
        .map(|r| {
            let reserved = Reserved {
                prefix: r.get(1),
                parent: r.get::<_, Option<Uuid>>(2).map(|u| u.to_string()),
            };
            (r.get::<_, Uuid>(0).to_string(), reserved)
        })
        .collect();
    // In the order the server lists a task's previous keys (`pg::alloc::moves`).
    let keys = tx
        .query(
            "SELECT k.task_uuid, p.prefix, k.scope, k.number, k.current, k.in_store FROM keys k
             JOIN projects p ON p.id = k.project_id WHERE k.account_id = $1
             ORDER BY k.assigned_at, k.project_id, k.scope, k.number",
            &[&account],
        )
        .await?
        .iter()
        .map(|r| KeyRow {
            uuid: r.get::<_, Uuid>(0).to_string(),
            prefix: r.get(1),
            scope: r.get(2),
            number: r.get(3),
            current: r.get(4),
            in_store: r.get(5),
        })
        .collect();
    let slots = tx
        .query(
            "SELECT idem_key, task_uuid, op, state, number, response_status::bigint, attempts
             FROM slots WHERE account_id = $1",
            &[&account],
        )
        .await?
        .iter()
        .map(|r| SlotRow {
            idem_key: r.get(0),
            uuid: r.get::<_, Uuid>(1).to_string(),
            op: r.get(2),
            state: r.get(3),
            number: r.get(4),
            response_status: r.get(5),
            attempts: r.get(6),
        })
        .collect();
    let mut store = HashMap::new();
    for r in tx
        .query(
            "SELECT uuid, data FROM tc_tasks WHERE account_id = $1",
            &[&account],
        )
        .await?
    {
        let uuid = r.get::<_, Uuid>(0).to_string();
        let map: HashMap<String, String> = serde_json::from_value(r.get(1))
            .with_context(|| format!("task store data of {uuid}"))?;
        store.insert(uuid, StoreTask::from_map(&map));
    }
    tx.commit().await?;
    drop(client);
    let _ = connection.await;
    Ok(ServerView {
        reserved,
        keys,
        slots,
        store,
    })
}
