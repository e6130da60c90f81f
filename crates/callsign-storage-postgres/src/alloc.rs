//! [`AllocStore`] on PostgreSQL, for any number of server nodes on one database.
//!
//! - **Claims are leases on the slot row** (`claimed_by`, `claimed_until`), taken with a
//!   conditional UPDATE in phase 1's transaction (or, for a new key, by inserting the slot
//!   with the lease): while another node's lease holds, the key is `409 request_in_progress`.
//!   The reaper takes the same lease (`FOR UPDATE SKIP LOCKED`). A lease is released when its
//!   [`Claim`] is dropped, cleared by the commit, and lapses after its term ([`LEASE`] by default) if its node died.
//!   A slow node whose lease lapsed is still safe: phase 2 re-reads the slot under a row lock
//!   and settles nothing that is no longer pending.
//! - **Numbers**: the counter row is bumped (`INSERT … ON CONFLICT … DO UPDATE SET last =
//!   last + 1 RETURNING last`) inside the transaction that inserts the key and commits the
//!   slot, under READ COMMITTED; its row lock is held to COMMIT, and an abort takes the number
//!   back (never a sequence: `nextval` is not rolled back).
//! - **The change feed** is numbered per account inside the writing transaction: phase 2
//!   locks the account row first (`feed_last`), so feed numbers of an account commit in
//!   order and a reader that sees number `n` already sees every smaller one. Locking the
//!   account first also orders every lock phase 2 takes, so two commits never deadlock.
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use callsign_core::dto::{Member, Project};
use callsign_core::{MemberName, Prefix, Role};
use deadpool_postgres::{GenericClient, Pool, Transaction};
use tokio_postgres::Row;
use uuid::Uuid;

use crate::error::{DbError, Result};
use callsign_storage::rows::{hash_token, new_token};
use callsign_storage::window::{is_late, Basis, Evidence, Setting, Window};
use callsign_storage::{
    now_ms, AccountId, AddMember, Caller, ChangeRow, DeviceRow, InstanceId, KeyRow, MemberRow,
    NewAccount, NewInvite, RecoveringRow, RecoveryReason, RecoveryReport, Redeem, RemoveMember,
    Rollback, Slot, SlotState,
};
use callsign_storage::{
    AllocStore, Claim, Commit, KeyLookup, Meta, Mutation, Op, Phase1, Refusal, Renamed, Render,
    Reply, Reserved, TaskMeta,
};

mod batch;
mod imports;
mod members;
mod moves;
mod recovery;
mod renames;
mod witness;

/// How long a node's claim on a slot holds, by default, if the node never releases it (it
/// died): the longest a retry of that key answers `409 request_in_progress` after a node loss.
pub const LEASE: Duration = Duration::from_secs(30);

/// Serializes window updates from several nodes' reapers.
const WINDOW_LOCK: i64 = 0x4341_4c4c_5749_4e44;

/// The allocation store on PostgreSQL.
#[derive(Clone)]
pub struct PgAlloc {
    pool: Pool,
    /// This node's name on the leases it takes.
    node: Arc<str>,
    /// How long a lease holds unless released.
    lease_ms: i64,
}

impl PgAlloc {
    pub fn new(pool: Pool, lease: Duration) -> PgAlloc {
        let id: [u8; 6] = rand::random();
        PgAlloc {
            pool,
            node: format!("{}-{}", std::process::id(), hex::encode(id)).into(),
            lease_ms: i64::try_from(lease.as_millis()).unwrap_or(i64::MAX),
        }
    }

    fn lease_until(&self, now: i64) -> i64 {
        now.saturating_add(self.lease_ms)
    }

    /// This node's name on leases.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The leases this node holds on `slots`, released together when the last claim on
    /// them is dropped (one statement for a whole batch).
    fn leases(&self, slots: Vec<i64>) -> Arc<Lease> {
        Arc::new(Lease {
            pool: self.pool.clone(),
            node: self.node.clone(),
            slots,
        })
    }
}

/// Held leases; dropping them releases the slots at once (off the caller's path). A slot
/// that phase 2 committed was released by its commit already.
struct Lease {
    pool: Pool,
    node: Arc<str>,
    slots: Vec<i64>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.slots.is_empty() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return; // it lapses after LEASE
        };
        let (pool, node) = (self.pool.clone(), self.node.clone());
        let slots = std::mem::take(&mut self.slots);
        rt.spawn(async move {
            if let Ok(c) = pool.get().await {
                let _ = c
                    .execute(
                        "UPDATE slots SET claimed_by = NULL, claimed_until = NULL
                         WHERE id = ANY($1) AND claimed_by = $2",
                        &[&slots, &&*node],
                    )
                    .await;
            }
        });
    }
}

const SLOT_COLS: &str = "id, account_id, idem_key, fingerprint, op, task_uuid, request, state, \
                         response_status, response_body, attempts, created_at";

