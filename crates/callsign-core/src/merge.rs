//! Concurrent edits, merged field by field (docs/STRUCTURE.md, "Concurrent edits").
//!
//! A client's patch carries, beside each field it sets, the value that field had on the device
//! when the user changed it (its `base`). The server applies patches in its order, one task at
//! a time, with [`merge`]:
//!
//! - A field the patch does not set is left as it is, so edits of different fields on two
//!   devices both survive.
//! - A field whose current value is still the base (nobody changed it meanwhile), or already the
//!   patched value, is simply set.
//! - A field someone else changed since the device saw it (current ≠ base ≠ patched) is set to
//!   the patched value, the later edit in the server's order, and the value it replaces is kept
//!   as a [`Conflict`] on the task, never silently dropped.
//! - Tags are a set: the tags the patch added to its base are added, the ones it removed are
//!   removed, and the rest of the current set (a concurrent edit's tags) stays. No conflict.
//! - A patch without a base for a field (an API client that does not send one) is the plain
//!   last write, as before.
//!
//! Conflicts go away when the field comes to hold their value again (a restore) or when a patch
//! names the field in `resolve` (the user keeps what is there). A task keeps at most
//! [`MAX_CONFLICTS`], the newest.
//!
//! Pure and table-tested. The task stores run it inside their per-account write
//! (`callsign_storage::model`), so each patch merges with the task as the server's order left
//! it; the conflicts are kept on the task as the property `conflicts`.
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dto::{PatchBase, TaskPatch, TaskStatus};
use crate::Priority;

/// The most conflicts one task keeps; beyond it the oldest go.
pub const MAX_CONFLICTS: usize = 20;

/// A field that two devices may edit concurrently.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Field {
    Description,
    Notes,
    Status,
    Tags,
    Due,
    Priority,
}

impl Field {
    pub const ALL: [Field; 6] = [
        Field::Description,
        Field::Notes,
        Field::Status,
        Field::Tags,
        Field::Due,
        Field::Priority,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Field::Description => "description",
            Field::Notes => "notes",
            Field::Status => "status",
            Field::Tags => "tags",
            Field::Due => "due",
            Field::Priority => "priority",
        }
    }

    pub fn parse(s: &str) -> Option<Field> {
        Field::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A value that a later edit of the same field replaced while its device had not seen it: the
/// task keeps it so that a person can restore it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Conflict {
    pub field: Field,
    /// The replaced value, as the field's JSON (a string, a list of tags, a date or null).
    #[schema(value_type = Value)]
    pub value: Value,
    /// When the server replaced it.
    pub at: DateTime<Utc>,
}

/// The mergeable fields of a task as they are now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    pub description: String,
    pub notes: String,
    pub status: TaskStatus,
    pub tags: Vec<String>,
    pub due: Option<DateTime<Utc>>,
    pub priority: Option<Priority>,
}

/// A due date as the task store keeps it: whole seconds.
fn whole_seconds(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(t.timestamp(), 0).unwrap_or(t)
}

