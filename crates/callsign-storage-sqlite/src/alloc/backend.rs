//! [`AllocStore`] on the SQLite allocation database: each step is a group-commit job
//! ([`Db::write`]) or a pooled read, and claims are held in this process ([`InFlight`]): the
//! data-dir lock keeps a second process off the same files.
use std::collections::HashMap;
use std::future::Future;

use async_trait::async_trait;
use callsign_core::dto::Project;
use callsign_core::{MemberName, Prefix, Role};
use uuid::Uuid;

use super::protocol::{self as sql, Decided};
use super::{
    accounts, changes, each_item, imports, members, meta, now_ms, recovery, renames, slots,
    window as db_window, witness,
};
use super::{
    AccountId, AddMember, Caller, ChangeRow, Db, MemberRow, NewAccount, NewInvite, Redeem,
    RemoveMember, Result, Slot,
};
use crate::inflight::InFlight;
use callsign_storage::window::{Basis, Setting, Window};
use callsign_storage::{
    AllocStore, Claim, Commit, DeviceRow, KeyLookup, Mutation, Op, Phase1, RecoveringRow,
    RecoveryReason, RecoveryReport, Refusal, Renamed, Render, Reply, Rollback, TaskMeta,
};

/// The allocation store on one SQLite file.
#[derive(Clone)]
pub struct SqliteAlloc {
    db: Db,
    inflight: InFlight,
}

impl SqliteAlloc {
    pub fn new(db: Db) -> SqliteAlloc {
        SqliteAlloc {
            db,
            inflight: InFlight::default(),
        }
    }

    /// The database handle (group-commit counters, the data dir's checks).
    pub fn db(&self) -> &Db {
        &self.db
    }
}

/// The seam: awaits `f`, and this backend's own error ([`DbError`](super::DbError)) becomes
/// [`callsign_storage::Error`].
async fn seam<T>(f: impl Future<Output = Result<T>>) -> callsign_storage::Result<T> {
    Ok(f.await?)
}

#[async_trait]
impl AllocStore for SqliteAlloc {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    async fn create_account(
        &self,
        name: &str,
        prefix: &Prefix,
        project_name: &str,
        owner: &MemberName,
    ) -> callsign_storage::Result<NewAccount> {
        let (name, prefix, project_name, owner) = (
            name.to_owned(),
            prefix.clone(),
            project_name.to_owned(),
            owner.clone(),
        );
        seam(
            self.db
                .write(move |c| accounts::create_account(c, &name, &prefix, &project_name, &owner)),
        )
        .await
    }

    async fn create_token(
        &self,
        account: AccountId,
        member: &MemberName,
        device: &str,
    ) -> callsign_storage::Result<Option<String>> {
        let (member, device) = (member.clone(), device.to_owned());
        seam(self.db.write(move |c| {
            let Some((id, _)) = members::current_member(c, account, &member)? else {
                return Ok(None);
            };
            accounts::create_token(c, account, id, &device).map(Some)
        }))
        .await
    }

    async fn caller_by_token_hash(&self, hash: &[u8]) -> callsign_storage::Result<Option<Caller>> {
        let hash = hash.to_vec();
        seam(
            self.db
                .read(move |c| members::caller_by_token_hash(c, &hash)),
        )
        .await
    }

    async fn add_member(
        &self,
        account: AccountId,
        name: &MemberName,
        role: Role,
        device: &str,
    ) -> callsign_storage::Result<AddMember> {
        let (name, device) = (name.clone(), device.to_owned());
        seam(
            self.db
                .write(move |c| members::add_member(c, account, &name, role, &device, now_ms())),
        )
        .await
    }

    async fn list_members(
        &self,
        account: AccountId,
    ) -> callsign_storage::Result<Option<Vec<MemberRow>>> {
        seam(self.db.read(move |c| members::list_members(c, account))).await
    }

    async fn remove_member(
        &self,
        account: AccountId,
        name: &MemberName,
        now: i64,
    ) -> callsign_storage::Result<RemoveMember> {
        let name = name.clone();
        seam(
            self.db
                .write(move |c| members::remove_member(c, account, &name, now)),
        )
        .await
    }

    async fn create_invite(&self, invite: NewInvite) -> callsign_storage::Result<()> {
        seam(self.db.write(move |c| members::create_invite(c, &invite))).await
    }