fn slot_of(r: &Row) -> Slot {
    let state: String = r.get(7);
    let status: Option<i32> = r.get(8);
    Slot {
        id: r.get(0),
        account_id: r.get(1),
        idem_key: r.get(2),
        fingerprint: r.get(3),
        op: r.get(4),
        task_uuid: r.get(5),
        request: r.get(6),
        state: match state.as_str() {
            "committed" => SlotState::Committed,
            "failed" => SlotState::Failed,
            _ => SlotState::Pending,
        },
        response_status: status.and_then(|s| u16::try_from(s).ok()),
        response_body: r.get(9),
        attempts: r.get(10),
        created_at: r.get(11),
    }
}

/// How phase 1 left one mutation.
enum Decided {
    /// A committed slot's stored answer.
    Replay(Reply),
    Refused(Refusal),
    /// Go on, holding the lease on this slot.
    Proceed(Reserved),
}

fn in_progress() -> Decided {
    Decided::Refused(Refusal::InProgress)
}

/// Locks the account row, as phase 2's commit does first, and returns the last feed number:
/// an account's feed entries are numbered under this lock, so they commit in order.
pub(super) async fn lock_feed(tx: &Transaction<'_>, account: AccountId) -> Result<i64> {
    Ok(tx
        .query_one(
            "SELECT feed_last FROM accounts WHERE id = $1 FOR UPDATE",
            &[&account],
        )
        .await?
        .get(0))
}

async fn window_in_force(c: &impl GenericClient) -> Result<Option<i64>> {
    Ok(
        c.query_opt("SELECT window_ms FROM idempotency_window WHERE id = 1", &[])
            .await?
            .map(|r| r.get(0)),
    )
}

/// A retry of a slot made at `created_at` arrives `now`; a late one is evidence.
async fn note_retry(tx: &Transaction<'_>, created_at: i64, now: i64, expired: bool) -> Result<()> {
    let span = now.saturating_sub(created_at).max(0);
    let late = expired || window_in_force(tx).await?.is_some_and(|w| is_late(span, w));
    if late {
        tx.execute(
            "INSERT INTO late_retries (at, span_ms) VALUES ($1, $2)",
            &[&now, &span],
        )
        .await?;
    }
    Ok(())
}

async fn current_key(
    c: &impl GenericClient,
    account: AccountId,
    uuid: Uuid,
) -> Result<Option<KeyRow>> {
    Ok(c.query_opt(
        "SELECT k.project_id, p.prefix, k.number, k.scope
         FROM keys k JOIN projects p ON p.id = k.project_id
         WHERE k.account_id = $1 AND k.task_uuid = $2 AND k.current",
        &[&account, &uuid],
    )
    .await?
    .map(|r| KeyRow {
        project_id: r.get(0),
        prefix: r.get(1),
        number: r.get(2),
        scope: r.get(3),
    }))
}

async fn task_row(
    c: &impl GenericClient,
    account: AccountId,
    uuid: Uuid,
) -> Result<Option<(i64, Vec<u8>)>> {
    Ok(c.query_opt(
        "SELECT project_id, fingerprint FROM tasks WHERE account_id = $1 AND uuid = $2",
        &[&account, &uuid],
    )
    .await?
    .map(|r| (r.get(0), r.get(1))))
}

impl PgAlloc {
    /// An existing slot (a row of [`batch::SLOT_ROW`]) decides: replay, resume under a fresh
    /// lease, `409`, `422`; or `None`: a failed slot was deleted, go on as a new key.
    async fn existing_slot(
        &self,
        tx: &Transaction<'_>,
        row: &Row,
        it: &Mutation,
        op: Op,
        now: i64,
    ) -> Result<Option<Decided>> {
        let (id, fp, state, created_at): (i64, Vec<u8>, String, i64) =
            (row.get(0), row.get(2), row.get(3), row.get(6));
        if fp != it.fp {
            return Ok(Some(Decided::Refused(Refusal::KeyReused(op))));
        }
        note_retry(tx, created_at, now, state == "failed").await?;
        match state.as_str() {
            "committed" => {
                tx.execute(
                    "UPDATE slots SET attempts = attempts + 1, last_seen_at = $2 WHERE id = $1",
                    &[&id, &now],
                )
                .await?;
                let status: Option<i32> = row.get(4);
                Ok(Some(Decided::Replay(Reply {
                    status: status.and_then(|s| u16::try_from(s).ok()).unwrap_or(200),
                    body: row.get::<_, Option<String>>(5).unwrap_or_default(),
                    replayed: true,
                    change: None,
                })))
            }
            "pending" => {
                let taken = tx
                    .execute(
                        "UPDATE slots SET claimed_by = $2, claimed_until = $3,
                                          attempts = attempts + 1, last_seen_at = $4
                         WHERE id = $1 AND state = 'pending'
                           AND (claimed_until IS NULL OR claimed_until < $4)",
                        &[&id, &&*self.node, &self.lease_until(now), &now],
                    )
                    .await?;
                Ok(Some(if taken == 1 {
                    Decided::Proceed(Reserved {
                        slot: id,
                        project: None,
                    })
                } else {
                    in_progress()
                }))
            }
            _ => {
                tx.execute("DELETE FROM slots WHERE id = $1", &[&id])
                    .await?;
                Ok(None)
            }
        }
    }
}

