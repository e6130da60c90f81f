//! After the server was rolled back (a restored backup, a failover), this device brings back
//! the keys it holds (docs/RECOVERY.md). `GET /v1/changes` tells when the server was last
//! rolled back; once per rollback the pass sends every keyed task here to
//! `POST /v1/recovery/witness`, in batches, the last one marked complete, and remembers the
//! rollback once the server counts the device as checked in. It does so before it applies the
//! first page that tells of the rollback: that page may carry a task's key from before a move
//! the backup lost, which would replace the newer key this device holds. The server re-binds each key to
//! its task (making the task from this copy if it lost it) and moves its counters past them;
//! what it changed comes back through the change feed like any other change.
use callsign_core::dto::{NewTask, WitnessRequest, WitnessedTask};
use sha2::{Digest, Sha256};

use crate::client::{CallError, Client};
use crate::error::Error;
use crate::model::LocalTask;
use crate::store::Store;

/// The rollback this device last brought its keys back for (`kv`).
pub const WITNESSED: &str = "recovery.witnessed_rollback";
/// Tasks per request.
const BATCH: usize = 500;

/// Whether the device still owes the server its keys for the rollback at `rollback_at`.
pub fn owed(store: &Store, rollback_at: Option<i64>) -> Result<Option<i64>, Error> {
    let Some(at) = rollback_at else {
        return Ok(None);
    };
    let done = store.get(WITNESSED)?;
    Ok((done.as_deref() != Some(at.to_string().as_str())).then_some(at))
}

/// What to send for the rollback at `at`: every keyed task, as a witness.
pub fn witnesses(store: &Store, at: i64) -> Result<Vec<WitnessedTask>, Error> {
    Ok(store
        .keyed_tasks()?
        .into_iter()
        .filter_map(|t| witness(t, at))
        .collect())
}

fn witness(t: LocalTask, at: i64) -> Option<WitnessedTask> {
    let key = t.key?;
    // Its commit links go with it, the newest a create may carry (`validate::commits`).
    let mut commits = t.commits;
    commits.drain(
        ..commits
            .len()
            .saturating_sub(callsign_core::validate::MAX_COMMIT_LINKS),
    );
    let mut w = WitnessedTask {
        idempotency_key: String::new(),
        uuid: t.uuid,
        key,
        previous_keys: t.previous_keys,
        created_by: t.created_by,
        fields: NewTask {
            project: t.project,
            description: t.description,
            notes: t.notes,
            status: Some(t.status),
            tags: t.tags,
            due: t.due,
            priority: t.priority,
            parent: t.parent.map(|p| p.to_string()),
            created_at: Some(t.created_at),
            assignee: t.assignee,
            created_by: None,
            origin: t.origin,
            keep_number: false,
            commits,
        },
    };
    // Named by what it says: a retry of the same witness replays, and devices that hold the
    // task alike share one. A device that holds it otherwise (a move the others never saw,
    // made in the same millisecond as their copy) sends another request, not a reuse of
    // theirs refused as `422 idempotency_key_reused`.
    let digest = Sha256::digest(serde_json::to_vec(&w).unwrap_or_default());
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    w.idempotency_key = format!("witness:{at}:{}:{hex}", t.uuid);
    Some(w)
}

/// Sends `tasks` in batches, the last marked complete; whether the server counts the device
/// as checked in.
pub async fn send(client: &Client, tasks: Vec<WitnessedTask>) -> Result<bool, CallError> {
    let mut chunks: Vec<Vec<WitnessedTask>> = Vec::new();
    let mut tasks = tasks.into_iter().peekable();
    while tasks.peek().is_some() {
        chunks.push(tasks.by_ref().take(BATCH).collect());
    }
    if chunks.is_empty() {
        chunks.push(Vec::new());
    }
    let last = chunks.len() - 1;
    let mut checked_in = false;
    for (i, tasks) in chunks.into_iter().enumerate() {
        let answer = client
            .witness(&WitnessRequest {
                tasks,
                complete: i == last,
            })
            .await?;
        checked_in = answer.checked_in;
    }
    Ok(checked_in)
}
