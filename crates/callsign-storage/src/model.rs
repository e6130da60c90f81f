//! The task model every task store shares: a task's content as TaskChampion holds it
//! ([`Snapshot`]), and the edits of a group commit ([`Group`]: [`create`], [`update`],
//! [`set_keys`]) built with TaskChampion's own `TaskData::update`, so each backend writes the
//! same properties the same way. Properties written: `description`, `status`, `entry`,
//! `modified`, `end`, `project` (the prefix), `tag_*`, `due` (Unix seconds), `priority` (`H`,
//! `M`, `L`), as Taskwarrior writes them, and the user-defined attributes `notes`, `key`,
//! `conflicts`, `created_by`, `assignee`, `origin_tracker` and `origin_key` (Taskwarrior 3 with `uda.key.type=string` shows the
//! key), and one `commit_<hash>` per linked git commit, holding the link's JSON
//! (`callsign_core::dto::CommitLink`). [`set_keys`] also writes the project a key's prefix
//! names, so a moved or renamed task follows in Taskwarrior's `project`.
//!
//! **Commit links** are a property each, not one list, because TaskChampion merges per
//! property: two devices (or two servers' replicas) linking different commits to one task
//! concurrently both keep theirs. A link of the same hash replaces the earlier one; an unlink
//! removes the property. Links take no part in the field merge and record no conflict.
//!
//! **Concurrent edits.** [`update`] applies each patch merged field by field with what the task
//! holds now (`callsign_core::merge::merge`: tags merged as a set, a replaced value of a field
//! someone else changed since the patch's `base` kept as a conflict). Both task stores run it
//! inside their per-account write, so the read and the write are one step in the server's
//! order. Conflicts live on the task as the property `conflicts` (JSON), so they travel with it
//! through answers, the feed and replays, and cost nothing when absent. [`Snapshot::reflects`]
//! (the reaper's "was this update applied?") checks a set-merged tag update by what it added
//! and removed, and a `resolve` by the conflicts being gone.
use std::collections::HashMap;

use callsign_core::dto::{CommitLink, NewTask, Origin, TaskPatch, TaskStatus};
use callsign_core::merge::{self, Conflict, Fields};
use callsign_core::{validate, Priority};
use chrono::{DateTime, Utc};
use taskchampion::{Operations, TaskData};
use uuid::Uuid;

use crate::{AccountId, Error, Result};

/// A task's content as TaskChampion holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub uuid: Uuid,
    pub description: String,
    pub notes: String,
    pub status: TaskStatus,
    pub tags: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub modified_at: DateTime<Utc>,
    /// Taskwarrior's `due` (Unix seconds in the store, so whole seconds here).
    pub due: Option<DateTime<Utc>>,
    /// Taskwarrior's `priority`; a value other than `H`, `M` or `L` (Taskwarrior allows
    /// configured ones) reads as none.
    pub priority: Option<Priority>,
    pub key: Option<String>,
    /// Taskwarrior's `project` (the allocation store's key, not this, names the project the
    /// API reports).
    pub project: Option<String>,
    /// Values replaced by concurrent edits of the same field (`callsign_core::merge`), kept in
    /// the property `conflicts` as JSON.
    pub conflicts: Vec<Conflict>,
    /// The properties `created_by` (stamped from the creating token's member) and `assignee`.
    pub created_by: Option<String>,
    pub assignee: Option<String>,
    /// An imported task's tracker and key there (the properties `origin_tracker`,
    /// `origin_key`).
    pub origin: Option<Origin>,
    /// The git commits linked to it, oldest `at` first, ties by hash (the properties
    /// `commit_<hash>`, each a link's JSON; one that does not parse, names another hash or
    /// breaks `validate::commit_link`, as a Taskwarrior user might write it, is left out).
    pub commits: Vec<CommitLink>,
}

