//! Linear's CSV export (fixtures/linear.md says what real ones hold, and where that is seen).
use chrono::{DateTime, NaiveDate, Utc};

use crate::csvtable::{Row, Table};
use crate::model::{ImportError, Priority, SourceIssue, State};

const FORMAT: &str = "Linear CSV";

pub fn parse(text: &str) -> Result<Vec<SourceIssue>, ImportError> {
    let t = Table::read(text, FORMAT, &["ID", "Title"])?;
    t.rows().map(|row| issue(&row)).collect()
}

fn issue(row: &Row<'_>) -> Result<SourceIssue, ImportError> {
    let key = row.get("ID");
    if key.is_empty() {
        return Err(row.bad("no ID".into()));
    }
    let title = unguard(row.get("Title"));
    if title.is_empty() {
        return Err(row.bad(format!("{key} has no Title")));
    }
    let status = row.get("Status");
    let state = if !row.get("Canceled").is_empty()
        || ["canceled", "cancelled", "duplicate"].contains(&status.to_lowercase().as_str())
    {
        State::Cancelled
    } else if !row.get("Completed").is_empty() || status.eq_ignore_ascii_case("done") {
        State::Done
    } else {
        State::Open
    };
    let priority = match row.get("Priority").to_lowercase().as_str() {
        "urgent" | "high" => Some(Priority::H),
        "medium" => Some(Priority::M),
        "low" => Some(Priority::L),
        _ => None,
    };
    let due = match row.get("Due Date") {
        "" => None,
        d => Some(date(row, "Due Date", d)?.date_naive()),
    };
    let created = match row.get("Created") {
        "" => None,
        c => Some(date(row, "Created", c)?),
    };
    Ok(SourceIssue {
        key: Some(key.to_owned()),
        id: key.to_owned(),
        uuid: None,
        title: title.to_owned(),
        description: row
            .raw("Description")
            .replace("\r\n", "\n")
            .trim()
            .to_owned(),
        state,
        source_status: status.to_owned(),
        priority,
        labels: row
            .get("Labels")
            .split(", ")
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect(),
        due,
        assignee: Some(row.get("Assignee"))
            .filter(|a| !a.is_empty())
            .map(str::to_owned),
        parent: Some(row.get("Parent issue"))
            .filter(|p| !p.is_empty())
            .map(str::to_owned),
        created,
    })
}

/// A cell Linear guarded against spreadsheet formulas (`'=…`, `'-5%…`): the guard dropped.
fn unguard(v: &str) -> &str {
    match v.strip_prefix('\'') {
        Some(rest) if rest.starts_with(['=', '+', '-', '@']) => rest,
        _ => v,
    }
}

/// A date as JavaScript prints it: `Tue May 14 2024 08:53:33 GMT+0000 (GMT)`.
fn date(row: &Row<'_>, column: &str, v: &str) -> Result<DateTime<Utc>, ImportError> {
    let bare = v.split(" (").next().unwrap_or(v).trim();
    if let Ok(t) = DateTime::parse_from_str(bare, "%a %b %d %Y %H:%M:%S GMT%z") {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(bare) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(bare, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).expect("midnight").and_utc());
    }
    Err(row.bad(format!(
        "{column} {v:?} is not a date as Linear writes it (Tue May 14 2024 08:53:33 GMT+0000)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_export_reads_whole_short_rows_and_all() {
        let all = parse(include_str!("../fixtures/linear.csv")).unwrap();
        let keys: Vec<&str> = all.iter().filter_map(|i| i.key.as_deref()).collect();
        assert!(
            keys.contains(&"WEB-1") && !keys.contains(&"WEB-3"),
            "{keys:?}"
        );
        let get = |k: &str| all.iter().find(|i| i.key.as_deref() == Some(k)).unwrap();
        assert_eq!(get("WEB-1").state, State::Done);
        assert_eq!(get("WEB-1").priority, Some(Priority::H));
        let two = get("WEB-2");
        assert_eq!(two.labels, vec!["Design", "Frontend"]);
        assert!(two.due.is_some());
        assert!(two.description.contains('\n'), "{:?}", two.description);
        assert_eq!(get("WEB-4").parent.as_deref(), Some("WEB-2"));
        let five = get("WEB-5");
        assert!(five.title.starts_with("-5%"), "{:?}", five.title);
        assert_eq!((five.assignee.as_deref(), five.priority), (None, None));
        assert_eq!(get("WEB-6").state, State::Cancelled);
        assert_eq!(get("WEB-6").labels, Vec::<String>::new());
        assert_eq!(get("WEB-9").state, State::Cancelled);
        assert_eq!(
            get("WEB-1").created.map(|c| c.to_rfc3339()),
            Some("2024-03-01T09:12:44+00:00".into())
        );
    }
}
