//! `gh issue list --state all --json number,title,body,state,stateReason,labels,assignees,
//! createdAt,closedAt` (fixtures/github.md says what gh prints, and where that is seen).
use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::model::{ImportError, SourceIssue, State};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Issue {
    number: u64,
    title: String,
    #[serde(default)]
    body: Option<String>,
    state: String,
    #[serde(default)]
    state_reason: Option<String>,
    #[serde(default)]
    labels: Vec<Named>,
    #[serde(default)]
    assignees: Vec<Person>,
    #[serde(default)]
    created_at: Option<DateTime<Utc>>,
}

#[derive(Deserialize)]
struct Named {
    name: String,
}

#[derive(Deserialize)]
struct Person {
    login: String,
}

pub fn parse(text: &str) -> Result<Vec<SourceIssue>, ImportError> {
    let issues: Vec<Issue> =
        serde_json::from_str(text).map_err(|e| ImportError::NotThisFormat {
            format: "GitHub issues JSON",
            why: format!(
                "{e} (expected the output of `gh issue list --state all --json \
                 number,title,body,state,stateReason,labels,assignees,createdAt,closedAt`)"
            ),
        })?;
    Ok(issues.into_iter().map(issue).collect())
}

fn issue(i: Issue) -> SourceIssue {
    let reason = i.state_reason.unwrap_or_default();
    let state = match (
        i.state.to_uppercase().as_str(),
        reason.to_uppercase().as_str(),
    ) {
        ("CLOSED", "NOT_PLANNED" | "DUPLICATE") => State::Cancelled,
        ("CLOSED", _) => State::Done,
        _ => State::Open,
    };
    let source_status = match reason.as_str() {
        "" => i.state.clone(),
        r => format!("{} ({r})", i.state),
    };
    SourceIssue {
        key: Some(format!("#{}", i.number)),
        id: i.number.to_string(),
        uuid: None,
        title: i.title,
        description: i
            .body
            .unwrap_or_default()
            .replace("\r\n", "\n")
            .trim()
            .to_owned(),
        state,
        source_status,
        priority: None,
        labels: i.labels.into_iter().map(|l| l.name).collect(),
        due: None,
        // Callsign assigns one member: the first.
        assignee: i.assignees.into_iter().next().map(|p| p.login),
        parent: None,
        created: i.created_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gh_output_reads_whole() {
        let all = parse(include_str!("../fixtures/github.json")).unwrap();
        let eleven = all
            .iter()
            .find(|i| i.key.as_deref() == Some("#11"))
            .unwrap();
        assert_eq!(eleven.title, "Dark mode: chart legend unreadable");
        assert_eq!(eleven.labels, vec!["bug", "Priority: HIGH"]);
        assert_eq!(eleven.assignee.as_deref(), Some("bokim"));
        assert_eq!(eleven.state, State::Open);
        assert!(!eleven.description.contains('\r'));
        assert!(all.iter().any(|i| i.state == State::Done));
        assert!(all.iter().any(|i| i.state == State::Cancelled));
        let e = parse("{\"number\": 1}").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("this is not a GitHub issues JSON export"),
            "{e}"
        );
    }
}