impl Snapshot {
    pub fn of(task: &TaskData) -> Snapshot {
        let status = match task.get("status") {
            Some("completed") => TaskStatus::Completed,
            Some("deleted") => TaskStatus::Deleted,
            _ => TaskStatus::Pending,
        };
        let time = |p: &str| {
            task.get(p)
                .and_then(|v| v.parse::<i64>().ok())
                .and_then(|secs| DateTime::from_timestamp(secs, 0))
        };
        let entry = time("entry").unwrap_or_default();
        let mut tags: Vec<String> = task
            .properties()
            .filter_map(|p| p.strip_prefix("tag_"))
            .map(str::to_owned)
            .collect();
        tags.sort();
        let mut commits: Vec<CommitLink> = task
            .iter()
            .filter_map(|(p, v)| {
                let hash = p.strip_prefix(COMMIT)?;
                serde_json::from_str::<CommitLink>(v)
                    .ok()
                    .filter(|c| c.hash == hash && validate::commit_link(c).is_ok())
            })
            .collect();
        CommitLink::sort(&mut commits);
        Snapshot {
            uuid: task.get_uuid(),
            description: task.get("description").unwrap_or("").to_owned(),
            notes: task.get("notes").unwrap_or("").to_owned(),
            status,
            tags,
            created_at: entry,
            modified_at: time("modified").unwrap_or(entry),
            due: time("due"),
            priority: task.get("priority").and_then(|p| Priority::parse(p).ok()),
            key: task.get("key").map(str::to_owned),
            project: task.get("project").map(str::to_owned),
            conflicts: task
                .get(CONFLICTS)
                .and_then(|c| serde_json::from_str(c).ok())
                .unwrap_or_default(),
            created_by: task.get(CREATED_BY).map(str::to_owned),
            assignee: task.get(ASSIGNEE).map(str::to_owned),
            origin: task.get(ORIGIN_TRACKER).map(|t| Origin {
                tracker: t.to_owned(),
                key: task.get(ORIGIN_KEY).map(str::to_owned),
            }),
            commits,
        }
    }

    /// The fields concurrent edits merge.
    pub fn fields(&self) -> Fields {
        Fields {
            description: self.description.clone(),
            notes: self.notes.clone(),
            status: self.status,
            tags: self.tags.clone(),
            due: self.due,
            priority: self.priority,
        }
    }

    /// True when every field the patch sets already has the patched value.
    pub fn reflects(&self, patch: &TaskPatch) -> bool {
        let mut tags = self.tags.clone();
        tags.sort();
        patch
            .description
            .as_ref()
            .is_none_or(|d| *d == self.description)
            && patch.notes.as_ref().is_none_or(|n| *n == self.notes)
            && patch.status.is_none_or(|s| s == self.status)
            && patch
                .due
                .is_none_or(|d| d.map(|t| t.timestamp()) == self.due.map(|t| t.timestamp()))
            && patch.priority.is_none_or(|p| p == self.priority)
            && patch
                .project
                .as_ref()
                .is_none_or(|p| Some(p) == self.project.as_ref())
            && patch.assignee.as_ref().is_none_or(|a| *a == self.assignee)
            && patch.tags.as_ref().is_none_or(|t| {
                match patch.base.as_ref().and_then(|b| b.tags.as_ref()) {
                    // Merged as a set: what it added is there, what it removed is not.
                    Some(base) => {
                        t.iter()
                            .filter(|x| !base.contains(x))
                            .all(|x| tags.contains(x))
                            && base
                                .iter()
                                .filter(|x| !t.contains(x))
                                .all(|x| !tags.contains(x))
                    }
                    None => {
                        let mut t = t.clone();
                        t.sort();
                        t.dedup();
                        t == tags
                    }
                }
            })
            && !self
                .conflicts
                .iter()
                .any(|c| patch.resolve.contains(&c.field))
            && patch.commits.iter().all(|l| self.commits.contains(l))
            && patch
                .unlink_commits
                .iter()
                .all(|h| !self.commits.iter().any(|c| c.hash == *h))
    }
}

/// The accounts whose replica failed its last open, read or commit, with the error; an entry
/// goes when the replica next works. `/readyz` reports them.
#[derive(Clone, Default)]
pub struct Failing(std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<AccountId, String>>>);

impl Failing {
    pub fn record<T>(&self, account: AccountId, res: &Result<T>) {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match res {
            Ok(_) => {
                m.remove(&account);
            }
            // Pressure on the whole process, not this account's database.
            Err(Error::OutOfFiles { .. }) => {}
            Err(e) => {
                m.insert(account, e.to_string());
            }
        }
    }

    pub fn list(&self) -> Vec<(AccountId, String)> {
        let m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        m.iter().map(|(a, e)| (*a, e.clone())).collect()
    }
}

/// Uncommitted work of one group, per account: the operations, and every task read or changed
/// so far (so a later command in the group sees an earlier one's changes).
#[derive(Default)]
pub struct Group {
    pub ops: Operations,
    pub tasks: HashMap<Uuid, Option<TaskData>>,
}