    async fn redeem_invite(
        &self,
        code_hash: &[u8],
        name: &MemberName,
        device: &str,
        now: i64,
    ) -> callsign_storage::Result<Redeem> {
        let (hash, name, device) = (code_hash.to_vec(), name.clone(), device.to_owned());
        seam(
            self.db
                .write(move |c| members::redeem_invite(c, &hash, &name, &device, now)),
        )
        .await
    }

    async fn purge_invites(&self, before: i64) -> callsign_storage::Result<u64> {
        seam(self.db.write(move |c| members::purge_invites(c, before))).await
    }

    async fn list_projects(&self, account: AccountId) -> callsign_storage::Result<Vec<Project>> {
        seam(self.db.read(move |c| accounts::list_projects(c, account))).await
    }

    async fn create_project(
        &self,
        account: AccountId,
        name: &str,
        prefix: &Prefix,
    ) -> callsign_storage::Result<Option<Project>> {
        let (name, prefix) = (name.to_owned(), prefix.clone());
        seam(
            self.db
                .write(move |c| accounts::create_project(c, account, &name, &prefix)),
        )
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
        let (from, prefix, name) = (from.clone(), prefix.cloned(), name.map(str::to_owned));
        seam(self.db.write(move |c| {
            renames::update_project(c, account, &from, prefix.as_ref(), name.as_deref(), now)
        }))
        .await
    }

    async fn account_ids(&self) -> callsign_storage::Result<Vec<AccountId>> {
        seam(self.db.read(meta::account_ids)).await
    }

    async fn start_recovery(
        &self,
        account: Option<AccountId>,
        reason: RecoveryReason,
        now: i64,
    ) -> callsign_storage::Result<Vec<RecoveringRow>> {
        seam(self.db.write(move |c| {
            recovery::record_rollback(c, reason, now, None)?;
            recovery::start(c, account, reason, now)
        }))
        .await
    }

    async fn token_seen(&self, hash: &[u8], now: i64) -> callsign_storage::Result<()> {
        let hash = hash.to_vec();
        seam(
            self.db
                .write(move |c| witness::token_seen(c, &hash, now, false)),
        )
        .await
    }

    async fn token_witnessed(&self, hash: &[u8], now: i64) -> callsign_storage::Result<()> {
        let hash = hash.to_vec();
        seam(
            self.db
                .write(move |c| witness::token_seen(c, &hash, now, true)),
        )
        .await
    }

    async fn unwitnessed(
        &self,
        account: AccountId,
        active_since: i64,
        after: i64,
    ) -> callsign_storage::Result<Vec<DeviceRow>> {
        seam(
            self.db
                .read(move |c| witness::unwitnessed(c, account, active_since, after)),
        )
        .await
    }

    async fn recovery_report(
        &self,
        account: Option<AccountId>,
    ) -> callsign_storage::Result<RecoveryReport> {
        seam(self.db.read(move |c| witness::report(c, account))).await
    }

    async fn recovering(&self) -> callsign_storage::Result<Vec<RecoveringRow>> {
        seam(self.db.read(recovery::list)).await
    }

    async fn last_rollback(&self) -> callsign_storage::Result<Option<Rollback>> {
        seam(self.db.read(recovery::last_rollback)).await
    }

    async fn end_recovery(
        &self,
        account: Option<AccountId>,
        prefix: Option<&Prefix>,
    ) -> callsign_storage::Result<Vec<RecoveringRow>> {
        let prefix = prefix.cloned();
        seam(
            self.db
                .write(move |c| recovery::end(c, account, prefix.as_ref())),
        )
        .await
    }

    async fn instance_id(&self) -> callsign_storage::Result<meta::InstanceId> {
        seam(self.db.read(meta::instance_id)).await
    }

    async fn cursor_key(&self) -> callsign_storage::Result<Vec<u8>> {
        seam(self.db.read(meta::cursor_key)).await
    }

