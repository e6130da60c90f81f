//! Jira's CSV export (fixtures/jira.md says what real ones hold, and where that is seen).
use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use crate::csvtable::{Row, Table};
use crate::model::{ImportError, Priority, SourceIssue, State};
use crate::wiki;

const FORMAT: &str = "Jira CSV";

/// Resolutions and statuses that mean the work was not done.
const NOT_DONE: [&str; 11] = [
    "won't do",
    "won't fix",
    "duplicate",
    "cannot reproduce",
    "declined",
    "rejected",
    "cancelled",
    "canceled",
    "incomplete",
    "abandoned",
    "obsolete",
];

pub fn parse(text: &str) -> Result<Vec<SourceIssue>, ImportError> {
    let t = Table::read(text, FORMAT, &["Summary", "Issue key"])?;
    let mut out = Vec::new();
    for row in t.rows() {
        out.push(issue(&row)?);
    }
    // A parent named by key (`Parent key`, an epic link) is named by its id like the others,
    // when it is in the file.
    let ids: HashMap<String, String> = out
        .iter()
        .filter_map(|i| Some((i.key.clone()?, i.id.clone())))
        .collect();
    for i in &mut out {
        if let Some(p) = &i.parent {
            if let Some(id) = ids.get(p) {
                i.parent = Some(id.clone());
            }
        }
    }
    Ok(out)
}

fn issue(row: &Row<'_>) -> Result<SourceIssue, ImportError> {
    let key = row.get("Issue key");
    if key.is_empty() {
        return Err(row.bad("no Issue key".into()));
    }
    let title = row.get("Summary");
    if title.is_empty() {
        return Err(row.bad(format!("{key} has no Summary")));
    }
    let id = match row.get("Issue id") {
        "" => key,
        id => id,
    };
    let status = row.get("Status");
    let resolution = row.get("Resolution");
    let category = row.get("Status Category");
    let not_done = |w: &str| NOT_DONE.contains(&w.to_lowercase().as_str());
    let state = if not_done(resolution) || not_done(status) {
        State::Cancelled
    } else if category.eq_ignore_ascii_case("done")
        || !resolution.is_empty()
        || ["done", "closed", "resolved"].contains(&status.to_lowercase().as_str())
    {
        State::Done
    } else {
        State::Open
    };
    let source_status = match resolution {
        "" => status.to_owned(),
        r if r.eq_ignore_ascii_case(status) => status.to_owned(),
        r => format!("{status} ({r})"),
    };
    // The numeric parent id (`Parent`, `Parent id`), else its key (`Parent key`, an epic link).
    let parent = [
        row.get("Parent id"),
        row.get("Parent"),
        row.get("Parent key"),
        row.get("Custom field (Epic Link)"),
    ]
    .into_iter()
    .find(|p| !p.is_empty())
    .map(str::to_owned);
    let due = match row.first(&["Due date"]) {
        "" => None,
        d => Some(date(row, "Due date", d)?.date()),
    };
    let created = match row.get("Created") {
        "" => None,
        c => Some(date(row, "Created", c)?.and_utc()),
    };
    Ok(SourceIssue {
        key: Some(key.to_owned()),
        id: id.to_owned(),
        uuid: None,
        title: title.to_owned(),
        description: wiki::to_markdown(row.raw("Description")),
        state,
        source_status,
        priority: priority(row.get("Priority")),
        labels: row.all("Labels").into_iter().map(str::to_owned).collect(),
        due,
        assignee: Some(row.get("Assignee"))
            .filter(|a| !a.is_empty())
            .map(str::to_owned),
        parent,
        created,
    })
}

fn priority(p: &str) -> Option<Priority> {
    match p.to_lowercase().as_str() {
        "highest" | "high" | "critical" | "blocker" | "urgent" => Some(Priority::H),
        "medium" | "major" => Some(Priority::M),
        "low" | "lowest" | "minor" | "trivial" => Some(Priority::L),
        _ => None,
    }
}

