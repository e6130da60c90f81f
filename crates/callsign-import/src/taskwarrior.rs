//! Taskwarrior's `task export` (fixtures/taskwarrior.md says what it prints, and where that is
//! seen). Taskwarrior has no keys: a task keeps its UUID. `depends` means "blocked by", not a
//! parent, and recurring templates are skipped (their instances are exported as tasks).
use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Deserialize;

use crate::model::{ImportError, Priority, SourceIssue, State};

#[derive(Deserialize)]
struct Task {
    uuid: String,
    description: String,
    status: String,
    #[serde(default)]
    entry: Option<String>,
    #[serde(default)]
    due: Option<String>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    priority: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    annotations: Vec<Annotation>,
}

#[derive(Deserialize)]
struct Annotation {
    description: String,
}

pub fn parse(text: &str) -> Result<Vec<SourceIssue>, ImportError> {
    let tasks: Vec<Task> = serde_json::from_str(text).map_err(|e| ImportError::NotThisFormat {
        format: "Taskwarrior export",
        why: format!("{e} (expected the output of `task export`)"),
    })?;
    tasks
        .into_iter()
        .enumerate()
        .filter(|(_, t)| t.status != "recurring")
        .map(|(i, t)| issue(i + 1, t))
        .collect()
}

fn issue(n: usize, t: Task) -> Result<SourceIssue, ImportError> {
    let state = match t.status.as_str() {
        "completed" => State::Done,
        "deleted" => State::Cancelled,
        _ => State::Open,
    };
    let when = |v: &Option<String>, what: &str| -> Result<Option<DateTime<Utc>>, ImportError> {
        v.as_deref()
            .map(|s| {
                NaiveDateTime::parse_from_str(s, "%Y%m%dT%H%M%SZ")
                    .map(|d| d.and_utc())
                    .map_err(|_| ImportError::Row {
                        row: n,
                        why: format!("{what} {s:?} is not a Taskwarrior date (20240312T150405Z)"),
                    })
            })
            .transpose()
    };
    let mut labels = t.tags;
    // A project (`Home.Garage`) is no Callsign project: it is kept as a tag.
    if let Some(p) = t.project.filter(|p| !p.is_empty()) {
        labels.push(format!("project:{p}"));
    }
    Ok(SourceIssue {
        key: None,
        id: t.uuid.clone(),
        uuid: Some(t.uuid),
        title: t.description,
        description: t
            .annotations
            .into_iter()
            .map(|a| a.description)
            .collect::<Vec<_>>()
            .join("\n\n"),
        state,
        source_status: t.status,
        priority: match t.priority.as_deref() {
            Some("H") => Some(Priority::H),
            Some("M") => Some(Priority::M),
            Some("L") => Some(Priority::L),
            _ => None,
        },
        labels,
        due: when(&t.due, "due")?.map(|d| d.date_naive()),
        assignee: None,
        parent: None,
        created: when(&t.entry, "entry")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_export_reads_whole_with_uuids_kept() {
        let all = parse(include_str!("../fixtures/taskwarrior.json")).unwrap();
        assert!(all.iter().all(|i| i.key.is_none() && i.uuid.is_some()));
        let rack = all.iter().find(|i| i.title == "Buy a bike rack").unwrap();
        assert_eq!(rack.priority, Some(Priority::H));
        assert_eq!(
            rack.due.map(|d| d.to_string()).as_deref(),
            Some("2024-03-22")
        );
        assert!(rack.labels.contains(&"project:Home.Garage".to_owned()));
        assert!(!rack.description.is_empty(), "annotations kept");
        assert!(all.iter().any(|i| i.state == State::Done));
        assert!(all.iter().any(|i| i.state == State::Cancelled));
    }
}