/// The seam: awaits `f`, and this backend's own error ([`DbError`]) becomes
/// [`callsign_storage::Error`].
async fn seam<T>(f: impl Future<Output = Result<T>>) -> callsign_storage::Result<T> {
    Ok(f.await?)
}

#[async_trait]
impl AllocStore for PgAlloc {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    /// PostgreSQL has no writer thread that groups commits (SQLite's `Db::write` does).
    fn wants_coalescing(&self) -> bool {
        true
    }

    async fn create_account(
        &self,
        name: &str,
        prefix: &Prefix,
        project_name: &str,
        owner: &MemberName,
    ) -> callsign_storage::Result<NewAccount> {
        seam(async {
            let mut c = self.pool.get().await?;
            let tx = c.transaction().await?;
            let now = now_ms();
            let account_id: i64 = tx
                .query_one(
                    "INSERT INTO accounts (name, created_at) VALUES ($1, $2) RETURNING id",
                    &[&name, &now],
                )
                .await?
                .get(0);
            let member = members::insert_member(&tx, account_id, owner, Role::Owner, now)
                .await?
                .expect("a new account has no members, so the name is free");
            let token = members::insert_token(&tx, account_id, member, "default", now).await?;
            let project = insert_project(&tx, account_id, project_name, prefix)
                .await?
                .expect("a new account has no projects, so the prefix is free");
            tx.commit().await?;
            Ok(NewAccount {
                account_id,
                token,
                project,
                member: Member {
                    name: owner.to_string(),
                    role: Role::Owner,
                },
            })
        })
        .await
    }

    async fn create_token(
        &self,
        account: AccountId,
        member: &MemberName,
        device: &str,
    ) -> callsign_storage::Result<Option<String>> {
        seam(async {
            let c = self.pool.get().await?;
            let Some((id, _)) = members::current_member(&c, account, member).await? else {
                return Ok(None);
            };
            // A member removed meanwhile keeps no token: the insert takes only a current member.
            let token = new_token();
            let n = c
                .execute(
                    "INSERT INTO tokens (account_id, member_id, token_hash, device, created_at)
                     SELECT account_id, id, $3, $4, $5 FROM members
                     WHERE id = $2 AND account_id = $1 AND removed_at IS NULL",
                    &[&account, &id, &hash_token(&token), &device, &now_ms()],
                )
                .await?;
            Ok((n == 1).then_some(token))
        })
        .await
    }

    async fn caller_by_token_hash(&self, hash: &[u8]) -> callsign_storage::Result<Option<Caller>> {
        seam(async {
            let c = self.pool.get().await?;
            members::caller_by_token_hash(&c, hash).await
        })
        .await
    }

    async fn add_member(
        &self,
        account: AccountId,
        name: &MemberName,
        role: Role,
        device: &str,
    ) -> callsign_storage::Result<AddMember> {
        seam(async {
            let mut c = self.pool.get().await?;
            let tx = c.transaction().await?;
            let made = members::add_member(&tx, account, name, role, device, now_ms()).await?;
            tx.commit().await?;
            Ok(made)
        })
        .await
    }

    async fn list_members(
        &self,
        account: AccountId,
    ) -> callsign_storage::Result<Option<Vec<MemberRow>>> {
        seam(async {
            let c = self.pool.get().await?;
            members::list_members(&c, account).await
        })
        .await
    }

    async fn remove_member(
        &self,
        account: AccountId,
        name: &MemberName,
        now: i64,
    ) -> callsign_storage::Result<RemoveMember> {
        seam(async {
            let mut c = self.pool.get().await?;
            let tx = c.transaction().await?;
            let out = members::remove_member(&tx, account, name, now).await?;
            tx.commit().await?;
            Ok(out)
        })
        .await
    }

    async fn create_invite(&self, invite: NewInvite) -> callsign_storage::Result<()> {
        seam(async {
            let c = self.pool.get().await?;
            members::create_invite(&c, &invite).await
        })
        .await
    }

    async fn redeem_invite(
        &self,
        code_hash: &[u8],
        name: &MemberName,
        device: &str,
        now: i64,
    ) -> callsign_storage::Result<Redeem> {
        seam(async {
            let mut c = self.pool.get().await?;
            let tx = c.transaction().await?;
            let out = members::redeem_invite(&tx, code_hash, name, device, now).await?;
            tx.commit().await?;
            Ok(out)
        })
        .await
    }

