//! Concurrent edits (STRUCTURE.md, "Concurrent edits"): an edit a device had acknowledged is
//! never lost without a trace, and every device shows what the server merged.
//!
//! An acknowledged update's value of a field is accounted for when the task holds it, when
//! the task records it as a conflict (a later edit that had not seen it replaced it), or when a
//! later acknowledged edit of that field was made on top of it (its `base` is that value: the
//! device saw it and replaced it knowingly). The campaign's values are unique per edit, so a
//! base naming a value means that edit saw it.
use std::collections::BTreeMap;

use serde_json::Value;

use super::rules::{Found, DEVICES_AGREE, EDITS_KEPT};
use crate::view::Snapshot;

/// The text fields whose concurrent edits are checked.
const FIELDS: [&str; 2] = ["description", "notes"];

pub(super) fn kept(f: &mut Found, snap: &Snapshot) {
    let mut acked: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for device in &snap.devices {
        let done = device
            .outbox
            .iter()
            .filter(|r| r.op == "update" && r.state == "done");
        for row in done {
            if let Ok(body) = serde_json::from_str::<Value>(&row.body) {
                acked.entry(&row.uuid).or_default().push(body);
            }
        }
    }
    for (uuid, bodies) in &acked {
        // A task missing from the store is ACKED_ON_SERVER's to report.
        let Some(task) = snap.server.store.get(*uuid) else {
            continue;
        };
        for body in bodies {
            for field in FIELDS {
                let Some(v) = body[field].as_str() else {
                    continue;
                };
                let now = if field == "notes" {
                    &task.notes
                } else {
                    &task.description
                };
                let as_json = Value::String(v.to_owned()).to_string();
                let recorded = task
                    .conflicts
                    .iter()
                    .any(|(cf, cv)| cf == field && *cv == as_json);
                let seen_and_replaced = bodies
                    .iter()
                    .any(|b| b[field].is_string() && b["base"][field].as_str() == Some(v));
                if now != v && !recorded && !seen_and_replaced {
                    f.bad(
                        EDITS_KEPT,
                        format!(
                            "{uuid}: the acknowledged {field} {v:?} is not the task's ({now:?}), \
                             not among its conflicts {:?}, and no later edit replaced it \
                             having seen it",
                            task.conflicts
                        ),
                        vec![(*uuid).to_owned()],
                    );
                }
            }
        }
    }
}

/// Every device shows the server's notes and conflicts for each task the server has.
pub(super) fn agree(f: &mut Found, snap: &Snapshot) {
    for (d, device) in snap.devices.iter().enumerate() {
        for (uuid, t) in &device.tasks {
            let Some(server) = snap.server.store.get(uuid) else {
                continue;
            };
            if (&t.notes, &t.conflicts) != (&server.notes, &server.conflicts) {
                f.bad(
                    DEVICES_AGREE,
                    format!(
                        "device {d} shows {uuid} with notes {:?} and conflicts {:?}; the server \
                         has {:?} and {:?}",
                        t.notes, t.conflicts, server.notes, server.conflicts
                    ),
                    vec![uuid.clone()],
                );
            }
        }
    }
}
