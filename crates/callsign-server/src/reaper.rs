//! The reaper settles what a crash left behind, every `--reaper-interval` (default 60 s). First
//! it derives the idempotency window in force (`callsign_storage::window::derive`, pure: from
//! the p99 retry span and the late retries that phase 1 records) and stores it in the
//! allocation database, so restarts and nodes agree ([`update_window`]). Then:
//!
//! - a pending create slot whose task is in TaskChampion is committed exactly as phase 2 does
//!   (same function, same transaction shape), so the number is the one a retry would get;
//! - a pending slot whose task never reached the store, older than the idempotency window, is
//!   marked failed (and its UUID reservation released), consuming no number;
//! - a pending update slot whose patch the store already shows is committed; one that does not
//!   show it is failed after the window (re-applying an old patch could undo a newer one);
//! - a committed key missing from its TaskChampion task is written there;
//! - settled slots older than the idempotency window in force are purged, in batches of
//!   [`PURGE_BATCH`] (each its own short transaction), leaving a tombstone for the window's
//!   evidence period ([`callsign_storage::AllocStore::purge_settled`]);
//! - invite codes a week past their expiry are deleted ([`callsign_storage::rows::INVITE_KEPT_MS`]).
//!
//! It claims each slot's idempotency key like a request does, so it never runs beside a
//! request for the same slot; every step checks the slot is still pending in the transaction
//! that settles it, so running it twice, or beside requests, gives the same result.
//!
//! A pending move is settled like any update: the store's `project` shows whether it was
//! applied, and the commit gives the task and its subtasks their new keys as phase 2 would; the
//! keys it leaves unwritten are written on the next pass, as are those of a rename that a crash
//! interrupted (`keys.in_store`).
use std::collections::BTreeMap;
use std::time::Duration;

use callsign_core::dto::TaskPatch;

use crate::crash;
use crate::error::ApiResult;
use crate::protocol::write_keys;
use crate::state::AppState;
use callsign_storage::{now_ms, Slot};
use callsign_storage::{Commit, Op, Reserved};

/// Pending slots younger than this are left to the request that made them.
const GRACE_MS: i64 = 1_000;
const BATCH: usize = 1_000;
/// Settled slots purged per transaction, so the writer is never held long.
pub const PURGE_BATCH: usize = 500;
/// Purge transactions per pass at most (the rest waits for the next pass).
const PURGE_BATCHES: usize = 40;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub committed: u64,
    pub failed: u64,
    pub keys_repaired: u64,
    pub purged: u64,
    pub invites_purged: u64,
}

/// Runs the reaper every `interval` until the runtime shuts down.
pub fn spawn(state: AppState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(state.config.reaper_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tick.tick().await;
            match run_once(&state).await {
                Ok(r) if r != Report::default() => tracing::info!(?r, "reaper settled"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "reaper pass failed; will retry"),
            }
        }
    })
}

/// One pass.
pub async fn run_once(state: &AppState) -> ApiResult<Report> {
    pass(state, GRACE_MS).await
}

/// A pass that also settles the pending slots younger than `GRACE_MS`: right after a
/// recovery ends, the creates it held back are numbered now rather than at their devices'
/// next retry (a request still working on one holds its claim, and the pass leaves it).
pub async fn run_after_recovery(state: &AppState) -> ApiResult<Report> {
    pass(state, 0).await
}

async fn pass(state: &AppState, grace_ms: i64) -> ApiResult<Report> {
    let mut report = Report::default();
    let now = now_ms();
    let window = update_window(state, now).await?.ms;
    // First, so that the slots a recovery held back are numbered in this pass.
    crate::recovery::check_reached(state).await?;
    let (_, recovering) = crate::recovery::end_when_due(state, now).await?;
    state.metrics.recovering(recovering.len());
    if let Some(first) = recovering.first() {
        let prefixes: Vec<String> = recovering
            .iter()
            .map(|r| format!("{}:{}", r.account, r.prefix))
            .collect();
        tracing::warn!(
            projects = %prefixes.join(" "),
            reason = first.reason.as_str(),
            "recovering after a rollback: these projects number no new task until the team's \
             devices have checked in or the grace period ends (`callsign-server recovery \
             status`, docs/RECOVERY.md)"
        );
    }
    let pending = state.alloc.pending_slots(now - grace_ms, BATCH).await?;
    for slot in pending {
        let expired = slot.created_at < now.saturating_sub(window);
        match settle(state, slot, expired).await? {
            Settled::Committed => report.committed += 1,
            Settled::Failed => report.failed += 1,
            Settled::Left => {}
        }
    }
    report.keys_repaired = repair_keys(state).await?;
    report.purged = purge(state, now, window).await?;
    report.invites_purged = state
        .alloc
        .purge_invites(now - callsign_storage::rows::INVITE_KEPT_MS)
        .await?;
    state.metrics.reaped("committed", report.committed);
    state.metrics.reaped("failed", report.failed);
    state.metrics.reaped("key_written", report.keys_repaired);
    state.metrics.reaped("purged", report.purged);
    if let Some(dir) = state.config.database.data_dir().map(|d| d.to_owned()) {
        if let Ok((allocation, replicas)) =
            tokio::task::spawn_blocking(move || callsign_storage_sqlite::datadir::sizes(&dir)).await
        {
            state.metrics.database_sizes(allocation, replicas);
        }
    }
    Ok(report)
}