    async fn announce_change(&self, account: AccountId) -> callsign_storage::Result<()> {
        seam(async {
            let c = self.pool.get().await?;
            c.execute(
                "SELECT pg_notify($1, $2)",
                &[&crate::listen::FEED, &account.to_string()],
            )
            .await?;
            Ok(())
        })
        .await
    }

    async fn purge_invites(&self, before: i64) -> callsign_storage::Result<u64> {
        seam(async {
            let c = self.pool.get().await?;
            Ok(
                c.execute("DELETE FROM invites WHERE expires_at < $1", &[&before])
                    .await?,
            )
        })
        .await
    }

    async fn list_projects(&self, account: AccountId) -> callsign_storage::Result<Vec<Project>> {
        seam(async {
            let c = self.pool.get().await?;
            let rows = c
                .query(
                    "SELECT number, name, prefix, id FROM projects WHERE account_id = $1
                     ORDER BY prefix",
                    &[&account],
                )
                .await?;
            let earlier = renames::earlier_prefixes(&c, account).await?;
            Ok(rows
                .iter()
                .map(|r| {
                    callsign_storage::rows::project(
                        (r.get(0), r.get(3)),
                        r.get(1),
                        r.get(2),
                        &earlier,
                    )
                })
                .collect())
        })
        .await
    }

    async fn create_project(
        &self,
        account: AccountId,
        name: &str,
        prefix: &Prefix,
    ) -> callsign_storage::Result<Option<Project>> {
        seam(async {
            let mut c = self.pool.get().await?;
            let tx = c.transaction().await?;
            let made = insert_project(&tx, account, name, prefix).await?;
            tx.commit().await?;
            Ok(made)
        })
        .await
    }

    async fn update_project(
        &self,
        account: AccountId,
        from: &Prefix,
        prefix: Option<&Prefix>,
        name: Option<&str>,
        now: i64,
    ) -> callsign_storage::Result<Renamed> {
        seam(async {
            let mut c = self.pool.get().await?;
            let tx = c.transaction().await?;
            let out = renames::update_project(&tx, account, from, prefix, name, now).await?;
            tx.commit().await?;
            Ok(out)
        })
        .await
    }