/// Creates the tasks that do not exist (their UUIDs are loaded in the group).
pub fn create(group: &mut Group, tasks: Vec<(Uuid, NewTask)>) -> Vec<Snapshot> {
    let now = Utc::now();
    let mut out = Vec::with_capacity(tasks.len());
    for (uuid, new) in tasks {
        let entry = group.tasks.entry(uuid).or_insert(None);
        let task = entry.get_or_insert_with(|| {
            let mut task = TaskData::create(uuid, &mut group.ops);
            fill_new(&mut task, new, now, &mut group.ops);
            task
        });
        out.push(Snapshot::of(task));
    }
    out
}

pub fn update(group: &mut Group, patches: Vec<(Uuid, TaskPatch)>) -> Vec<Option<Snapshot>> {
    let now = Utc::now();
    patches
        .into_iter()
        .map(|(uuid, patch)| {
            let task = group.tasks.get_mut(&uuid)?.as_mut()?;
            apply_patch(task, patch, now, &mut group.ops);
            Some(Snapshot::of(task))
        })
        .collect()
}

/// Writes each key, and the project its prefix names (a moved task's subtasks change project
/// by their new keys).
pub fn set_keys(group: &mut Group, keys: Vec<(Uuid, String)>) {
    for (uuid, key) in keys {
        if let Some(Some(task)) = group.tasks.get_mut(&uuid) {
            if let Ok(k) = callsign_core::TaskKey::parse(&key) {
                if task.get("project") != Some(k.prefix.as_str()) {
                    task.update("project", Some(k.prefix.to_string()), &mut group.ops);
                }
            }
            if task.get("key") != Some(key.as_str()) {
                task.update("key", Some(key), &mut group.ops);
            }
        }
    }
}

fn secs(t: DateTime<Utc>) -> Option<String> {
    Some(t.timestamp().to_string())
}

/// Sets status, and `end` as Taskwarrior does: set when a task leaves pending, cleared when it
/// returns.
fn set_status(task: &mut TaskData, status: TaskStatus, now: DateTime<Utc>, ops: &mut Operations) {
    task.update("status", Some(status.as_str().to_owned()), ops);
    match status {
        TaskStatus::Pending if task.has("end") => task.update("end", None, ops),
        TaskStatus::Completed | TaskStatus::Deleted if !task.has("end") => {
            task.update("end", secs(now), ops)
        }
        _ => {}
    }
}

fn fill_new(task: &mut TaskData, new: NewTask, now: DateTime<Utc>, ops: &mut Operations) {
    task.update("entry", secs(new.created_at.unwrap_or(now)), ops);
    task.update("modified", secs(now), ops);
    task.update("description", Some(new.description), ops);
    set_status(task, new.status.unwrap_or(TaskStatus::Pending), now, ops);
    task.update("project", Some(new.project.to_ascii_uppercase()), ops);
    if !new.notes.is_empty() {
        task.update("notes", Some(new.notes), ops);
    }
    set_tags(task, &new.tags, ops);
    if new.due.is_some() {
        task.update("due", new.due.and_then(secs), ops);
    }
    if let Some(p) = new.priority {
        task.update("priority", Some(p.as_str().to_owned()), ops);
    }
    if new.created_by.is_some() {
        task.update(CREATED_BY, new.created_by, ops);
    }
    if new.assignee.is_some() {
        task.update(ASSIGNEE, new.assignee, ops);
    }
    if let Some(o) = new.origin {
        task.update(ORIGIN_TRACKER, Some(o.tracker), ops);
        task.update(ORIGIN_KEY, o.key, ops);
    }
    set_commits(task, &new.commits, &[], ops);
}

/// The prefix of the task properties that hold commit links: `commit_<hash>`, the link's JSON.
const COMMIT: &str = "commit_";

/// Writes each link as its property `commit_<hash>` (unless it holds that link already) and
/// removes the property of each unlinked hash. Unlinks first, so a hash in both stays linked.
fn set_commits(
    task: &mut TaskData,
    links: &[CommitLink],
    unlinks: &[String],
    ops: &mut Operations,
) {
    for h in unlinks {
        let p = format!("{COMMIT}{h}");
        if task.has(&p) {
            task.update(&p, None, ops);
        }
    }
    for l in links {
        let p = format!("{COMMIT}{}", l.hash);
        let Ok(json) = serde_json::to_string(l) else {
            continue;
        };
        let same = task
            .get(&p)
            .and_then(|v| serde_json::from_str::<CommitLink>(v).ok())
            .is_some_and(|c| c == *l);
        if !same {
            task.update(&p, Some(json), ops);
        }
    }
}

