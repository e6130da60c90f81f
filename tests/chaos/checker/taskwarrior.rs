//! Taskwarrior's view agrees with the server's keys after healing (issue 23). The campaign's
//! Taskwarrior replica synced last, twice, after everything else had settled, so:
//! - every task it created has exactly one key on the server, and it shows that key (`key`);
//! - every task the server numbered is in it, with the server's current key, description and
//!   status;
//! - it holds each task once: no task the server does not have (a copy under another UUID, a
//!   create that never arrived), no key on two of its tasks, no description twice (the
//!   campaign's descriptions are unique).
//!
//! The numbers themselves (gap-free, distinct, old keys included) are the server's keys table,
//! which Taskwarrior's tasks are numbered in like any other: `no_gaps` and `one_key` cover them.
use std::collections::{BTreeMap, HashMap};

use super::rules::{Expected, Found, Keys, TASKWARRIOR};
use crate::view::Snapshot;

pub(super) fn agrees(
    f: &mut Found,
    snap: &Snapshot,
    keys: &Keys,
    expected: &BTreeMap<String, Expected>,
) {
    let created: Vec<&String> = expected
        .iter()
        .filter(|(_, e)| e.taskwarrior)
        .map(|(u, _)| u)
        .collect();
    let Some(tw) = &snap.taskwarrior else {
        if !created.is_empty() {
            f.bad(
                TASKWARRIOR,
                format!(
                    "{} task(s) were created in Taskwarrior, but there is no replica to read",
                    created.len()
                ),
                created.into_iter().cloned().collect(),
            );
        }
        return;
    };
    let shown = &tw.tasks;
    let or_none = |k: Option<&String>| k.map_or("none".to_owned(), String::clone);
    // Its own tasks: one key on the server, the same one in Taskwarrior.
    for uuid in &created {
        let rows = keys.rows(uuid);
        let key = match rows {
            [k] if k.current => Some(k.key()),
            _ => {
                let held: Vec<String> = rows
                    .iter()
                    .map(|k| format!("{}{}", k.key(), if k.current { "" } else { " (old)" }))
                    .collect();
                f.bad(
                    TASKWARRIOR,
                    format!(
                        "{uuid}, created in Taskwarrior, has {held:?} on the server, one key \
                         expected"
                    ),
                    vec![(*uuid).clone()],
                );
                None
            }
        };
        match shown.get(*uuid) {
            None => f.bad(
                TASKWARRIOR,
                format!("{uuid} was created in Taskwarrior and is no longer in its replica"),
                vec![(*uuid).clone()],
            ),
            Some(t) if t.key.is_none() => f.bad(
                TASKWARRIOR,
                format!(
                    "Taskwarrior shows no key for its task {uuid}; the server has {}",
                    or_none(key.as_ref())
                ),
                vec![(*uuid).clone()],
            ),
            Some(t) if key.is_some() && t.key != key => f.bad(
                TASKWARRIOR,
                format!(
                    "Taskwarrior shows {} for its task {uuid}; the server has {}",
                    or_none(t.key.as_ref()),
                    or_none(key.as_ref())
                ),
                vec![(*uuid).clone()],
            ),
            Some(_) => {}
        }
    }
    // Every task the server numbered, with its current key and content.
    let mut missing = Vec::new();
    for uuid in snap.server.reserved.keys() {
        let Some(key) = keys.current(uuid).map(|k| k.key()) else {
            continue; // one_key reports a reserved task without a current key
        };
        let Some(t) = shown.get(uuid) else {
            missing.push(uuid.clone());
            continue;
        };
        let own = expected.get(uuid).is_some_and(|e| e.taskwarrior);
        if !own && t.key.as_ref() != Some(&key) {
            f.bad(
                TASKWARRIOR,
                format!(
                    "Taskwarrior shows {} for {uuid}; the server has {key}",
                    or_none(t.key.as_ref())
                ),
                vec![uuid.clone()],
            );
        }
        if let Some(s) = snap.server.store.get(uuid) {
            if (&t.description, &t.status) != (&s.description, &s.status) {
                f.bad(
                    TASKWARRIOR,
                    format!(
                        "Taskwarrior shows {key} ({uuid}) as {:?}, the server as {:?}",
                        (&t.description, &t.status),
                        (&s.description, &s.status)
                    ),
                    vec![uuid.clone()],
                );
            }
        }
    }
    missing.sort();
    if let Some(first) = missing.first().cloned() {
        f.bad(
            TASKWARRIOR,
            format!(
                "{} task(s) the server numbered are not in Taskwarrior, e.g. {first}",
                missing.len()
            ),
            missing,
        );
    }
    // Each task once.
    let mut unknown: Vec<String> = shown
        .keys()
        .filter(|u| !snap.server.reserved.contains_key(*u) && !created.contains(u))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        unknown.sort();
        f.bad(
            TASKWARRIOR,
            format!(
                "Taskwarrior has {} task(s) the server does not, e.g. {} ({:?})",
                unknown.len(),
                unknown[0],
                shown[&unknown[0]].description
            ),
            unknown,
        );
    }
    let mut by_key: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
    let mut by_description: HashMap<&str, Vec<&String>> = HashMap::new();
    for (uuid, t) in shown {
        if let Some(k) = &t.key {
            by_key.entry(k).or_default().push(uuid);
        }
        by_description.entry(&t.description).or_default().push(uuid);
    }
    for (key, uuids) in by_key.into_iter().filter(|(_, u)| u.len() > 1) {
        f.bad(
            TASKWARRIOR,
            format!("Taskwarrior shows {key} on {} tasks", uuids.len()),
            uuids.into_iter().cloned().collect(),
        );
    }
    for (d, uuids) in by_description.into_iter().filter(|(_, u)| u.len() > 1) {
        f.bad(
            TASKWARRIOR,
            format!("Taskwarrior has {} tasks described {d:?}", uuids.len()),
            uuids.into_iter().cloned().collect(),
        );
    }
}
