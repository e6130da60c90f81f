//! Importing another tracker's export (`callsign import --from`, the app's Settings → Import):
//! the file is read and planned before anything is made ([`callsign_import`]). A dry run stops
//! there, offline too (from what this device last heard of the team). A real import needs the
//! server once: to confirm this device's member is an owner (an import claims keys in the
//! account), to read the team and its projects, and to make the projects the plan needs. Then
//! every task is queued here in one transaction ([`Engine::import`]) under a UUID and an
//! idempotency key derived from the source, so the same file again queues nothing and a run cut
//! short goes on where it stopped; the sync loop sends them like any capture.
use std::collections::{BTreeSet, HashMap};

use callsign_core::dto::{Member, Origin, Project};
use callsign_core::Role;
use callsign_import::plan::{self, Options, Plan, Report};
use callsign_import::{build, Format, SourceIssue};
use serde::Serialize;
use uuid::Uuid;

use super::Engine;
use crate::error::{Error, Result};
use crate::model::{LocalTask, SyncState};
use crate::store::{ImportQueued, ImportTask, TaskFilter};

/// What to import, and how.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    pub format: Format,
    /// The export's bytes (any encoding is named when it is not UTF-8).
    pub bytes: Vec<u8>,
    /// Each task keeps its very number, in a project made for it.
    pub keep_numbers: bool,
    /// The project to import into; with `keep_numbers`, the prefix for GitHub's `#N`.
    pub project: Option<String>,
    /// Plan only: nothing is made.
    pub dry_run: bool,
}

/// What an import did (or, in a dry run, would do).
#[derive(Debug, Clone)]
pub struct ImportOutcome {
    pub report: Report,
    /// The server answered (a dry run may go on without it).
    pub online: bool,
    /// The tasks of the file, in the order they were queued (empty in a dry run).
    pub uuids: Vec<Uuid>,
    pub queued: ImportQueued,
    /// Keys of the file that name another task here already (its tracker key imported before
    /// with another issue, or a kept number another task holds): `(key, that task's label)`.
    /// The server refuses those tasks (`already_imported`, `key_taken`); the rest go ahead.
    pub clashes: Vec<Clash>,
}

/// A key of the file that names another task here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Clash {
    /// The key in the file (`ENG-4`, `#12`).
    pub key: String,
    /// The task here it names: its key, or its provisional id.
    pub task: String,
}

/// How an import's tasks stand now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportProgress {
    pub total: usize,
    pub keyed: usize,
    pub waiting: usize,
    /// The refused ones: their tracker key (or label) and the server's reason.
    pub failed: Vec<(String, String)>,
}

impl Engine {
    /// Reads, plans and (unless a dry run) queues an import; see the module.
    pub async fn import_export(&self, req: ImportRequest) -> Result<ImportOutcome> {
        let issues = callsign_import::parse(req.format, &req.bytes)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let online = self.members().await;
        let members = match &online {
            Ok(m) => m.clone(),
            Err(e) if !req.dry_run => {
                return Err(Error::Invalid(format!(
                    "an import needs the server once, to check you are an owner and to read \
                     the team and its projects; it did not answer ({e}). A dry run works \
                     offline."
                )))
            }
            Err(_) => self.known_members()?.unwrap_or_default(),
        };
        let projects = self.projects().await?;
        if online.is_ok() && !req.dry_run {
            self.owner_only(&members)?;
        }
        let team: Vec<plan::Member> = members
            .iter()
            .map(|m| plan::Member {
                name: m.name.clone(),
                email: None,
            })
            .collect();
        let prefixes: Vec<String> = projects
            .iter()
            .flat_map(|p| std::iter::once(&p.prefix).chain(&p.previous_prefixes))
            .cloned()
            .collect();
        // One pass over the tasks here serves both the resume rule and the clashes.
        let here = self.list(TaskFilter { all: true })?;
        let resumable = resumable(req.format, &issues, &projects, &here);
        let opts = Options {
            keep_numbers: req.keep_numbers,
            project: req.project.clone(),
        };
        let plan = plan::plan(&issues, &opts, &team, &prefixes, &resumable)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let mut outcome = ImportOutcome {
            report: plan.report.clone(),
            online: online.is_ok(),
            uuids: Vec::new(),
            queued: ImportQueued::default(),
            clashes: clashes(req.format, &issues, &plan, &here),
        };
        if req.dry_run {
            return Ok(outcome);
        }
        for p in plan.report.projects.iter().filter(|p| p.new) {
            self.create_project(&p.prefix, &p.prefix, true).await?;
        }
        let due = |d: chrono::NaiveDate| self.parse_due(&d.to_string()).ok().flatten();
        let made = build::creates(req.format, &issues, &plan, &due);
        outcome.uuids = made.iter().map(|m| m.uuid).collect();
        let items = made
            .into_iter()
            .map(|m| ImportTask {
                uuid: m.uuid,
                idempotency_key: m.idempotency_key,
                body: m.body,
            })
            .collect();
        outcome.queued = self.import(items)?;
        Ok(outcome)
    }