    async fn phase1(
        &self,
        account: AccountId,
        op: Op,
        items: &[Mutation],
        now: i64,
    ) -> Vec<callsign_storage::Result<Phase1>> {
        // Claim first, in this process; only claimed keys reach the transaction.
        let mut out: Vec<Option<callsign_storage::Result<Phase1>>> =
            Vec::with_capacity(items.len());
        let mut claims = Vec::new();
        let mut claimed = Vec::new();
        for (i, it) in items.iter().enumerate() {
            match self.inflight.claim(account, &it.idem) {
                Some(c) => {
                    out.push(None);
                    claims.push((i, c));
                    claimed.push(it.clone());
                }
                None => out.push(Some(Ok(Phase1::Refused(Refusal::InProgress)))),
            }
        }
        if !claimed.is_empty() {
            let res = self
                .db
                .write(move |c| {
                    each_item(c, &claimed, |c, it| match op {
                        Op::Create => sql::phase1_create(c, account, it, now),
                        Op::Update => sql::phase1_update(c, account, it, now),
                    })
                })
                .await;
            match res {
                Ok(decided) => {
                    for ((i, claim), d) in claims.into_iter().zip(decided) {
                        out[i] = Some(match d {
                            Ok(Decided::Replay(answer)) => Ok(Phase1::Replay(answer)),
                            Ok(Decided::Refused(why)) => Ok(Phase1::Refused(why)),
                            Ok(Decided::Proceed(at)) => Ok(Phase1::Proceed(at, Claim::new(claim))),
                            Err(e) => Err(e.into()),
                        });
                    }
                }
                Err(e) => {
                    let e = callsign_storage::Error::from(e);
                    for (i, _) in claims {
                        out[i] = Some(Err(e.clone()));
                    }
                }
            }
        }
        out.into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    Err(callsign_storage::Error::CommitFailed(
                        "not processed".into(),
                    ))
                })
            })
            .collect()
    }

    async fn claim(
        &self,
        account: AccountId,
        idem: &str,
    ) -> callsign_storage::Result<Option<Claim>> {
        Ok(self.inflight.claim(account, idem).map(Claim::new))
    }

    async fn commit(
        &self,
        account: AccountId,
        op: Op,
        work: Vec<Commit>,
        now: i64,
        render: Render,
    ) -> callsign_storage::Result<Vec<callsign_storage::Result<Reply>>> {
        let out = self
            .db
            .write(move |c| {
                each_item(c, &work, |c, w| {
                    let (idem, at, snap) = (&w.idem, w.at, &w.snapshot);
                    match op {
                        Op::Create => sql::commit_create(c, account, idem, at, snap, now, &render),
                        Op::Update => sql::commit_update(c, account, idem, at, snap, now, &render),
                    }
                })
            })
            .await?;
        Ok(out.into_iter().map(|r| r.map_err(Into::into)).collect())
    }

    async fn task_meta(
        &self,
        account: AccountId,
        uuids: Vec<Uuid>,
    ) -> callsign_storage::Result<TaskMeta> {
        seam(self.db.read(move |c| sql::task_meta(c, account, &uuids))).await
    }

    async fn mark_in_store(
        &self,
        account: AccountId,
        keys: Vec<(Uuid, String)>,
    ) -> callsign_storage::Result<()> {
        seam(self.db.write(move |c| {
            for (u, key) in &keys {
                slots::mark_in_store(c, account, *u, key)?;
            }
            Ok(())
        }))
        .await
    }

    async fn touch(
        &self,
        account: AccountId,
        uuids: Vec<Uuid>,
        now: i64,
    ) -> callsign_storage::Result<()> {
        seam(self.db.write(move |c| {
            let mut keyed = c.prepare_cached(
                "SELECT 1 FROM keys WHERE account_id = ?1 AND task_uuid = ?2 AND current = 1",
            )?;
            for u in &uuids {
                if keyed.exists(rusqlite::params![account, u])? {
                    changes::append(c, account, *u, now)?;
                }
            }
            Ok(())
        }))
        .await
    }

    async fn task_reserved(
        &self,
        account: AccountId,
        uuid: Uuid,
    ) -> callsign_storage::Result<bool> {
        seam(
            self.db
                .read(move |c| Ok(slots::task_row(c, account, uuid)?.is_some())),
        )
        .await
    }

    async fn uuid_for_key(
        &self,
        account: AccountId,
        prefix: &str,
        scope: &str,
        number: i64,
    ) -> callsign_storage::Result<KeyLookup> {
        let (prefix, scope) = (prefix.to_owned(), scope.to_owned());
        seam(
            self.db
                .read(move |c| slots::uuid_for_key(c, account, &prefix, &scope, number)),
        )
        .await
    }

    async fn origin_holders(
        &self,
        account: AccountId,
        keys: Vec<String>,
    ) -> callsign_storage::Result<HashMap<String, Uuid>> {
        seam(self.db.read(move |c| imports::holders(c, account, &keys))).await
    }

    async fn children(
        &self,
        account: AccountId,
        parents: Vec<Uuid>,
    ) -> callsign_storage::Result<HashMap<Uuid, Vec<Uuid>>> {
        seam(self.db.read(move |c| {
            let mut out = HashMap::new();
            for p in parents {
                let kids = slots::children_of(c, account, p)?;
                if !kids.is_empty() {
                    out.insert(p, kids);
                }
            }
            Ok(out)
        }))
        .await
    }

    async fn feed_end(&self, account: AccountId) -> callsign_storage::Result<i64> {
        seam(self.db.read(move |c| changes::latest(c, account))).await
    }

    async fn changes_since(
        &self,
        account: AccountId,
        after: i64,
        limit: usize,
    ) -> callsign_storage::Result<(Vec<ChangeRow>, bool)> {
        seam(
            self.db
                .read(move |c| changes::since(c, account, after, limit)),
        )
        .await
    }

    async fn pending_slots(
        &self,
        before: i64,
        limit: usize,
    ) -> callsign_storage::Result<Vec<Slot>> {
        seam(
            self.db
                .read(move |c| slots::pending_slots(c, before, limit)),
        )
        .await
    }

    async fn fail_slot(
        &self,
        account: AccountId,
        idem: &str,
        uuid: Uuid,
        now: i64,
    ) -> callsign_storage::Result<bool> {
        let idem = idem.to_owned();
        seam(self.db.write(move |c| {
            let failed = slots::fail_slot(c, account, &idem, now)?;
            slots::release_task_row(c, account, uuid)?;
            Ok(failed)
        }))
        .await
    }

    async fn keys_not_in_store(
        &self,
        before: i64,
        limit: usize,
    ) -> callsign_storage::Result<Vec<(AccountId, Uuid, String)>> {
        seam(
            self.db
                .read(move |c| slots::keys_not_in_store(c, before, limit)),
        )
        .await
    }

    async fn purge_settled(
        &self,
        before: i64,
        limit: usize,
        now: i64,
    ) -> callsign_storage::Result<usize> {
        seam(
            self.db
                .write(move |c| slots::purge_settled(c, before, limit, now)),
        )
        .await
    }

    async fn forget_purged(&self, before: i64, limit: usize) -> callsign_storage::Result<usize> {
        seam(
            self.db
                .write(move |c| slots::forget_purged(c, before, limit)),
        )
        .await
    }

    async fn update_window(
        &self,
        setting: Setting,
        current: i64,
        since: i64,
        now: i64,
    ) -> callsign_storage::Result<Window> {
        seam(self.db.write(move |c| {
            let ev = db_window::evidence(c, since, now)?;
            let w = callsign_storage::window::derive(&setting, current, &ev);
            if db_window::in_force(c)? != Some(w.ms) {
                db_window::set(c, &w, now)?;
            }
            db_window::forget_late(c, since)?;
            Ok(w)
        }))
        .await
    }

    async fn window_in_force(&self) -> callsign_storage::Result<Option<(i64, Basis)>> {
        seam(self.db.read(|c| {
            Ok(match db_window::in_force(c)? {
                Some(ms) => Some((ms, db_window::basis(c)?.unwrap_or(Basis::Min))),
                None => None,
            })
        }))
        .await
    }

    async fn retry_stats(&self, since: i64) -> callsign_storage::Result<(Vec<i64>, i64)> {
        seam(self.db.read(move |c| {
            let spans = slots::retry_spans(c, since)?;
            let pending: i64 = c.query_row(
                "SELECT COUNT(*) FROM slots WHERE state = 'pending'",
                [],
                |r| r.get(0),
            )?;
            Ok((spans, pending))
        }))
        .await
    }

    async fn probe(&self) -> std::result::Result<(), String> {
        if let Err(e) = self
            .db
            .read(|c| Ok(c.query_row("SELECT id FROM server_meta", [], |r| r.get::<_, i64>(0))?))
            .await
        {
            tracing::warn!(error = %e, "readyz: allocation database read failed");
            return Err("the allocation database cannot be read".to_owned());
        }
        if let Err(e) = self
            .db
            .write(|c| {
                c.execute(
                    "UPDATE server_meta SET ready_probe = ready_probe + 1 WHERE id = 1",
                    [],
                )?;
                Ok(())
            })
            .await
        {
            tracing::warn!(error = %e, "readyz: allocation database write failed");
            return Err("the allocation database cannot be written".to_owned());
        }
        Ok(())
    }
}
