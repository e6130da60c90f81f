//! `undo`: what was reverted, in words (`Undid complete of DEV-12: pending again`), then the
//! task; with `--json` one object: `{undone, at, changes, task, tasks}`.
use anyhow::Result;
use callsign_core::dto::{TaskPatch, TaskStatus};
use callsign_sync::{Engine, LocalTask, Undone, UndoneChange};
use serde_json::{json, Value};

use super::{print_json, safe, Ctx, Out};

impl Out {
    pub fn undone(&self, engine: &Engine, u: &Undone) -> Result<()> {
        let task_of = |c: &UndoneChange| u.tasks.iter().find(|t| t.uuid == c.uuid);
        if self.json {
            let ctx = Ctx::read(engine)?;
            let tasks = u
                .tasks
                .iter()
                .map(|t| ctx.task_json(t))
                .collect::<Result<Vec<Value>>>()?;
            let task = match tasks.as_slice() {
                [one] => one.clone(),
                _ => Value::Null,
            };
            return print_json(&json!({
                "undone": u.kind,
                "at": u.at,
                "changes": u.changes,
                "task": task,
                "tasks": tasks,
            }));
        }
        let mut uuids: Vec<uuid::Uuid> = Vec::new();
        for c in u.changes.iter().rev() {
            if !uuids.contains(&c.uuid) {
                uuids.push(c.uuid);
            }
        }
        if let [uuid] = uuids.as_slice() {
            // One task (a command may have made two changes of it: a move and an edit).
            let mine: Vec<&UndoneChange> = u.changes.iter().rev().collect();
            let mut kinds: Vec<&str> = mine.iter().map(|c| c.kind.as_str()).collect();
            kinds.dedup();
            let task = task_of(mine[0]);
            let label = task.map_or_else(|| short(*uuid), LocalTask::label);
            let words: Vec<String> = mine.iter().map(|c| words(c, task)).collect();
            println!(
                "Undid {} of {}: {}",
                kinds.join(" and "),
                safe(&label),
                safe(&words.join("; "))
            );
            return match task {
                Some(t) => self.task(engine, t),
                None => Ok(()),
            };
        }
        println!("Undid {} of {} tasks:", u.kind, uuids.len());
        for c in u.changes.iter().rev() {
            let task = task_of(c);
            let label = task.map_or_else(|| short(c.uuid), LocalTask::label);
            let description = task.map(|t| t.description.as_str()).unwrap_or_default();
            println!(
                "  {}  {}: {}",
                safe(&label),
                safe(description),
                safe(&words(c, task))
            );
        }
        Ok(())
    }
}

fn short(uuid: uuid::Uuid) -> String {
    format!("~{}", &uuid.simple().to_string()[..8])
}

/// What one reverted change put back, as a person says it.
fn words(c: &UndoneChange, task: Option<&LocalTask>) -> String {
    if c.removed {
        return "removed from this device (the server never had it)".into();
    }
    let key = task.and_then(|t| t.key.as_deref());
    if c.kind.is_capture() {
        return match key {
            Some(k) => format!("deleted; {k} stays taken (keys are never reused)"),
            None => "deleted".into(),
        };
    }
    let mut said = restored(&c.restored, key);
    said.extend(c.kept.clone());
    said.join(", ")
}

/// Each field the patch set back.
fn restored(p: &TaskPatch, key: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(s) = p.status {
        out.push(match s {
            TaskStatus::Pending => "pending again".to_owned(),
            TaskStatus::Completed => "completed again".to_owned(),
            TaskStatus::Deleted => "deleted again".to_owned(),
        });
    }
    if let Some(d) = &p.description {
        out.push(format!("description back to {d:?}"));
    }
    if p.notes.is_some() {
        out.push("notes back as they were".into());
    }
    if let Some(tags) = &p.tags {
        out.push(match tags.as_slice() {
            [] => "no tags again".to_owned(),
            t => format!("tags back to +{}", t.join(" +")),
        });
    }
    match p.due {
        Some(Some(d)) => out.push(format!(
            "due back to {}",
            d.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M")
        )),
        Some(None) => out.push("no due date again".into()),
        None => {}
    }
    match p.priority {
        Some(Some(pr)) => out.push(format!("priority back to {pr}")),
        Some(None) => out.push("no priority again".into()),
        None => {}
    }
    if let Some(project) = &p.project {
        out.push(match key {
            Some(k) => format!(
                "back in {project}; it gets a new number there at the next sync (keys are \
                 never reused: {k} keeps finding it)"
            ),
            None => format!("back in {project}"),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use callsign_sync::UndoKind;

    fn change(kind: UndoKind, restored: TaskPatch) -> UndoneChange {
        UndoneChange {
            uuid: uuid::Uuid::nil(),
            kind,
            restored,
            removed: false,
            kept: None,
        }
    }

    #[test]
    fn each_revert_is_said_in_words() {
        let status = |s| TaskPatch {
            status: Some(s),
            ..TaskPatch::default()
        };
        assert_eq!(
            words(
                &change(UndoKind::Complete, status(TaskStatus::Pending)),
                None
            ),
            "pending again"
        );
        let capture = change(UndoKind::Create, status(TaskStatus::Deleted));
        assert_eq!(words(&capture, None), "deleted");
        let mut keyed = LocalTask::from_server(callsign_core::dto::Task {
            key: Some("DEV-12".into()),
            number: Some(12),
            project: "OPS".into(),
            ..Default::default()
        });
        assert_eq!(
            words(&capture, Some(&keyed)),
            "deleted; DEV-12 stays taken (keys are never reused)"
        );
        keyed.key = Some("OPS-3".into());
        let moved = TaskPatch {
            project: Some("DEV".into()),
            priority: Some(None),
            description: Some("old".into()),
            ..TaskPatch::default()
        };
        let said = words(&change(UndoKind::Move, moved), Some(&keyed));
        assert!(
            said.starts_with(
                "description back to \"old\", no priority again, back in DEV; it gets a new number"
            ) && said.contains("OPS-3 keeps finding it"),
            "{said}"
        );
    }
}