fn json<T: Serialize>(v: T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn sorted(tags: &[String]) -> Vec<String> {
    let mut t = tags.to_vec();
    t.sort();
    t.dedup();
    t
}

impl Fields {
    /// The field's value as JSON, as a [`Conflict`] records it.
    pub fn value(&self, field: Field) -> Value {
        match field {
            Field::Description => json(&self.description),
            Field::Notes => json(&self.notes),
            Field::Status => json(self.status),
            Field::Tags => json(sorted(&self.tags)),
            Field::Due => json(self.due.map(whole_seconds)),
            Field::Priority => json(self.priority),
        }
    }

    /// These fields with the patch's values.
    pub fn apply(&mut self, p: &TaskPatch) {
        if let Some(d) = &p.description {
            self.description = d.clone();
        }
        if let Some(n) = &p.notes {
            self.notes = n.clone();
        }
        if let Some(s) = p.status {
            self.status = s;
        }
        if let Some(t) = &p.tags {
            self.tags = sorted(t);
        }
        if let Some(d) = p.due {
            self.due = d.map(whole_seconds);
        }
        if let Some(pr) = p.priority {
            self.priority = pr;
        }
    }
}

/// Each field a patch sets, as JSON: (field, patched value, base value if sent).
fn set_fields(p: &TaskPatch) -> Vec<(Field, Value, Option<Value>)> {
    let base = p.base.clone().unwrap_or_default();
    let mut out = Vec::new();
    let mut push = |f: Field, v: Option<Value>, b: Option<Value>| {
        if let Some(v) = v {
            out.push((f, v, b));
        }
    };
    push(
        Field::Description,
        p.description.as_ref().map(json),
        base.description.map(json),
    );
    push(
        Field::Notes,
        p.notes.as_ref().map(json),
        base.notes.map(json),
    );
    push(Field::Status, p.status.map(json), base.status.map(json));
    push(
        Field::Due,
        p.due.map(|d| json(d.map(whole_seconds))),
        base.due.map(|d| json(d.map(whole_seconds))),
    );
    push(
        Field::Priority,
        p.priority.map(json),
        base.priority.map(json),
    );
    out
}

/// Merges `patch` into a task whose fields are `current` and whose recorded conflicts are
/// `conflicts`, at `at` (the server's clock). Returns the patch to apply (its tags merged as a
/// set; no `base`, no `resolve`) and updates `conflicts`: new ones recorded, resolved and
/// restored ones removed, at most [`MAX_CONFLICTS`] kept. Pure; the same inputs give the same
/// result, so applying a patch again (a retry) records nothing twice.
pub fn merge(
    current: &Fields,
    patch: &TaskPatch,
    conflicts: &mut Vec<Conflict>,
    at: DateTime<Utc>,
) -> TaskPatch {
    for (field, value, base) in set_fields(patch) {
        let now = current.value(field);
        if let Some(base) = base {
            if base != now && value != now {
                conflicts.push(Conflict {
                    field,
                    value: now,
                    at,
                });
            }
        }
    }
    let mut out = TaskPatch {
        base: None,
        resolve: Vec::new(),
        ..patch.clone()
    };
    if let (Some(mine), Some(base)) = (
        &patch.tags,
        patch.base.as_ref().and_then(|b| b.tags.as_ref()),
    ) {
        let (mine, base) = (sorted(mine), sorted(base));
        let mut merged: Vec<String> = current
            .tags
            .iter()
            .filter(|t| mine.contains(t) || !base.contains(t))
            .cloned()
            .collect();
        merged.extend(mine.iter().filter(|t| !base.contains(t)).cloned());
        out.tags = Some(sorted(&merged));
    }
    let mut after = current.clone();
    after.apply(&out);
    conflicts.retain(|c| !patch.resolve.contains(&c.field) && c.value != after.value(c.field));
    // One entry per (field, value): the newest.
    let mut seen = Vec::new();
    let mut kept: Vec<Conflict> = conflicts
        .iter()
        .rev()
        .filter(|c| {
            let id = (c.field, c.value.clone());
            !seen.contains(&id) && {
                seen.push(id);
                true
            }
        })
        .take(MAX_CONFLICTS)
        .cloned()
        .collect();
    kept.reverse();
    *conflicts = kept;
    out
}

/// The base a device sends for `patch`: the value each field it sets had on the device before
/// the edit. Tags included; `project` (a move) has none.
pub fn base_for(before: &Fields, patch: &TaskPatch) -> PatchBase {
    PatchBase {
        description: patch
            .description
            .as_ref()
            .map(|_| before.description.clone()),
        notes: patch.notes.as_ref().map(|_| before.notes.clone()),
        status: patch.status.map(|_| before.status),
        tags: patch.tags.as_ref().map(|_| sorted(&before.tags)),
        due: patch.due.map(|_| before.due),
        priority: patch.priority.map(|_| before.priority),
    }
}

/// The patch that brings a conflict's value back (a restore). The device adds its `base` as
/// for any edit; once the field holds the value again, the conflict is gone.
pub fn restore(c: &Conflict) -> Result<TaskPatch, serde_json::Error> {
    serde_json::from_value::<TaskPatch>(serde_json::json!({ c.field.as_str(): c.value }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn at() -> DateTime<Utc> {
        "2026-11-26T10:00:00Z".parse().unwrap()
    }

    fn fields() -> Fields {
        Fields {
            description: "Ship it".into(),
            notes: "n".into(),
            tags: vec!["a".into(), "b".into()],
            ..Fields::default()
        }
    }

    fn patch(v: Value) -> TaskPatch {
        serde_json::from_value(v).unwrap()
    }

    /// (current fields, patch) → (applied patch's tags/description, conflicts recorded).
    #[rstest]
    #[case::base_unchanged_no_conflict(
        json!({"description": "Mine", "base": {"description": "Ship it"}}), "Mine", vec![])]
    #[case::concurrent_same_field_records_the_replaced_value(
        json!({"description": "Mine", "base": {"description": "Old"}}), "Mine",
        vec![(Field::Description, json!("Ship it"))])]
    #[case::same_value_on_both_is_no_conflict(
        json!({"description": "Ship it", "base": {"description": "Old"}}), "Ship it", vec![])]
    #[case::no_base_is_last_write(json!({"description": "Mine"}), "Mine", vec![])]
    #[case::other_field_changed_no_conflict(
        json!({"notes": "x", "base": {"notes": "n"}}), "Ship it", vec![])]
    #[case::status_conflict(
        json!({"status": "deleted", "base": {"status": "completed"}}), "Ship it",
        vec![(Field::Status, json!("pending"))])]
    fn merges_field_by_field(
        #[case] p: Value,
        #[case] description: &str,
        #[case] want: Vec<(Field, Value)>,
    ) {
        let cur = fields();
        let mut conflicts = Vec::new();
        let out = merge(&cur, &patch(p), &mut conflicts, at());
        let mut after = cur.clone();
        after.apply(&out);
        assert_eq!(after.description, description);
        let got: Vec<_> = conflicts.into_iter().map(|c| (c.field, c.value)).collect();
        assert_eq!(got, want);
        assert!(out.base.is_none() && out.resolve.is_empty());
    }

    #[rstest]
    #[case::added_on_each_device(json!(["a", "b", "c"]), json!(["a", "b"]), vec!["a", "b", "c", "x"])]
    #[case::removed_here_added_there(json!(["b"]), json!(["a", "b"]), vec!["b", "x"])]
    #[case::no_base_replaces(json!(["q"]), Value::Null, vec!["q"])]
    fn tags_merge_as_a_set(#[case] mine: Value, #[case] base: Value, #[case] want: Vec<&str>) {
        // Another device added `x` meanwhile: the current set is a, b, x.
        let cur = Fields {
            tags: vec!["a".into(), "b".into(), "x".into()],
            ..fields()
        };
        let p = if base.is_null() {
            patch(json!({"tags": mine}))
        } else {
            patch(json!({"tags": mine, "base": {"tags": base}}))
        };
        let mut conflicts = Vec::new();
        let out = merge(&cur, &p, &mut conflicts, at());
        assert_eq!(out.tags.unwrap(), want);
        assert!(conflicts.is_empty());
    }

    #[test]
    fn restore_and_resolve_clear_a_conflict_and_a_retry_records_nothing_twice() {
        let mut cur = fields();
        let mut conflicts = Vec::new();
        let p = patch(json!({"description": "Mine", "base": {"description": "Old"}}));
        let out = merge(&cur, &p, &mut conflicts, at());
        cur.apply(&out);
        assert_eq!(conflicts.len(), 1);
        // The same patch again (a retry after a crash): nothing new.
        merge(&cur, &p, &mut conflicts, at());
        assert_eq!(conflicts.len(), 1);
        // Restoring brings the replaced value back and the conflict goes.
        let mut r = restore(&conflicts[0]).unwrap();
        r.base = Some(base_for(&cur, &r));
        assert_eq!(
            r.base.as_ref().unwrap().description.as_deref(),
            Some("Mine")
        );
        let mut c2 = conflicts.clone();
        let out = merge(&cur, &r, &mut c2, at());
        assert_eq!(out.description.as_deref(), Some("Ship it"));
        assert!(c2.is_empty(), "restored");
        // Keeping what is there: resolve names the field.
        let keep = patch(json!({"resolve": ["description"]}));
        merge(&cur, &keep, &mut conflicts, at());
        assert!(conflicts.is_empty(), "resolved");
    }

    #[test]
    fn at_most_max_conflicts_are_kept_the_newest() {
        let mut cur = fields();
        let mut conflicts = Vec::new();
        for i in 0..(MAX_CONFLICTS + 5) {
            let p = patch(json!({"description": format!("v{i}"), "base": {"description": "?"}}));
            let out = merge(&cur, &p, &mut conflicts, at());
            cur.apply(&out);
        }
        assert_eq!(conflicts.len(), MAX_CONFLICTS);
        assert_eq!(
            conflicts.last().unwrap().value,
            json!(format!("v{}", MAX_CONFLICTS + 3))
        );
    }

    #[test]
    fn due_compares_in_whole_seconds() {
        let cur = Fields {
            due: Some("2026-12-01T09:00:00Z".parse().unwrap()),
            ..fields()
        };
        let p = patch(json!({"due": "2026-12-01T09:00:00.5Z", "base": {"due": null}}));
        let mut conflicts = Vec::new();
        merge(&cur, &p, &mut conflicts, at());
        assert!(conflicts.is_empty(), "the same second is the same date");
        let base = base_for(&cur, &patch(json!({"due": null, "priority": "H"})));
        assert_eq!(base.due, Some(cur.due));
        assert_eq!(base.priority, Some(None));
        assert_eq!(base.description, None);
    }
}
