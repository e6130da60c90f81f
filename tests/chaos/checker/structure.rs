//! The checks of structured keys (STRUCTURE.md): a subtask's key lies under its parent's, and
//! every key ever assigned, old ones included, names its task wherever it is asked.
use super::rules::{Found, Keys, RESOLVES, SUBTASK_KEYS};
use crate::view::{KeyRow, Snapshot};

/// Whether `child` is numbered in `parent`'s scope (`SYN-42.1` under `SYN-42`).
fn under(child: &KeyRow, parent: &KeyRow) -> bool {
    child.prefix == parent.prefix && child.scope == parent.path()
}

/// A subtask's current key is its parent's current key and its own number, and each key it
/// had lay under a key its parent had; a task with no parent has only top-level keys.
pub(super) fn subtask_keys(f: &mut Found, snap: &Snapshot, keys: &Keys, restored: bool) {
    for (uuid, r) in &snap.server.reserved {
        let rows = keys.rows(uuid);
        let Some(parent) = &r.parent else {
            if let Some(k) = rows.iter().find(|k| !k.scope.is_empty()) {
                f.bad(
                    SUBTASK_KEYS,
                    format!("{uuid} has no parent but had the subtask key {}", k.key()),
                    vec![uuid.clone()],
                );
            }
            continue;
        };
        let (mine, theirs) = (keys.current(uuid), keys.current(parent));
        if let (Some(k), Some(p)) = (mine, theirs) {
            // After a restore, a subtask may be under a key of its parent's from a move the
            // backup lost (its old key now).
            let under_old = || restored && keys.rows(parent).iter().any(|p| under(k, p));
            if !under(k, p) && !under_old() {
                f.bad(
                    SUBTASK_KEYS,
                    format!(
                        "{uuid} is {}, but its parent {parent} is {}",
                        k.key(),
                        p.key()
                    ),
                    vec![uuid.clone(), parent.clone()],
                );
            }
        }
        let parent_rows = keys.rows(parent);
        for old in rows.iter().filter(|k| !k.current) {
            if !parent_rows.iter().any(|p| under(old, p)) {
                f.bad(
                    SUBTASK_KEYS,
                    format!(
                        "{uuid} had {}, under no key its parent {parent} ever had",
                        old.key()
                    ),
                    vec![uuid.clone(), parent.clone()],
                );
            }
        }
    }
}

/// Every key row, current or old, names its task: the server answers it with the task's
/// current key, each device's engine finds the task by it. Nothing to check when nobody asked.
pub(super) fn resolves(f: &mut Found, snap: &Snapshot, keys: &Keys) {
    let Some(resolved) = &snap.resolved else {
        return;
    };
    // (key, its task, what answered instead), per asker.
    let mut server_misses = Vec::new();
    let mut device_misses = vec![Vec::new(); resolved.devices.len()];
    for k in &snap.server.keys {
        let key = k.key();
        let now = keys.current(&k.uuid).map(|c| c.key());
        let answer = resolved.server.get(&key).cloned().flatten();
        if answer.as_ref().map(|(u, c)| (u, Some(c))) != Some((&k.uuid, now.as_ref())) {
            server_misses.push((key.clone(), k.uuid.clone(), format!("{answer:?}")));
        }
        for (d, found) in resolved.devices.iter().enumerate() {
            let got = found.get(&key).cloned().flatten();
            if got.as_ref() != Some(&k.uuid) {
                device_misses[d].push((key.clone(), k.uuid.clone(), format!("{got:?}")));
            }
        }
    }
    let asked = std::iter::once(("the server".to_owned(), server_misses)).chain(
        device_misses
            .into_iter()
            .enumerate()
            .map(|(d, m)| (format!("device {d}"), m)),
    );
    for (who, misses) in asked {
        if let Some((key, uuid, got)) = misses.first() {
            f.bad(
                RESOLVES,
                format!(
                    "{who}: {} key(s) do not name their task, e.g. {key} (of {uuid}) gave {got}",
                    misses.len()
                ),
                misses.into_iter().map(|m| m.1).collect(),
            );
        }
    }
}
