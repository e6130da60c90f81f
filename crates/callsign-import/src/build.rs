//! The creates an import sends: each planned issue as a task body the server takes
//! (`NewTask` with its `origin`), under a UUID and an idempotency key derived from the source,
//! so the same file imported again names the same tasks and makes nothing new.
//!
//! - **UUID.** Taskwarrior's own; otherwise a name-based UUID (v5) of the format, the
//!   issue's id and its key, under [`NAMESPACE`].
//! - **Fields.** The title (one line, at most `MAX_DESCRIPTION` characters) and the
//!   description as notes (Markdown, cut at `MAX_NOTES` bytes with a line that says so);
//!   open, done and cancelled as pending, completed and deleted; labels as tags (lower case,
//!   spaces and colons as `-`), and the source's status word as a tag too
//!   (`jira-in-review`); the created date; the assignee the plan mapped; the parent by its
//!   UUID; the source key as the origin key, kept as the task's key with `keep_numbers`.
use callsign_core::dto::{NewTask, Origin, TaskStatus};
use callsign_core::validate::{MAX_DESCRIPTION, MAX_NOTES, MAX_ORIGIN_KEY, MAX_TAG, MAX_TAGS};
use chrono::{DateTime, NaiveDate, Utc};
use uuid::Uuid;

use crate::model::{Format, SourceIssue, State};
use crate::plan::Plan;

/// The namespace of imported tasks' UUIDs.
pub const NAMESPACE: Uuid = Uuid::from_u128(0x6f1c_2a4e_8b3d_4c5f_9e7a_1d2b_3c4d_5e6f);

/// One create of an import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Made {
    pub uuid: Uuid,
    pub idempotency_key: String,
    pub body: NewTask,
}

/// The creates for `plan`, in its order (parents first). `due` turns a due date into the time
/// it is due (the caller's time zone).
pub fn creates(
    format: Format,
    issues: &[SourceIssue],
    plan: &Plan,
    due: &dyn Fn(NaiveDate) -> Option<DateTime<Utc>>,
) -> Vec<Made> {
    let mut out: Vec<Made> = Vec::with_capacity(plan.items.len());
    for item in &plan.items {
        let i = &issues[item.issue];
        let uuid = uuid_of(format, i);
        let body = NewTask {
            project: item.project.clone(),
            description: title(i),
            notes: notes(&i.description),
            status: match i.state {
                State::Open => None,
                State::Done => Some(TaskStatus::Completed),
                State::Cancelled => Some(TaskStatus::Deleted),
            },
            tags: tags(format, i),
            due: i.due.and_then(due),
            priority: i.priority,
            parent: item.parent.map(|p| out[p].uuid.to_string()),
            created_at: i.created,
            assignee: item.assignee.clone(),
            created_by: None,
            origin: Some(Origin {
                tracker: format.as_str().to_owned(),
                key: i.key.clone().filter(|k| origin_key_ok(k)),
            }),
            keep_number: item.number.is_some(),
            commits: Vec::new(),
        };
        out.push(Made {
            uuid,
            idempotency_key: format!("import:{}:{uuid}", format.as_str()),
            body,
        });
    }
    out
}

/// The task's UUID: Taskwarrior's own, else derived from the source.
pub fn uuid_of(format: Format, i: &SourceIssue) -> Uuid {
    if let Some(u) = i.uuid.as_deref().and_then(|u| Uuid::parse_str(u).ok()) {
        return u;
    }
    let name = format!(
        "{}\n{}\n{}",
        format.as_str(),
        i.id,
        i.key.as_deref().unwrap_or_default()
    );
    Uuid::new_v5(&NAMESPACE, name.as_bytes())
}

fn origin_key_ok(k: &str) -> bool {
    !k.is_empty()
        && k.chars().count() <= MAX_ORIGIN_KEY
        && !k.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn clean(s: &str) -> String {
    s.chars().filter(|c| *c != '\0').collect()
}

/// One line, at most `MAX_DESCRIPTION` characters; an empty title is named by its key.
fn title(i: &SourceIssue) -> String {
    let one: String = clean(&i.title)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let one = if one.is_empty() {
        format!("(untitled {})", i.key.as_deref().unwrap_or(&i.id))
    } else {
        one
    };
    if one.chars().count() <= MAX_DESCRIPTION {
        return one;
    }
    let mut cut: String = one.chars().take(MAX_DESCRIPTION - 1).collect();
    cut.push('…');
    cut
}

/// The description, cut at `MAX_NOTES` bytes (on a character boundary) with a line saying so.
fn notes(text: &str) -> String {
    const CUT: &str = "\n\n(cut here: the description was longer in its tracker)";
    let text = clean(text);
    if text.len() <= MAX_NOTES {
        return text;
    }
    let mut end = MAX_NOTES - CUT.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT}", &text[..end])
}

