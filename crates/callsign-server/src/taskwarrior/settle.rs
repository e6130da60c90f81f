//! The settle: the account's replica syncs with its Taskwarrior chain in this process
//! ([`Chain`], no HTTP), then the tasks that brought are keyed through the create protocol, fed
//! to devices, and their `key` and `project` restored (the module docs of [`super`]).
//!
//! A task Taskwarrior made is numbered as its create (`NewTask` with its description, cut to
//! 200 characters or `(no description)`, and its capture time); a create left pending (a
//! failure before its commit) is settled by the reaper like any other, since its task is in the
//! store. A reserved task with no key yet is left to its own create. The link's `applied_op` is
//! written only when the settle moved it, so an up-to-date Taskwarrior asking for news costs no
//! write.
use std::sync::Arc;

use async_trait::async_trait;
use callsign_core::dto::NewTask;
use taskchampion::server::{
    AddVersionResult, GetVersionResult, HistorySegment, Snapshot as TcSnapshot, SnapshotUrgency,
    VersionId,
};
use taskchampion_sync_server_core as core;
use uuid::Uuid;

use super::envelope::Cryptor;
use super::{internal, Link, Taskwarrior};
use crate::error::ApiResult;
use crate::protocol::{self, CreateReq};
use crate::state::AppState;
use callsign_storage::{now_ms, AccountId, ReplicaSyncJob};

/// The account's chain as TaskChampion's client side sees it, in this process: versions and
/// snapshots sealed and opened with the account's key.
struct Chain {
    core: Arc<core::Server>,
    client_id: Uuid,
    cryptor: Arc<Cryptor>,
}

type TcResult<T> = Result<T, taskchampion::Error>;

fn tc_err(e: impl std::fmt::Display) -> taskchampion::Error {
    taskchampion::Error::Server(e.to_string())
}

#[async_trait(?Send)]
impl taskchampion::Server for Chain {
    async fn add_version(
        &mut self,
        parent_version_id: VersionId,
        history_segment: HistorySegment,
    ) -> TcResult<(AddVersionResult, SnapshotUrgency)> {
        let sealed = self
            .cryptor
            .seal(parent_version_id, &history_segment)
            .map_err(tc_err)?;
        let (res, urgency) = self
            .core
            .add_version(self.client_id, parent_version_id, sealed)
            .await
            .map_err(tc_err)?;
        let res = match res {
            core::AddVersionResult::Ok(v) => AddVersionResult::Ok(v),
            core::AddVersionResult::ExpectedParentVersion(v) => {
                AddVersionResult::ExpectedParentVersion(v)
            }
        };
        let urgency = match urgency {
            core::SnapshotUrgency::None => SnapshotUrgency::None,
            core::SnapshotUrgency::Low => SnapshotUrgency::Low,
            core::SnapshotUrgency::High => SnapshotUrgency::High,
        };
        Ok((res, urgency))
    }

    async fn get_child_version(
        &mut self,
        parent_version_id: VersionId,
    ) -> TcResult<GetVersionResult> {
        match self
            .core
            .get_child_version(self.client_id, parent_version_id)
            .await
            .map_err(tc_err)?
        {
            core::GetVersionResult::Success {
                version_id,
                parent_version_id,
                history_segment,
            } => Ok(GetVersionResult::Version {
                version_id,
                parent_version_id,
                history_segment: self
                    .cryptor
                    .open(parent_version_id, &history_segment)
                    .map_err(tc_err)?,
            }),
            core::GetVersionResult::NotFound => Ok(GetVersionResult::NoSuchVersion),
            core::GetVersionResult::Gone => Err(tc_err(format!(
                "version {parent_version_id} is no longer in the chain"
            ))),
        }
    }

    async fn add_snapshot(&mut self, version_id: VersionId, snapshot: TcSnapshot) -> TcResult<()> {
        let sealed = self.cryptor.seal(version_id, &snapshot).map_err(tc_err)?;
        self.core
            .add_snapshot(self.client_id, version_id, sealed)
            .await
            .map_err(tc_err)
    }

    async fn get_snapshot(&mut self) -> TcResult<Option<(VersionId, TcSnapshot)>> {
        match self
            .core
            .get_snapshot(self.client_id)
            .await
            .map_err(tc_err)?
        {
            Some((v, data)) => Ok(Some((v, self.cryptor.open(v, &data).map_err(tc_err)?))),
            None => Ok(None),
        }
    }
}

/// What one settle did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Settled {
    /// Tasks that got their key.
    pub keyed: usize,
    /// Tasks whose `key` or `project` was put back.
    pub restored: usize,
    /// Tasks given a change-feed entry.
    pub touched: usize,
}

