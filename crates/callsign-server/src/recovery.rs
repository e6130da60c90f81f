//! Recovery after a rollback, as the running server sees it (docs/RECOVERY.md): which devices
//! have checked in, when a project's recovery ends by itself, and the notice every sync answer
//! carries so that devices bring back their keys.
//!
//! - **Check-ins.** A token read from the database records when it was used, at most once an
//!   hour ([`seen`](crate::checkins::seen)); `POST /v1/recovery/witness` records that its
//!   device brought back its keys.
//! - **Ending.** Each reaper pass ([`end_when_due`]) ends an account's recovery once every
//!   device active in the [`active`](crate::checkins::Settings::active) period before the
//!   backup has checked in since the rollback, or once it has lasted
//!   [`grace`](crate::checkins::Settings::grace). Ending it logs what the recovery could not
//!   bring back ([`callsign_storage::RecoveryReport`]) and publishes it on `/metrics`.
//! - **Notice.** `GET /v1/changes` answers carry `rollback_at` for 90 days after a rollback
//!   ([`rollback_at`](crate::checkins::Checkins::rollback_at), read at most every few seconds).
//! - **Rollbacks nobody declared.** A feed position this server has given out is a witness:
//!   the feed never moves back. A device's cursor past the feed's end ([`check_cursor`]), or
//!   a position this node served that the database no longer reaches ([`check_reached`], each
//!   reaper pass: a PostgreSQL node after a failover to a standby that was behind), means the
//!   database was rolled back: the account enters recovery at once ([`detected`]).
use std::collections::BTreeMap;

use callsign_core::ErrorCode;
use callsign_storage::{now_ms, AccountId, RecoveringRow, RecoveryReason};

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Checks a device's feed position against the feed: past its end, the database was rolled
/// back since this server gave the cursor out. The account enters recovery, and the answer is
/// `400 invalid_cursor`, on which the device reads the feed from its start, learns of the
/// rollback and brings back its keys.
pub async fn check_cursor(state: &AppState, account: AccountId, seq: i64) -> ApiResult<()> {
    if state.checkins.reached_of(account).is_some_and(|r| seq <= r) {
        return Ok(());
    }
    let end = state.alloc.feed_end(account).await?;
    if seq <= end {
        state.checkins.reached(account, end);
        return Ok(());
    }
    detected(
        state,
        account,
        &format!("a device's cursor is at feed position {seq}, past the feed's end {end}"),
    )
    .await?;
    Err(ApiError::new(
        ErrorCode::InvalidCursor,
        "this server's history is behind what this device has seen: its database was rolled \
         back (a restored backup or a failover). Read the feed from its start; the device's \
         keys go back to the server",
    ))
}

/// Each reaper pass: a feed position this node gave out that the database no longer reaches
/// means the database was rolled back under it (a failover to a standby that was behind).
/// Nothing to check on SQLite: its data dir is this process's alone (`datadir::lock`), and a
/// restore needs the server stopped.
pub async fn check_reached(state: &AppState) -> callsign_storage::Result<()> {
    if state.config.database.data_dir().is_some() {
        return Ok(());
    }
    for (account, seq) in state.checkins.reached_all() {
        let end = state.alloc.feed_end(account).await?;
        if end < seq {
            detected(
                state,
                account,
                &format!("this node served feed position {seq}; the feed now ends at {end}"),
            )
            .await?;
            state.checkins.reset_reached(account, end);
        }
    }
    Ok(())
}

/// A rollback nobody declared: `account` enters recovery now (docs/RECOVERY.md).
pub async fn detected(
    state: &AppState,
    account: AccountId,
    why: &str,
) -> callsign_storage::Result<()> {
    let now = now_ms();
    let rows = state
        .alloc
        .start_recovery(Some(account), RecoveryReason::Detected, now)
        .await?;
    state.checkins.rollback_changed(now);
    let prefixes: Vec<&str> = rows
        .iter()
        .filter(|r| r.account == account)
        .map(|r| r.prefix.as_str())
        .collect();
    tracing::error!(
        account,
        projects = %prefixes.join(" "),
        why,
        "the database was rolled back without a restore or `recovery start`: its projects \
         recover now, numbering nothing until the team's devices have brought back their keys \
         (docs/RECOVERY.md)"
    );
    Ok(())
}

/// Why an account's recovery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Every device waited for checked in.
    CheckedIn,
    /// The grace period ran out.
    Grace,
}

/// Ends the recoveries that are due (see the module doc); returns the accounts ended, why,
/// and the projects that remain recovering.
pub async fn end_when_due(
    state: &AppState,
    now: i64,
) -> callsign_storage::Result<(Vec<(AccountId, Ended)>, Vec<RecoveringRow>)> {
    let alloc = &*state.alloc;
    let rows = alloc.recovering().await?;
    if rows.is_empty() {
        return Ok((Vec::new(), rows));
    }
    let Some(rollback) = alloc.last_rollback().await? else {
        return Ok((Vec::new(), rows));
    };
    let settings = state.config.recovery;
    let mut by_account: BTreeMap<AccountId, i64> = BTreeMap::new();
    for r in &rows {
        let since = by_account.entry(r.account).or_insert(r.since);
        *since = (*since).min(r.since);
    }
    let taken = rollback.taken_at.unwrap_or(rollback.at);
    let active_since = taken.saturating_sub(settings.active.as_millis() as i64);
    let mut ended = Vec::new();
    for (account, since) in by_account {
        let why = if now.saturating_sub(since) >= settings.grace.as_millis() as i64 {
            Ended::Grace
        } else if alloc
            .unwitnessed(account, active_since, rollback.at)
            .await?
            .is_empty()
        {
            Ended::CheckedIn
        } else {
            continue;
        };
        alloc.end_recovery(Some(account), None).await?;
        let report = alloc.recovery_report(Some(account)).await?;
        let lost: Vec<&str> = report.lost.iter().map(|l| l.key.as_str()).collect();
        let clashes: Vec<String> = report
            .clashes
            .iter()
            .map(|c| {
                format!(
                    "{} held by {} claimed by {}",
                    c.key, c.held_by, c.claimed_by
                )
            })
            .collect();
        tracing::warn!(
            account,
            why = ?why,
            lost = %lost.join(" "),
            clashes = %clashes.join("; "),
            "recovery ended: numbering resumes after every key the devices brought back; the \
             lost numbers (handed out before the rollback, brought back by no device) are never \
             handed out again"
        );
        state.metrics.recovery_report(account, &report);
        ended.push((account, why));
    }
    let rows = if ended.is_empty() {
        rows
    } else {
        alloc.recovering().await?
    };
    Ok((ended, rows))
}