/// Labels as tags, then the source's status word as `tracker-status`; at most `MAX_TAGS`.
fn tags(format: Format, i: &SourceIssue) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let status = (format != Format::Taskwarrior && !i.source_status.trim().is_empty())
        .then(|| format!("{}-{}", format.as_str(), i.source_status));
    for label in i.labels.iter().chain(status.as_ref()) {
        if let Some(t) = tag(label) {
            if !out.contains(&t) && out.len() < MAX_TAGS {
                out.push(t);
            }
        }
    }
    out
}

/// A label as a tag: lower case, spaces, colons and other separators as one `-`, starting
/// with a letter (`l-` added before a digit), at most `MAX_TAG` characters.
pub fn tag(label: &str) -> Option<String> {
    let mut t = String::new();
    for c in label.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() || c == '-' || c == '_' || c == '.' {
            t.push(c);
        } else if !t.ends_with('-') {
            t.push('-');
        }
    }
    let t = t.trim_matches('-');
    if t.is_empty() {
        return None;
    }
    let t = if t.starts_with(|c: char| c.is_alphabetic()) {
        t.to_owned()
    } else {
        format!("l-{t}")
    };
    Some(
        t.chars()
            .take(MAX_TAG)
            .collect::<String>()
            .trim_end_matches('-')
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{plan, Options};

    fn issue(key: &str, parent: Option<&str>) -> SourceIssue {
        SourceIssue {
            key: Some(key.to_owned()),
            id: format!("1{}", key.len()),
            uuid: None,
            title: format!("  task\n{key} "),
            description: "a *b*".into(),
            state: State::Done,
            source_status: "Won't Do".into(),
            priority: None,
            labels: vec!["Good first issue".into(), "type: bug".into(), "2025".into()],
            due: NaiveDate::from_ymd_opt(2025, 10, 1),
            assignee: None,
            parent: parent.map(str::to_owned),
            created: None,
        }
    }

    #[test]
    fn creates_carry_the_origin_and_parents_by_uuid_and_are_the_same_each_run() {
        let mut issues = vec![issue("ENG-8", Some("10")), issue("ENG-2", None)];
        issues[0].id = "11".into();
        issues[1].id = "10".into();
        let keep = Options {
            keep_numbers: true,
            project: None,
        };
        let p = plan(&issues, &keep, &[], &[], &[]).unwrap();
        let due = |d: NaiveDate| d.and_hms_opt(17, 0, 0).map(|t| t.and_utc());
        let made = creates(Format::Jira, &issues, &p, &due);
        assert_eq!(
            made,
            creates(Format::Jira, &issues, &p, &due),
            "deterministic"
        );
        let (parent, child) = (&made[0], &made[1]);
        assert_eq!(
            parent.body.origin.as_ref().unwrap().key.as_deref(),
            Some("ENG-2")
        );
        assert_eq!(child.body.parent, Some(parent.uuid.to_string()));
        assert!(child.body.keep_number && child.body.project == "ENG");
        assert_eq!(child.body.description, "task ENG-8");
        assert_eq!(child.body.status, Some(TaskStatus::Completed));
        assert_eq!(
            child.body.tags,
            ["good-first-issue", "type-bug", "l-2025", "jira-won-t-do"]
        );
        assert_eq!(child.idempotency_key, format!("import:jira:{}", child.uuid));
        callsign_core::validate::new_task(&child.body).unwrap();
        assert_ne!(parent.uuid, child.uuid);
        // Another source's issue with the same id is another task.
        assert_ne!(uuid_of(Format::Linear, &issues[0]), child.uuid);
    }

    #[test]
    fn long_fields_are_cut_to_what_the_server_takes() {
        let mut i = issue("ENG-1", None);
        i.title = "x".repeat(MAX_DESCRIPTION + 5);
        i.description = "é".repeat(MAX_NOTES);
        i.labels = (0..100).map(|n| format!("label{n}")).collect();
        let p = plan(
            &[i.clone()],
            &Options {
                keep_numbers: true,
                project: None,
            },
            &[],
            &[],
            &[],
        )
        .unwrap();
        let made = creates(Format::Jira, &[i], &p, &|_| None);
        let body = &made[0].body;
        assert_eq!(body.description.chars().count(), MAX_DESCRIPTION);
        assert!(body.notes.len() <= MAX_NOTES && body.notes.ends_with("in its tracker)"));
        assert_eq!(body.tags.len(), MAX_TAGS);
        callsign_core::validate::new_task(body).unwrap();
        assert_eq!(tag("UI"), Some("ui".into()));
        assert_eq!(tag(" : "), None);
    }
}