/// Syncs the account's replica with its chain and settles what that brought (see the module
/// docs). Call with [`Taskwarrior::settling`] held.
pub async fn settle(state: &AppState, tw: &Taskwarrior, link: &Link) -> ApiResult<Settled> {
    let account = link.account;
    let synced = sync_once(state, tw, link, link.applied_op).await?;
    let mut out = Settled::default();
    let mut keys = Vec::new();
    if !synced.touched.is_empty() {
        keys = settle_touched(state, account, synced.touched, &mut out).await?;
    }
    let mut last = synced.last_op;
    if !keys.is_empty() {
        protocol::write_keys(state, account, keys).await?;
        crate::crash::point(crate::crash::TASKWARRIOR_AFTER_KEYS);
        // Sends the keys to the chain now, so Taskwarrior gets them in this `task sync`.
        last = sync_once(state, tw, link, Some(last)).await?.last_op;
    }
    // Most settles (an up-to-date Taskwarrior asking for news) move nothing: no write then.
    if link.applied_op != Some(last) {
        tw.links
            .set_applied(link.client_id, last)
            .await
            .map_err(internal)?;
    }
    Ok(out)
}

async fn sync_once(
    state: &AppState,
    tw: &Taskwarrior,
    link: &Link,
    after: Option<i64>,
) -> ApiResult<callsign_storage::ReplicaSynced> {
    let job = ReplicaSyncJob {
        server: Box::new(Chain {
            core: tw.core.clone(),
            client_id: link.client_id,
            cryptor: tw.cryptor(link)?,
        }),
        restate: after.is_none(),
        after: after.unwrap_or(0),
        latest: tw
            .links
            .latest_version(link.client_id)
            .await
            .map_err(internal)?
            .unwrap_or_else(Uuid::nil),
    };
    Ok(state.tasks.sync_replica(link.account, job).await?)
}

/// Numbers the new tasks among `touched`, feeds the keyed ones, and returns the key writes
/// to make (new keys, and keys or projects Taskwarrior changed).
async fn settle_touched(
    state: &AppState,
    account: AccountId,
    touched: Vec<Uuid>,
    out: &mut Settled,
) -> ApiResult<Vec<(Uuid, String)>> {
    let meta = state.alloc.task_meta(account, touched.clone()).await?;
    let snapshots = state.tasks.get(account, touched.clone()).await?;
    let projects = state.alloc.list_projects(account).await?;
    let fallback = projects
        .iter()
        .min_by_key(|p| p.id)
        .map(|p| p.prefix.clone());
    let mut creates = Vec::new();
    let mut keys = Vec::new();
    let mut keyed = Vec::new();
    for (uuid, snap) in touched.into_iter().zip(snapshots) {
        let Some(snap) = snap else { continue };
        match meta.get(&uuid) {
            Some(m) => {
                let Some(k) = &m.key else {
                    // Reserved, not numbered yet: its create finishes (or the reaper settles it).
                    continue;
                };
                let key = k.key();
                keyed.push(uuid);
                if snap.key.as_deref() != Some(key.as_str())
                    || snap.project.as_deref() != Some(k.prefix.as_str())
                {
                    out.restored += 1;
                    keys.push((uuid, key));
                }
            }
            None if snap.status == callsign_core::dto::TaskStatus::Deleted => {}
            None => {
                let named = snap.project.as_deref().and_then(|p| {
                    projects
                        .iter()
                        .find(|pr| pr.is_named(&p.to_ascii_uppercase()))
                        .map(|pr| pr.prefix.clone())
                });
                let Some(project) = named.or_else(|| fallback.clone()) else {
                    continue;
                };
                let mut description: String = snap.description.chars().take(200).collect();
                if description.trim().is_empty() {
                    description = "(no description)".to_owned();
                }
                creates.push(CreateReq {
                    idem: format!("taskwarrior:{uuid}"),
                    uuid,
                    body: NewTask {
                        created_at: Some(snap.created_at),
                        ..NewTask::new(project, description)
                    },
                    witness: None,
                });
            }
        }
    }
    if !keyed.is_empty() {
        out.touched = keyed.len();
        state.alloc.touch(account, keyed, now_ms()).await?;
        // The feed moved: held `GET /v1/changes` requests wake now, not at their timeout.
        state.feed_changed(account).await;
    }
    if !creates.is_empty() {
        for answer in protocol::create_many(state, account, creates).await {
            match answer {
                Ok(reply) => {
                    if let Ok(task) = serde_json::from_str::<callsign_core::dto::Task>(&reply.body)
                    {
                        if let Some(k) = task.key {
                            out.keyed += 1;
                            keys.push((task.uuid, k));
                        }
                    }
                }
                // Left pending or refused: the next settle (or the reaper) finishes it.
                Err(e) => tracing::warn!(account, error = %e, "numbering a Taskwarrior task"),
            }
        }
    }
    Ok(keys)
}