/// Derives the window in force from the evidence of the period (`callsign_storage::window`), stores it
/// in the allocation database (every node reads the same one) and in the state.
pub async fn update_window(
    state: &AppState,
    now: i64,
) -> ApiResult<callsign_storage::window::Window> {
    let setting = state.config.idempotency_window;
    let current = state.window().ms;
    let since = now.saturating_sub(setting.period().as_millis() as i64);
    let w = state
        .alloc
        .update_window(setting, current, since, now)
        .await?;
    state.set_window(w);
    state.metrics.window(&w);
    Ok(w)
}

/// Purges settled slots older than the window, and tombstones past the evidence period.
async fn purge(state: &AppState, now: i64, window: i64) -> ApiResult<u64> {
    let before = now.saturating_sub(window);
    let mut purged = 0;
    for _ in 0..PURGE_BATCHES {
        let n = state.alloc.purge_settled(before, PURGE_BATCH, now).await?;
        purged += n as u64;
        if n < PURGE_BATCH {
            break;
        }
    }
    let period = state.config.idempotency_window.period();
    let forget = now.saturating_sub(i64::try_from(period.as_millis()).unwrap_or(i64::MAX));
    state
        .alloc
        .forget_purged(forget, PURGE_BATCH * PURGE_BATCHES)
        .await?;
    Ok(purged)
}

enum Settled {
    Committed,
    Failed,
    Left,
}

async fn settle(state: &AppState, slot: Slot, expired: bool) -> ApiResult<Settled> {
    let Some(_claim) = state.alloc.claim(slot.account_id, &slot.idem_key).await? else {
        return Ok(Settled::Left);
    };
    let account = slot.account_id;
    let snap = state
        .tasks
        .get(account, vec![slot.task_uuid])
        .await?
        .pop()
        .flatten();
    crash::point(crash::REAPER_AFTER_TASK_CHECK);
    let idem = slot.idem_key.clone();
    let at = Reserved {
        slot: slot.id,
        project: None,
    };
    let now = now_ms();
    let ready = match (&snap, slot.op.as_str()) {
        (Some(_), "create") => true,
        (Some(s), _) => serde_json::from_str::<TaskPatch>(&slot.request)
            .map(|p| s.reflects(&p))
            .unwrap_or(false),
        (None, _) => false,
    };
    if ready {
        let snap = snap.expect("ready implies a snapshot");
        let op = if slot.op == "create" {
            Op::Create
        } else {
            Op::Update
        };
        let work = vec![Commit {
            idem,
            at,
            snapshot: snap,
        }];
        let reply = match state
            .alloc
            .commit(account, op, work, now, crate::protocol::render())
            .await?
            .pop()
            .ok_or_else(|| callsign_storage::Error::CommitFailed("no answer".into()))?
        {
            // Its project numbers nothing until recovery ends: left pending till then.
            Err(callsign_storage::Error::Recovering { .. }) => return Ok(Settled::Left),
            r => r?,
        };
        if reply.replayed {
            return Ok(Settled::Left);
        }
        state.feed_changed(account).await;
        if let Ok(task) = serde_json::from_str::<callsign_core::dto::Task>(&reply.body) {
            if let Some(key) = task.key {
                write_keys(state, account, vec![(task.uuid, key)]).await?;
            }
        }
        return Ok(Settled::Committed);
    }
    if !expired {
        return Ok(Settled::Left);
    }
    let failed = state
        .alloc
        .fail_slot(account, &idem, slot.task_uuid, now)
        .await?;
    Ok(if failed {
        Settled::Failed
    } else {
        Settled::Left
    })
}

/// Writes committed keys that never reached their TaskChampion task.
async fn repair_keys(state: &AppState) -> ApiResult<u64> {
    let before = now_ms() - GRACE_MS;
    let missing = state.alloc.keys_not_in_store(before, BATCH).await?;
    let mut by_account: BTreeMap<i64, Vec<(uuid::Uuid, String)>> = BTreeMap::new();
    for (account, uuid, key) in missing {
        by_account.entry(account).or_default().push((uuid, key));
    }
    let mut n = 0;
    for (account, keys) in by_account {
        n += keys.len() as u64;
        write_keys(state, account, keys).await?;
    }
    Ok(n)
}

/// A reaper interval of zero would spin; the command line enforces at least this.
pub const MIN_INTERVAL: Duration = Duration::from_millis(50);