    async fn account_ids(&self) -> callsign_storage::Result<Vec<AccountId>> {
        seam(async {
            let c = self.pool.get().await?;
            let rows = c.query("SELECT id FROM accounts ORDER BY id", &[]).await?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
        .await
    }

    async fn start_recovery(
        &self,
        account: Option<AccountId>,
        reason: RecoveryReason,
        now: i64,
    ) -> callsign_storage::Result<Vec<RecoveringRow>> {
        seam(async {
            let c = self.pool.get().await?;
            recovery::start(&c, account, reason, now).await
        })
        .await
    }

    async fn token_seen(&self, hash: &[u8], now: i64) -> callsign_storage::Result<()> {
        seam(async { witness::token_seen(&self.pool.get().await?, hash, now, false).await }).await
    }

    async fn token_witnessed(&self, hash: &[u8], now: i64) -> callsign_storage::Result<()> {
        seam(async { witness::token_seen(&self.pool.get().await?, hash, now, true).await }).await
    }

    async fn unwitnessed(
        &self,
        account: AccountId,
        active_since: i64,
        after: i64,
    ) -> callsign_storage::Result<Vec<DeviceRow>> {
        seam(async {
            let c = self.pool.get().await?;
            witness::unwitnessed(&c, account, active_since, after).await
        })
        .await
    }

    async fn recovery_report(
        &self,
        account: Option<AccountId>,
    ) -> callsign_storage::Result<RecoveryReport> {
        seam(async { witness::report(&self.pool.get().await?, account).await }).await
    }

    async fn recovering(&self) -> callsign_storage::Result<Vec<RecoveringRow>> {
        seam(async { recovery::list(&self.pool.get().await?).await }).await
    }

    async fn last_rollback(&self) -> callsign_storage::Result<Option<Rollback>> {
        seam(async { recovery::last_rollback(&self.pool.get().await?).await }).await
    }

    async fn end_recovery(
        &self,
        account: Option<AccountId>,
        prefix: Option<&Prefix>,
    ) -> callsign_storage::Result<Vec<RecoveringRow>> {
        seam(async {
            let c = self.pool.get().await?;
            recovery::end(&c, account, prefix.map(Prefix::as_str)).await
        })
        .await
    }

    async fn instance_id(&self) -> callsign_storage::Result<InstanceId> {
        seam(async {
            let c = self.pool.get().await?;
            Ok(
                c.query_one("SELECT instance_id FROM server_meta WHERE id = 1", &[])
                    .await?
                    .get(0),
            )
        })
        .await
    }

    async fn cursor_key(&self) -> callsign_storage::Result<Vec<u8>> {
        seam(async {
            let c = self.pool.get().await?;
            Ok(
                c.query_one("SELECT cursor_key FROM server_meta WHERE id = 1", &[])
                    .await?
                    .get(0),
            )
        })
        .await
    }

    async fn phase1(
        &self,
        account: AccountId,
        op: Op,
        items: &[Mutation],
        now: i64,
    ) -> Vec<callsign_storage::Result<Phase1>> {
        let run = async {
            let mut c = self.pool.get().await?;
            let tx = c.transaction().await?;
            let decided = self.phase1_batch(&tx, account, op, items, now).await?;
            tx.commit().await?;
            Ok::<_, DbError>(decided)
        };
        match run.await {
            Ok(decided) => {
                let held = self.leases(
                    decided
                        .iter()
                        .filter_map(|d| match d {
                            Decided::Proceed(at) => Some(at.slot),
                            Decided::Replay(_) | Decided::Refused(_) => None,
                        })
                        .collect(),
                );
                decided
                    .into_iter()
                    .map(|d| {
                        Ok(match d {
                            Decided::Replay(answer) => Phase1::Replay(answer),
                            Decided::Refused(why) => Phase1::Refused(why),
                            Decided::Proceed(at) => Phase1::Proceed(at, Claim::new(held.clone())),
                        })
                    })
                    .collect()
            }
            Err(e) => {
                let e = callsign_storage::Error::from(e);
                items.iter().map(|_| Err(e.clone())).collect()
            }
        }
    }

    async fn claim(
        &self,
        account: AccountId,
        idem: &str,
    ) -> callsign_storage::Result<Option<Claim>> {
        seam(async {
            let c = self.pool.get().await?;
            let now = now_ms();
            let row = c
                .query_opt(
                    "UPDATE slots SET claimed_by = $3, claimed_until = $4
                     WHERE id = (SELECT id FROM slots
                                 WHERE account_id = $1 AND idem_key = $2 AND state = 'pending'
                                   AND (claimed_until IS NULL OR claimed_until < $5)
                                 FOR UPDATE SKIP LOCKED)
                     RETURNING id",
                    &[&account, &idem, &&*self.node, &self.lease_until(now), &now],
                )
                .await?;
            Ok(row.map(|r| Claim::new(self.leases(vec![r.get(0)]))))
        })
        .await
    }

    async fn commit(
        &self,
        account: AccountId,
        op: Op,
        work: Vec<Commit>,
        now: i64,
        render: Render,
    ) -> callsign_storage::Result<Vec<callsign_storage::Result<Reply>>> {
        let mut c = self.pool.get().await.map_err(DbError::from)?;
        let tx = c.transaction().await.map_err(DbError::from)?;
        let out = self
            .commit_batch(&tx, account, op, &work, now, &render)
            .await?;
        tx.commit().await.map_err(DbError::from)?;
        Ok(out.into_iter().map(|r| r.map_err(Into::into)).collect())
    }

    async fn task_meta(
        &self,
        account: AccountId,
        uuids: Vec<Uuid>,
    ) -> callsign_storage::Result<TaskMeta> {
        seam(async {
            let c = self.pool.get().await?;
            let st = c
                .prepare_cached(
                    "SELECT t.uuid, p.prefix, k.project_id, kp.prefix, k.number, k.scope,
                            t.parent_uuid
                     FROM tasks t JOIN projects p ON p.id = t.project_id
                     LEFT JOIN keys k ON k.account_id = t.account_id AND k.task_uuid = t.uuid
                                     AND k.current
                     LEFT JOIN projects kp ON kp.id = k.project_id
                     WHERE t.account_id = $1 AND t.uuid = ANY($2)",
                )
                .await?;
            let rows = c.query(&st, &[&account, &uuids]).await?;
            let mut previous = moves::previous_keys(&c, account, &uuids).await?;
            Ok(rows
                .iter()
                .map(|r| {
                    let key = r.get::<_, Option<i64>>(2).map(|project_id| KeyRow {
                        project_id,
                        prefix: r.get(3),
                        number: r.get(4),
                        scope: r.get(5),
                    });
                    let uuid: Uuid = r.get(0);
                    let meta = Meta {
                        prefix: r.get(1),
                        key,
                        parent: r.get(6),
                        previous: previous.remove(&uuid).unwrap_or_default(),
                    };
                    (uuid, meta)
                })
                .collect())
        })
        .await
    }

    async fn mark_in_store(
        &self,
        account: AccountId,
        keys: Vec<(Uuid, String)>,
    ) -> callsign_storage::Result<()> {
        seam(async {
            let c = self.pool.get().await?;
            // Marked where the key written is still the current one, unmarked where a move or
            // rename made it stale (the write may have put back an older key): `in_store` flips
            // where it differs from that.
            let st = c
                .prepare_cached(
                    "UPDATE keys k SET in_store = NOT k.in_store
                     FROM projects p, UNNEST($2::uuid[], $3::text[]) AS t(u, key)
                     WHERE k.account_id = $1 AND k.task_uuid = t.u AND k.current
                       AND p.id = k.project_id
                       AND k.in_store <> (p.prefix || '-'
                           || CASE WHEN k.scope = '' THEN '' ELSE k.scope || '.' END
                           || k.number::text = t.key)",
                )
                .await?;
            let (uuids, keys): (Vec<Uuid>, Vec<String>) = keys.into_iter().unzip();
            c.execute(&st, &[&account, &uuids, &keys]).await?;
            Ok(())
        })
        .await
    }

    async fn touch(
        &self,
        account: AccountId,
        uuids: Vec<Uuid>,
        now: i64,
    ) -> callsign_storage::Result<()> {
        seam(async {
            let mut c = self.pool.get().await?;
            let tx = c.transaction().await?;
            let feed_last = lock_feed(&tx, account).await?;
            let n = tx
                .execute(
                    "WITH n AS (
                         SELECT k.task_uuid, row_number() OVER (ORDER BY t.ord) AS i
                         FROM UNNEST($2::uuid[]) WITH ORDINALITY AS t (u, ord)
                         JOIN keys k ON k.account_id = $1 AND k.task_uuid = t.u AND k.current)
                     INSERT INTO changes (account_id, task_uuid, seq, at)
                     SELECT $1, task_uuid, $3 + i, $4 FROM n
                     ON CONFLICT (account_id, task_uuid)
                         DO UPDATE SET seq = EXCLUDED.seq, at = EXCLUDED.at",
                    &[&account, &uuids, &feed_last, &now],
                )
                .await?;
            let n = i64::try_from(n).unwrap_or(i64::MAX);
            tx.execute(
                "UPDATE accounts SET feed_last = feed_last + $2 WHERE id = $1",
                &[&account, &n],
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn task_reserved(
        &self,
        account: AccountId,
        uuid: Uuid,
    ) -> callsign_storage::Result<bool> {
        seam(async {
            let c = self.pool.get().await?;
            Ok(task_row(&c, account, uuid).await?.is_some())
        })
        .await
    }

    async fn uuid_for_key(
        &self,
        account: AccountId,
        prefix: &str,
        scope: &str,
        number: i64,
    ) -> callsign_storage::Result<KeyLookup> {
        seam(async {
            let c = self.pool.get().await?;
            let Some(project) = moves::project_id(&c, account, prefix).await? else {
                return Ok(Err(false));
            };
            // A key row names its task by the prefixes its project had while it was in force.
            let uuid = c
                .query_opt(
                    "SELECT k.task_uuid FROM keys k JOIN projects p ON p.id = k.project_id
                     WHERE k.account_id = $1 AND k.project_id = $2 AND k.scope = $3
                       AND k.number = $4
                       AND EXISTS (SELECT 1 FROM prefix_epochs h
                                   WHERE h.project_id = k.project_id AND h.prefix = $5
                                     AND h.epoch >= k.epoch
                                     AND h.epoch <= COALESCE(k.until_epoch, p.epoch))",
                    &[&account, &project, &scope, &number, &prefix],
                )
                .await?
                .map(|r| r.get(0));
            Ok(uuid.ok_or(true))
        })
        .await
    }

    async fn origin_holders(
        &self,
        account: AccountId,
        keys: Vec<String>,
    ) -> callsign_storage::Result<HashMap<String, Uuid>> {
        seam(async { imports::holders(&self.pool.get().await?, account, &keys).await }).await
    }

    async fn children(
        &self,
        account: AccountId,
        parents: Vec<Uuid>,
    ) -> callsign_storage::Result<HashMap<Uuid, Vec<Uuid>>> {
        seam(async {
            let c = self.pool.get().await?;
            let st = c
                .prepare_cached(
                    "SELECT parent_uuid, uuid FROM tasks
                     WHERE account_id = $1 AND parent_uuid = ANY($2) ORDER BY created_at, uuid",
                )
                .await?;
            let mut out: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
            for r in c.query(&st, &[&account, &parents]).await? {
                out.entry(r.get(0)).or_default().push(r.get(1));
            }
            Ok(out)
        })
        .await
    }

    async fn feed_end(&self, account: AccountId) -> callsign_storage::Result<i64> {
        seam(async {
            let c = self.pool.get().await?;
            let st = c
                .prepare_cached("SELECT feed_last FROM accounts WHERE id = $1")
                .await?;
            Ok(c.query_opt(&st, &[&account])
                .await?
                .map_or(0, |r| r.get::<_, i64>(0)))
        })
        .await
    }

    async fn changes_since(
        &self,
        account: AccountId,
        after: i64,
        limit: usize,
    ) -> callsign_storage::Result<(Vec<ChangeRow>, bool)> {
        seam(async {
            let c = self.pool.get().await?;
            let st = c
                .prepare_cached(
                    "SELECT task_uuid, seq FROM changes WHERE account_id = $1 AND seq > $2
                     ORDER BY seq LIMIT $3",
                )
                .await?;
            let rows = c
                .query(&st, &[&account, &after, &(limit as i64 + 1)])
                .await?;
            let mut rows: Vec<ChangeRow> = rows
                .iter()
                .map(|r| ChangeRow {
                    task_uuid: r.get(0),
                    seq: r.get(1),
                })
                .collect();
            let more = rows.len() > limit;
            rows.truncate(limit);
            Ok((rows, more))
        })
        .await
    }

    async fn pending_slots(
        &self,
        before: i64,
        limit: usize,
    ) -> callsign_storage::Result<Vec<Slot>> {
        seam(async {
            let c = self.pool.get().await?;
            let rows = c
                .query(
                    &format!(
                        "SELECT {SLOT_COLS} FROM slots WHERE state = 'pending' AND created_at < $1
                         ORDER BY created_at LIMIT $2"
                    ),
                    &[&before, &(limit as i64)],
                )
                .await?;
            Ok(rows.iter().map(slot_of).collect())
        })
        .await
    }

    async fn fail_slot(
        &self,
        account: AccountId,
        idem: &str,
        uuid: Uuid,
        now: i64,
    ) -> callsign_storage::Result<bool> {
        seam(async {
            let mut c = self.pool.get().await?;
            let tx = c.transaction().await?;
            let n = tx
                .execute(
                    "UPDATE slots SET state = 'failed', settled_at = $3,
                                      claimed_by = NULL, claimed_until = NULL
                     WHERE account_id = $1 AND idem_key = $2 AND state = 'pending'",
                    &[&account, &idem, &now],
                )
                .await?;
            tx.execute(
                "DELETE FROM tasks WHERE account_id = $1 AND uuid = $2
                   AND NOT EXISTS (SELECT 1 FROM keys WHERE account_id = $1 AND task_uuid = $2)
                   AND NOT EXISTS (SELECT 1 FROM slots WHERE account_id = $1 AND task_uuid = $2
                                                         AND state = 'pending')",
                &[&account, &uuid],
            )
            .await?;
            tx.commit().await?;
            Ok(n == 1)
        })
        .await
    }

    async fn keys_not_in_store(
        &self,
        before: i64,
        limit: usize,
    ) -> callsign_storage::Result<Vec<(AccountId, Uuid, String)>> {
        seam(async {
            let c = self.pool.get().await?;
            let rows = c
                .query(
                    "SELECT k.account_id, k.task_uuid, k.project_id, p.prefix, k.scope, k.number
                     FROM keys k JOIN projects p ON p.id = k.project_id
                     WHERE NOT k.in_store AND k.current AND k.assigned_at < $1
                     ORDER BY k.assigned_at LIMIT $2",
                    &[&before, &(limit as i64)],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| {
                    let key = KeyRow {
                        project_id: r.get(2),
                        prefix: r.get(3),
                        scope: r.get(4),
                        number: r.get(5),
                    };
                    (r.get(0), r.get(1), key.key())
                })
                .collect())
        })
        .await
    }

    async fn purge_settled(
        &self,
        before: i64,
        limit: usize,
        now: i64,
    ) -> callsign_storage::Result<usize> {
        seam(async {
            let c = self.pool.get().await?;
            let n = c
                .execute(
                    "WITH gone AS (
                         DELETE FROM slots WHERE id IN (
                             SELECT id FROM slots WHERE state <> 'pending' AND created_at < $1
                             ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
                         RETURNING account_id, idem_key, created_at, attempts, last_seen_at)
                     INSERT INTO purged_slots (account_id, idem_key, created_at, span_ms, purged_at)
                     SELECT account_id, idem_key, created_at,
                            CASE WHEN attempts > 1 THEN last_seen_at - created_at END, $3
                     FROM gone
                     ON CONFLICT (account_id, idem_key) DO UPDATE SET
                         created_at = EXCLUDED.created_at, span_ms = EXCLUDED.span_ms,
                         purged_at = EXCLUDED.purged_at",
                    &[&before, &(limit as i64), &now],
                )
                .await?;
            Ok(n as usize)
        })
        .await
    }

    async fn forget_purged(&self, before: i64, limit: usize) -> callsign_storage::Result<usize> {
        seam(async {
            let c = self.pool.get().await?;
            let n = c
                .execute(
                    "DELETE FROM purged_slots WHERE (account_id, idem_key) IN (
                         SELECT account_id, idem_key FROM purged_slots WHERE purged_at < $1
                         LIMIT $2)",
                    &[&before, &(limit as i64)],
                )
                .await?;
            Ok(n as usize)
        })
        .await
    }

    async fn update_window(
        &self,
        setting: Setting,
        current: i64,
        since: i64,
        now: i64,
    ) -> callsign_storage::Result<Window> {
        seam(async {
            let mut c = self.pool.get().await?;
            let tx = c.transaction().await?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WINDOW_LOCK])
                .await?;
            let spans_ms = retry_spans(&tx, since).await?;
            let late_ms = tx
                .query("SELECT span_ms FROM late_retries WHERE at >= $1", &[&since])
                .await?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let oldest: Option<i64> = tx
                .query_one(
                    "SELECT MIN(created_at) FROM slots WHERE state = 'pending'",
                    &[],
                )
                .await?
                .get(0);
            let ev = Evidence {
                spans_ms,
                late_ms,
                oldest_pending_ms: oldest.map(|at| now.saturating_sub(at).max(0)),
            };
            let w = callsign_storage::window::derive(&setting, current, &ev);
            if window_in_force(&tx).await? != Some(w.ms) {
                tx.execute(
                    "INSERT INTO idempotency_window (id, window_ms, basis, changed_at)
                     VALUES (1, $1, $2, $3)
                     ON CONFLICT (id) DO UPDATE SET window_ms = EXCLUDED.window_ms,
                         basis = EXCLUDED.basis, changed_at = EXCLUDED.changed_at",
                    &[&w.ms, &w.basis.as_str(), &now],
                )
                .await?;
            }
            tx.execute("DELETE FROM late_retries WHERE at < $1", &[&since])
                .await?;
            tx.commit().await?;
            Ok(w)
        })
        .await
    }

    async fn window_in_force(&self) -> callsign_storage::Result<Option<(i64, Basis)>> {
        seam(async {
            let c = self.pool.get().await?;
            Ok(c.query_opt(
                "SELECT window_ms, basis FROM idempotency_window WHERE id = 1",
                &[],
            )
            .await?
            .map(|r| {
                let basis: String = r.get(1);
                (r.get(0), Basis::parse(&basis).unwrap_or(Basis::Min))
            }))
        })
        .await
    }

    async fn retry_stats(&self, since: i64) -> callsign_storage::Result<(Vec<i64>, i64)> {
        seam(async {
            let c = self.pool.get().await?;
            let spans = retry_spans(&c, since).await?;
            let pending: i64 = c
                .query_one("SELECT COUNT(*) FROM slots WHERE state = 'pending'", &[])
                .await?
                .get(0);
            Ok((spans, pending))
        })
        .await
    }

    async fn probe(&self) -> std::result::Result<(), String> {
        let c = match self.pool.get().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "readyz: no connection to PostgreSQL");
                return Err("the database cannot be reached".to_owned());
            }
        };
        if let Err(e) = c.query_one("SELECT id FROM server_meta", &[]).await {
            tracing::warn!(error = %e, "readyz: database read failed");
            return Err("the database cannot be read".to_owned());
        }
        if let Err(e) = c
            .execute(
                "UPDATE server_meta SET ready_probe = ready_probe + 1 WHERE id = 1",
                &[],
            )
            .await
        {
            tracing::warn!(error = %e, "readyz: database write failed");
            return Err("the database cannot be written".to_owned());
        }
        Ok(())
    }
}