/// The task properties of an imported task's origin.
const ORIGIN_TRACKER: &str = "origin_tracker";
const ORIGIN_KEY: &str = "origin_key";

/// The task properties that name members (Taskwarrior shows them as UDAs).
const CREATED_BY: &str = "created_by";
const ASSIGNEE: &str = "assignee";

/// The task property that holds a task's conflicts (JSON; absent when there are none).
const CONFLICTS: &str = "conflicts";

/// Applies a patch merged field by field with what the task holds now
/// (`callsign_core::merge`): a concurrent edit of the same field records the value it replaces.
fn apply_patch(task: &mut TaskData, patch: TaskPatch, now: DateTime<Utc>, ops: &mut Operations) {
    let before = Snapshot::of(task);
    let mut conflicts = before.conflicts.clone();
    let patch = merge::merge(&before.fields(), &patch, &mut conflicts, now);
    if conflicts != before.conflicts {
        let json = (!conflicts.is_empty())
            .then(|| serde_json::to_string(&conflicts).ok())
            .flatten();
        task.update(CONFLICTS, json, ops);
    }
    task.update("modified", secs(now), ops);
    if let Some(d) = patch.description {
        task.update("description", Some(d), ops);
    }
    if let Some(n) = patch.notes {
        task.update("notes", Some(n), ops);
    }
    if let Some(s) = patch.status {
        set_status(task, s, now, ops);
    }
    if let Some(tags) = patch.tags {
        set_tags(task, &tags, ops);
    }
    if let Some(due) = patch.due {
        task.update("due", due.and_then(secs), ops);
    }
    if let Some(p) = patch.priority {
        task.update("priority", p.map(|p| p.as_str().to_owned()), ops);
    }
    if let Some(p) = patch.project {
        task.update("project", Some(p), ops);
    }
    if let Some(a) = patch.assignee {
        task.update(ASSIGNEE, a, ops);
    }
    set_commits(task, &patch.commits, &patch.unlink_commits, ops);
}

