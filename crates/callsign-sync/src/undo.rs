//! Undo: what each local change takes to revert, decided without I/O. The journal that keeps it
//! is `store::undo`.
//!
//! Each user change on this device (a capture, an edit, `done`, `delete`, `reopen`, `annotate`,
//! a restored conflict, a move) records, in the transaction of the change itself, the patch that
//! puts back what it replaced: the previous values of exactly the fields it set (for a move, the
//! previous project), or for a capture `status: deleted`. One command is one *step* (an import is
//! one step of many captures; `edit --project --description` one step of a move and an edit);
//! `undo` reverts the newest step and drops it, so a second `undo` reverts the step before it.
//! The revert is a new local change through the outbox like any edit, never a rewrite of what was
//! sent: keys are never reused, so an undone capture stays a deleted task with its key, and an
//! undone move of a numbered task gets a new number in its old project.
//!
//! Changes that come from the server (pulls) are not journaled, and an undo restores the
//! recorded values whatever the task holds now: a field another device changed since is set
//! back too, and the server keeps that device's value as a conflict (`callsign_core::merge`).
//!
//! The journal keeps the newest [`MAX_STEPS`] steps (and at most [`MAX_ROWS`] rows), pruned in
//! the transaction that writes a step. An undo itself is never journaled, so repeated undos
//! walk back the stack.
use callsign_core::dto::{TaskPatch, TaskStatus};
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::model::LocalTask;

/// The most steps the journal keeps; older ones go in the transaction that adds a new one.
pub const MAX_STEPS: i64 = 100;
/// Older steps also go while the journal holds more rows than this (an import journals a row
/// per task); the newest step always stays, however large.
pub const MAX_ROWS: i64 = 50_000;

/// What kind of change a journal entry reverts (stored as [`UndoKind::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UndoKind {
    Create,
    Import,
    Edit,
    Complete,
    Delete,
    Reopen,
    Annotate,
    Resolve,
    Move,
}

impl UndoKind {
    pub const ALL: [UndoKind; 9] = [
        UndoKind::Create,
        UndoKind::Import,
        UndoKind::Edit,
        UndoKind::Complete,
        UndoKind::Delete,
        UndoKind::Reopen,
        UndoKind::Annotate,
        UndoKind::Resolve,
        UndoKind::Move,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            UndoKind::Create => "create",
            UndoKind::Import => "import",
            UndoKind::Edit => "edit",
            UndoKind::Complete => "complete",
            UndoKind::Delete => "delete",
            UndoKind::Reopen => "reopen",
            UndoKind::Annotate => "annotate",
            UndoKind::Resolve => "resolve",
            UndoKind::Move => "move",
        }
    }

    pub fn parse(s: &str) -> Option<UndoKind> {
        UndoKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// A capture: reverting it deletes the task.
    pub fn is_capture(self) -> bool {
        matches!(self, UndoKind::Create | UndoKind::Import)
    }

    /// The kind of a status change to `status`.
    pub fn of_status(status: TaskStatus) -> UndoKind {
        match status {
            TaskStatus::Pending => UndoKind::Reopen,
            TaskStatus::Completed => UndoKind::Complete,
            TaskStatus::Deleted => UndoKind::Delete,
        }
    }
}

impl std::fmt::Display for UndoKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a local change goes on the journal, and into which step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Journal {
    /// Not journaled: an undo's own change (so `undo; undo` goes back two steps, never
    /// ping-pongs).
    Skip,
    /// A step of its own: what the next `undo` reverts.
    Step(UndoKind),
    /// Part of the newest step: the second half of one command.
    Join(UndoKind),
}

/// The patch that reverts `patch` applied to `before`: each field it sets back to its value in
/// `before` (`callsign_core::merge::base_for`), and the project for a move. Empty when the patch
/// sets no field (a `resolve --keep` only clears conflicts: nothing to put back). Commit links
/// and unlinks are never reverted: a link records a fact about a commit, not an edit to take
/// back, so a patch that only links commits has an empty revert.
pub fn revert_of(before: &LocalTask, patch: &TaskPatch) -> TaskPatch {
    let b = callsign_core::merge::base_for(&before.fields(), patch);
    TaskPatch {
        description: b.description,
        notes: b.notes,
        status: b.status,
        tags: b.tags,
        due: b.due,
        priority: b.priority,
        project: patch.project.as_ref().map(|_| before.project.clone()),
        assignee: patch.assignee.as_ref().map(|_| before.assignee.clone()),
        ..TaskPatch::default()
    }
}

/// The revert of a capture: the task is deleted (its key, once it has one, stays taken).
pub fn revert_of_capture() -> TaskPatch {
    TaskPatch {
        status: Some(TaskStatus::Deleted),
        ..TaskPatch::default()
    }
}

/// One task's change that an undo reverted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UndoneChange {
    pub uuid: Uuid,
    pub kind: UndoKind,
    /// What the undo set back (the fields, and `project` for a move).
    pub restored: TaskPatch,
    /// The task is gone from this device: an undone capture that the server had refused (it
    /// never existed there), removed as `delete` removes it.
    pub removed: bool,
    /// What could not be put back, and why (a numbered task stays out of the local inbox: only
    /// tasks the server never numbered live there); the rest of the change is reverted.
    pub kept: Option<String>,
}

/// What [`crate::Engine::undo`] did: one step, its changes newest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Undone {
    /// The step's kind: its first change's (`move` for `edit --project --description`).
    pub kind: UndoKind,
    /// When the undone change was made.
    pub at: DateTime<Utc>,
    pub changes: Vec<UndoneChange>,
    /// The tasks as they are now, in the order of `changes` (a removed one is left out).
    pub tasks: Vec<LocalTask>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use callsign_core::Priority;

    fn task() -> LocalTask {
        let mut t = LocalTask::from_server(callsign_core::dto::Task {
            project: "SYN".into(),
            description: "before".into(),
            notes: "n".into(),
            tags: vec!["b".into(), "a".into()],
            ..Default::default()
        });
        t.priority = Some(Priority::H);
        t
    }

    #[test]
    fn the_revert_sets_back_exactly_the_fields_the_patch_set() {
        let patch = TaskPatch {
            description: Some("after".into()),
            due: Some(None),
            status: Some(TaskStatus::Completed),
            ..TaskPatch::default()
        };
        assert_eq!(
            revert_of(&task(), &patch),
            TaskPatch {
                description: Some("before".into()),
                due: Some(None),
                status: Some(TaskStatus::Pending),
                ..TaskPatch::default()
            }
        );
        let patch = TaskPatch {
            priority: Some(None),
            tags: Some(vec![]),
            project: Some("OPS".into()),
            ..TaskPatch::default()
        };
        assert_eq!(
            revert_of(&task(), &patch),
            TaskPatch {
                priority: Some(Some(Priority::H)),
                tags: Some(vec!["a".into(), "b".into()]),
                project: Some("SYN".into()),
                ..TaskPatch::default()
            }
        );
    }

    #[test]
    fn a_patch_that_sets_no_field_has_nothing_to_revert() {
        let keep = TaskPatch {
            resolve: vec![callsign_core::merge::Field::Description],
            ..TaskPatch::default()
        };
        assert!(revert_of(&task(), &keep).is_empty());
    }

    #[test]
    fn kinds_round_trip_through_their_stored_names() {
        for k in UndoKind::ALL {
            assert_eq!(UndoKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(UndoKind::parse("redo"), None);
    }
}