/// A date as Jira writes it (`22/Sep/25 9:26 AM`, no zone: read as UTC), or ISO 8601.
fn date(row: &Row<'_>, column: &str, v: &str) -> Result<NaiveDateTime, ImportError> {
    for f in ["%d/%b/%y %I:%M %p", "%d/%b/%Y %I:%M %p", "%Y-%m-%d %H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(v, f) {
            return Ok(t);
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(v, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).expect("midnight"));
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(v) {
        return Ok(t.with_timezone(&Utc).naive_utc());
    }
    Err(row.bad(format!(
        "{column} {v:?} is not a date as Jira writes it (22/Sep/25 9:26 AM); a spreadsheet that \
         saved the file may have changed it: export it from Jira again"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_key<'a>(all: &'a [SourceIssue], key: &str) -> &'a SourceIssue {
        all.iter()
            .find(|i| i.key.as_deref() == Some(key))
            .unwrap_or_else(|| panic!("{key}"))
    }

    #[test]
    fn the_all_fields_export_reads_whole() {
        let all = parse(include_str!("../fixtures/jira.csv")).unwrap();
        assert!(all.len() >= 6, "{}", all.len());
        let keys: Vec<&str> = all.iter().filter_map(|i| i.key.as_deref()).collect();
        assert!(keys.iter().all(|k| k.starts_with("ENG-")), "{keys:?}");
        // Repeated Labels columns: every label, none lost.
        let nine = by_key(&all, "ENG-9");
        assert_eq!(nine.labels, vec!["customer-reported", "safari", "ui"]);
        assert_eq!(nine.priority, Some(Priority::H));
        assert_eq!(nine.assignee.as_deref(), Some("Mei Chen"));
        assert_eq!(nine.state, State::Open);
        assert_eq!(
            nine.created,
            Some(
                NaiveDateTime::parse_from_str("2024-03-18 09:12", "%Y-%m-%d %H:%M")
                    .unwrap()
                    .and_utc()
            )
        );
        assert!(nine
            .description
            .starts_with("Reported by two customers on iOS 17.3."));
        // Sub-tasks name their parent by id; it is in the file.
        let parented: Vec<&SourceIssue> = all.iter().filter(|i| i.parent.is_some()).collect();
        assert!(!parented.is_empty());
        for c in parented {
            let p = c.parent.as_deref().unwrap();
            assert!(
                all.iter().any(|i| i.id == p),
                "{:?}'s parent {p} is in the file",
                c.key
            );
        }
        // Done and not done.
        assert!(all.iter().any(|i| i.state == State::Done));
        assert!(all.iter().any(|i| i.state == State::Cancelled));
        assert!(all.iter().any(|i| i.assignee.is_none()));
    }

    #[test]
    fn the_older_parent_id_shape_reads_too() {
        let all = parse(include_str!("../fixtures/jira-legacy-parent-id.csv")).unwrap();
        assert!(all.iter().any(|i| i.parent.is_some()));
    }

    #[test]
    fn a_date_a_spreadsheet_changed_is_refused_in_words() {
        let e = parse("Summary,Issue key,Created\nFix it,ENG-1,06-09-2024 13:47\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "row 2: Created \"06-09-2024 13:47\" is not a date as Jira writes it (22/Sep/25 9:26 \
             AM); a spreadsheet that saved the file may have changed it: export it from Jira again"
        );
        let e = parse("Title,ID\nx,1\n").unwrap_err();
        assert!(matches!(e, ImportError::NotThisFormat { .. }), "{e}");
    }

    #[test]
    fn resolutions_and_categories_map_to_states() {
        let csv = "Summary,Issue key,Status,Resolution,Status Category\n\
                   a,E-1,Done,Done,Done\n\
                   b,E-2,Closed,Won't Do,Done\n\
                   c,E-3,In Review,,In Progress\n\
                   d,E-4,Shipped,,Done\n";
        let all = parse(csv).unwrap();
        let states: Vec<State> = all.iter().map(|i| i.state).collect();
        assert_eq!(
            states,
            vec![State::Done, State::Cancelled, State::Open, State::Done]
        );
        assert_eq!(all[1].source_status, "Closed (Won't Do)");
    }
}