fn set_tags(task: &mut TaskData, tags: &[String], ops: &mut Operations) {
    let current: Vec<String> = task
        .properties()
        .filter(|p| p.starts_with("tag_"))
        .cloned()
        .collect();
    let wanted: Vec<String> = tags.iter().map(|t| format!("tag_{t}")).collect();
    for p in current.iter().filter(|p| !wanted.contains(p)) {
        task.update(p, None, ops);
    }
    for p in wanted.iter().filter(|p| !current.contains(p)) {
        task.update(p, Some(String::new()), ops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use callsign_core::dto::CommitAction;
    use taskchampion::Operation;

    fn link(hash: char, at: i64, subject: &str) -> CommitLink {
        CommitLink {
            hash: hash.to_string().repeat(40),
            subject: subject.into(),
            author: "Ann <ann@example.com>".into(),
            at: DateTime::from_timestamp(at, 0).unwrap(),
            action: CommitAction::Refs,
            comment: None,
        }
    }

    fn links(links: Vec<CommitLink>) -> TaskPatch {
        TaskPatch {
            commits: links,
            ..TaskPatch::default()
        }
    }

    fn unlink(hash: char) -> TaskPatch {
        TaskPatch {
            unlink_commits: vec![hash.to_string().repeat(40)],
            ..TaskPatch::default()
        }
    }

    /// A task made from a create with `commits`, in a group of its own.
    fn made(commits: Vec<CommitLink>) -> (Group, Uuid) {
        let uuid = Uuid::from_u128(42);
        let mut new = NewTask::new("SYN", "Ship it");
        new.commits = commits;
        let mut group = Group::default();
        create(&mut group, vec![(uuid, new)]);
        (group, uuid)
    }

    /// The properties the operations since `from` wrote, in order.
    fn written(group: &Group, from: usize) -> Vec<String> {
        group.ops[from..]
            .iter()
            .filter_map(|op| match op {
                Operation::Update { property, .. } => Some(property.clone()),
                _ => None,
            })
            .collect()
    }

    fn hashes(s: &Snapshot) -> Vec<String> {
        s.commits.iter().map(|c| c.hash[..1].to_string()).collect()
    }

    #[test]
    fn a_create_writes_its_links_one_property_each_read_back_sorted() {
        let (group, uuid) = made(vec![link('b', 20, "b"), link('a', 30, "a")]);
        let task = group.tasks[&uuid].as_ref().unwrap();
        let json = task.get(format!("commit_{}", "b".repeat(40))).unwrap();
        assert_eq!(
            serde_json::from_str::<CommitLink>(json).unwrap(),
            link('b', 20, "b")
        );
        assert_eq!(hashes(&Snapshot::of(task)), ["b", "a"], "oldest first");
    }

    #[test]
    fn two_patches_linking_different_commits_both_stay_and_touch_only_their_property() {
        let (mut group, uuid) = made(vec![]);
        let from = group.ops.len();
        update(&mut group, vec![(uuid, links(vec![link('a', 10, "a")]))]);
        // Only the link's own property (and `modified`): a concurrent link of another commit,
        // on another replica, writes another property, and TaskChampion keeps both.
        assert_eq!(
            written(&group, from),
            ["modified".to_string(), format!("commit_{}", "a".repeat(40))]
        );
        let out = update(&mut group, vec![(uuid, links(vec![link('b', 5, "b")]))]);
        let snap = out[0].clone().unwrap();
        assert_eq!(hashes(&snap), ["b", "a"]);
        assert!(snap.conflicts.is_empty(), "a link records no conflict");
        // The same hash again replaces its link.
        let out = update(
            &mut group,
            vec![(uuid, links(vec![link('a', 10, "amended")]))],
        );
        let snap = out[0].clone().unwrap();
        assert_eq!(hashes(&snap), ["b", "a"]);
        assert_eq!(snap.commits[1].subject, "amended");
    }

    #[test]
    fn an_unlink_removes_the_property_and_a_link_already_there_writes_nothing() {
        let (mut group, uuid) = made(vec![link('a', 10, "a"), link('b', 20, "b")]);
        let out = update(&mut group, vec![(uuid, unlink('a'))]);
        let snap = out[0].clone().unwrap();
        assert_eq!(hashes(&snap), ["b"]);
        let task = group.tasks[&uuid].as_ref().unwrap();
        assert!(!task.has(format!("commit_{}", "a".repeat(40))));
        let from = group.ops.len();
        update(&mut group, vec![(uuid, unlink('a'))]);
        update(&mut group, vec![(uuid, links(vec![link('b', 20, "b")]))]);
        assert_eq!(
            written(&group, from),
            ["modified", "modified"],
            "an unlink of nothing and the same link again write no link property"
        );
    }

    #[test]
    fn reflects_needs_every_link_with_its_content_and_every_unlink_gone() {
        let (mut group, uuid) = made(vec![]);
        let p = TaskPatch {
            commits: vec![link('a', 10, "a")],
            unlink_commits: vec!["b".repeat(40)],
            ..TaskPatch::default()
        };
        let snap = |g: &Group| Snapshot::of(g.tasks[&uuid].as_ref().unwrap());
        assert!(!snap(&group).reflects(&p), "not linked yet");
        update(&mut group, vec![(uuid, links(vec![link('b', 20, "b")]))]);
        update(&mut group, vec![(uuid, p.clone())]);
        assert!(snap(&group).reflects(&p));
        assert!(!snap(&group).reflects(&links(vec![link('b', 20, "b")])));
        assert!(
            !snap(&group).reflects(&links(vec![link('a', 10, "other subject")])),
            "the link's content counts, not only its hash"
        );
    }

    #[test]
    fn a_property_that_is_not_a_link_of_its_hash_is_left_out() {
        let (mut group, uuid) = made(vec![link('a', 10, "a")]);
        let task = group.tasks.get_mut(&uuid).unwrap().as_mut().unwrap();
        task.update(
            format!("commit_{}", "c".repeat(40)),
            Some("not json".into()),
            &mut group.ops,
        );
        let other = serde_json::to_string(&link('d', 1, "d")).unwrap();
        task.update(
            format!("commit_{}", "e".repeat(40)),
            Some(other),
            &mut group.ops,
        );
        let bad = serde_json::to_string(&CommitLink {
            hash: "xyz".into(),
            ..link('x', 1, "made in Taskwarrior")
        })
        .unwrap();
        task.update("commit_xyz", Some(bad), &mut group.ops);
        assert_eq!(hashes(&Snapshot::of(task)), ["a"]);
    }
}