    /// How the tasks `uuids` of an import stand now.
    pub fn import_progress(&self, uuids: &[Uuid]) -> Result<ImportProgress> {
        let mut p = ImportProgress {
            total: uuids.len(),
            ..ImportProgress::default()
        };
        let store = self.store();
        for u in uuids {
            let Some(t) = store.task(*u)? else { continue };
            match t.sync_state {
                SyncState::Synced => p.keyed += 1,
                SyncState::Provisional => p.waiting += 1,
                SyncState::Failed => p.failed.push((
                    t.origin
                        .as_ref()
                        .and_then(|o| o.key.clone())
                        .unwrap_or_else(|| t.label()),
                    t.last_error.clone().unwrap_or_default(),
                )),
            }
        }
        Ok(p)
    }

    /// Refused at once unless this device's member is an owner.
    fn owner_only(&self, members: &[Member]) -> Result<()> {
        let me = self.me()?;
        let role = me
            .as_ref()
            .and_then(|me| members.iter().find(|m| m.name == me.name))
            .map(|m| m.role);
        match (me, role) {
            (Some(me), Some(r)) if r != Role::Owner => Err(Error::Invalid(format!(
                "only the team's owners import (an import claims keys in the account); {} is \
                 a member: ask an owner",
                me.name
            ))),
            _ => Ok(()),
        }
    }
}

/// The prefixes of projects an import from this tracker kept numbers in before (a task of this
/// very file is there, or one from this tracker whose key is the project's): kept numbers may
/// go on there (the same file again, a run cut short, a later export). A number another task
/// took meanwhile is refused by the server for its issue alone (`key_taken`), never doubled.
fn resumable(
    format: Format,
    issues: &[SourceIssue],
    projects: &[Project],
    here: &[LocalTask],
) -> Vec<String> {
    let ours: BTreeSet<Uuid> = issues.iter().map(|i| build::uuid_of(format, i)).collect();
    let kept_here = |t: &LocalTask| {
        t.origin.as_ref().is_some_and(|o| {
            o.tracker == format.as_str()
                && o.key
                    .as_deref()
                    .and_then(|k| callsign_core::TaskKey::parse(k).ok())
                    .is_some_and(|k| k.prefix.as_str() == t.project)
        })
    };
    let holding: BTreeSet<&str> = here
        .iter()
        .filter(|t| ours.contains(&t.uuid) || kept_here(t))
        .map(|t| t.project.as_str())
        .collect();
    projects
        .iter()
        .filter(|p| holding.contains(p.prefix.as_str()))
        .map(|p| p.prefix.clone())
        .collect()
}

/// The keys of the file that name another task here (see [`ImportOutcome::clashes`]).
fn clashes(format: Format, issues: &[SourceIssue], plan: &Plan, here: &[LocalTask]) -> Vec<Clash> {
    let mut by_origin = HashMap::new();
    let mut by_key = HashMap::new();
    for t in here {
        if let Some(k) = t.origin.as_ref().and_then(|o| o.key.as_deref()) {
            by_origin.insert(Origin::normal_key(k), t);
        }
        for k in t.key.iter().chain(&t.previous_keys) {
            by_key.insert(k.as_str(), t);
        }
    }
    let mut out = Vec::new();
    for item in &plan.items {
        let i = &issues[item.issue];
        let Some(key) = &i.key else { continue };
        let uuid = build::uuid_of(format, i);
        let kept = item.number.map(|n| format!("{}-{n}", item.project));
        let other = by_origin
            .get(&Origin::normal_key(key))
            .or_else(|| kept.as_deref().and_then(|k| by_key.get(k)))
            .filter(|t| t.uuid != uuid);
        if let Some(t) = other {
            out.push(Clash {
                key: key.clone(),
                task: t.label(),
            });
        }
    }
    out
}