/// Inserts a project numbered next in its account (the account row is locked, so two
/// projects made at once get different numbers, and no rename or commit runs meanwhile);
/// `None` if the prefix is one of the account's projects has or ever had, or one that keys of
/// imported tasks have (`ENG-4` imported into OPS).
async fn insert_project(
    tx: &Transaction<'_>,
    account: AccountId,
    name: &str,
    prefix: &Prefix,
) -> Result<Option<Project>> {
    tx.execute(
        "SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE",
        &[&account],
    )
    .await?;
    let now = now_ms();
    let made = tx
        .query_opt(
            "INSERT INTO projects (account_id, number, name, prefix, created_at)
             SELECT $1, (SELECT COALESCE(MAX(number), 0) + 1 FROM projects WHERE account_id = $1),
                    $2, $3, $4
             WHERE NOT EXISTS (SELECT 1 FROM prefixes WHERE account_id = $1 AND prefix = $3)
               AND NOT EXISTS (SELECT 1 FROM origins WHERE account_id = $1 AND prefix = $3)
             ON CONFLICT (account_id, prefix) DO NOTHING
             RETURNING id, number",
            &[&account, &name, &prefix.as_str(), &now],
        )
        .await?
        .map(|r| (r.get::<_, i64>(0), r.get::<_, i64>(1)));
    let Some((row, number)) = made else {
        return Ok(None);
    };
    renames::record_prefix(tx, account, row, 0, prefix.as_str(), now).await?;
    Ok(Some(Project {
        id: number,
        name: name.to_owned(),
        prefix: prefix.to_string(),
        previous_prefixes: Vec::new(),
    }))
}

/// Retry spans of slots made since `since`, purged ones included, ascending.
async fn retry_spans(c: &impl GenericClient, since: i64) -> Result<Vec<i64>> {
    Ok(c.query(
        "SELECT last_seen_at - created_at FROM slots WHERE attempts > 1 AND created_at >= $1
         UNION ALL
         SELECT span_ms FROM purged_slots WHERE span_ms IS NOT NULL AND created_at >= $1
         ORDER BY 1",
        &[&since],
    )
    .await?
    .iter()
    .map(|r| r.get(0))
    .collect())
}
