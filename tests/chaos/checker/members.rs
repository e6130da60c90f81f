//! Teams (DESIGN.md section 9): the server stamps a task's `created_by` from the member whose
//! token created it, never from the client. The campaign recorded, by the task's UUID, which
//! member's device created it (`Expected::created_by`), so this holds every copy against that
//! ground truth, not against what the server says:
//! - the server's task store (what every answer and the feed carry): each acknowledged task
//!   names its creator; a member's task never lacks `created_by`, a Taskwarrior task (its sync
//!   carries no member's token) has none;
//! - every device: each task it holds with a key (or with a creator already) shows the same;
//! - the Taskwarrior replica, which gets the property through the server's replica, too.
//!
//! One violation per place that disagrees, counting its tasks and naming the first.
use std::collections::BTreeMap;

use super::rules::{Expected, Found, Keys, CREATED_BY};
use crate::view::Snapshot;

/// What is wrong with a `created_by` found where `want` was expected, if anything.
fn judge(want: Option<&String>, got: Option<&String>) -> Option<&'static str> {
    match (want, got) {
        (Some(w), Some(g)) if w == g => None,
        (None, None) => None,
        (Some(_), None) => Some("lacks created_by"),
        (Some(_), Some(_)) => Some("names another member"),
        (None, Some(_)) => Some("names a member for a Taskwarrior task"),
    }
}

fn show(name: Option<&String>) -> String {
    name.map_or_else(|| "none".to_owned(), |n| format!("@{n}"))
}

/// The tasks one place got wrong: (UUID, what is wrong, what it shows).
#[derive(Default)]
struct Wrong(Vec<(String, &'static str, Option<String>)>);

impl Wrong {
    fn see(&mut self, uuid: &str, want: Option<&String>, got: Option<&String>) {
        if let Some(what) = judge(want, got) {
            self.0.push((uuid.to_owned(), what, got.cloned()));
        }
    }

    fn report(mut self, f: &mut Found, place: &str, expected: &BTreeMap<String, Expected>) {
        self.0.sort();
        let Some((uuid, what, got)) = self.0.first() else {
            return;
        };
        let creator = expected.get(uuid).map_or_else(
            || "nobody the campaign knows".to_owned(),
            |e| match &e.created_by {
                Some(m) => format!("@{m} on device {}", e.device),
                None => "Taskwarrior".to_owned(),
            },
        );
        let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, w, _) in &self.0 {
            *kinds.entry(w).or_default() += 1;
        }
        f.bad(
            CREATED_BY,
            format!(
                "{place}: {} task(s) with the wrong creator ({kinds:?}), e.g. {uuid}, created by \
                 {creator}, shows {} ({what})",
                self.0.len(),
                show(got.as_ref())
            ),
            self.0.into_iter().map(|w| w.0).collect(),
        );
    }
}

pub(super) fn created_by(
    f: &mut Found,
    snap: &Snapshot,
    keys: &Keys,
    expected: &BTreeMap<String, Expected>,
) {
    // A task missing from a place is ACKED_ON_SERVER's or DEVICES_AGREE's to report.
    let want = |uuid: &str| expected.get(uuid).map(|e| e.created_by.as_ref());
    let mut server = Wrong::default();
    for (uuid, t) in &snap.server.store {
        match want(uuid) {
            Some(w) => server.see(uuid, w, t.created_by.as_ref()),
            // Nobody acknowledged it (reported as such); numbered, it still needs a creator.
            None if t.created_by.is_none() && keys.current(uuid).is_some() => {
                server.0.push((uuid.clone(), "lacks created_by", None));
            }
            None => {}
        }
    }
    server.report(f, "the server's task store", expected);
    for (d, device) in snap.devices.iter().enumerate() {
        let mut wrong = Wrong::default();
        for (uuid, t) in &device.tasks {
            // Provisional and not yet answered: the device cannot know its creator yet.
            if t.key.is_none() && t.created_by.is_none() {
                continue;
            }
            if let Some(w) = want(uuid) {
                wrong.see(uuid, w, t.created_by.as_ref());
            }
        }
        wrong.report(f, &format!("device {d}"), expected);
    }
    if let Some(tw) = &snap.taskwarrior {
        let mut wrong = Wrong::default();
        for (uuid, t) in &tw.tasks {
            if let Some(w) = want(uuid) {
                wrong.see(uuid, w, t.created_by.as_ref());
            }
        }
        wrong.report(f, "Taskwarrior's replica", expected);
    }
}
