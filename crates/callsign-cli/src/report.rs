//! The task lists of `list`, `next` and `inbox` for people: which columns (`--columns`), in
//! which order (`--sort`), fitted to the width [`crate::table::limit`] gives. `--json` prints
//! every field of every task whatever `--columns` says.
//!
//! With no `--columns` a line is today's: the key (or `~shortid`), `x` for a finished task, the
//! description, then priority, due date, `[blocked: …]` and why it waits. With `--columns` it is
//! a table under a header line, two spaces between columns. Either way only text shrinks to fit:
//! the description first (down to [`DESCRIPTION_FLOOR`] columns), then the other text (tags,
//! the details after the description); keys, UUIDs, dates and statuses are never cut.
use anstyle::Style;
use callsign_core::dto::TaskStatus;
use callsign_sync::{LocalTask, Sort, SyncState};
use chrono::{DateTime, Utc};

use crate::render::{due_text, paint, safe, Ctx};
use crate::table::{self, Cell, Fit, Span};

/// The report flags `list`, `next` and `inbox` share.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReportArgs {
    /// The order: key (by prefix, then number, a subtask right after its parent; tasks without
    /// a key last), created (capture order), due (soonest first, none last) or priority (H, M,
    /// L, none); ties keep the order they had. Default: capture order; `next`: leaf-first.
    #[arg(long, value_name = "ORDER")]
    pub sort: Option<Sort>,
    /// The columns to show, comma-separated, in that order (default: key, description and the
    /// details after it). `--json` always prints every field.
    #[arg(long, value_delimiter = ',', value_name = "COL,…")]
    pub columns: Vec<Column>,
    /// Only the tasks assigned to you (the member this device logged in or joined as).
    #[arg(long)]
    pub mine: bool,
}

/// A column of `--columns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Column {
    /// The key, or `~` and the first 8 hex digits of the UUID before the server numbers it.
    Key,
    /// pending, completed or deleted.
    Status,
    /// The project's prefix.
    Project,
    /// H, M or L.
    Priority,
    /// The due date, `(overdue)` when past.
    Due,
    Description,
    Tags,
    /// When it was captured (local time).
    Created,
    /// When it last changed (local time).
    Modified,
    Uuid,
}

/// The narrowest a description is cut to (a shorter one is left whole).
pub const DESCRIPTION_FLOOR: usize = 15;
/// The narrowest other text (tags, the details after the description) is cut to.
pub const TEXT_FLOOR: usize = 8;

const DESCRIPTION_FIT: Fit = Fit::Shrink {
    floor: DESCRIPTION_FLOOR,
    rank: 0,
};
const TEXT_FIT: Fit = Fit::Shrink {
    floor: TEXT_FLOOR,
    rank: 1,
};

impl Column {
    fn header(self) -> &'static str {
        match self {
            Column::Key => "Key",
            Column::Status => "Status",
            Column::Project => "Project",
            Column::Priority => "Pri",
            Column::Due => "Due",
            Column::Description => "Description",
            Column::Tags => "Tags",
            Column::Created => "Created",
            Column::Modified => "Modified",
            Column::Uuid => "UUID",
        }
    }

    fn fit(self) -> Fit {
        match self {
            Column::Description => DESCRIPTION_FIT,
            Column::Tags => TEXT_FIT,
            _ => Fit::Keep,
        }
    }

    fn cell(self, t: &LocalTask, now: DateTime<Utc>) -> Cell {
        match self {
            Column::Key => label(t),
            Column::Status => vec![Span::styled(t.status.as_str(), finished_style(t))],
            Column::Project => vec![Span::plain(safe(&t.project))],
            Column::Priority => t
                .priority
                .map(|p| vec![Span::plain(p.to_string())])
                .unwrap_or_default(),
            Column::Due => t.due.map(|d| due(t, d, now)).unwrap_or_default(),
            Column::Description => description(t),
            Column::Tags => vec![Span::plain(safe(&t.tags.join(" ")))],
            Column::Created => vec![Span::plain(local_time(t.created_at))],
            Column::Modified => vec![Span::plain(local_time(t.modified_at))],
            Column::Uuid => vec![Span::plain(t.uuid.to_string())],
        }
    }
}

/// `--sort` for a listing: `tasks` come in their command's own order, kept when none is given.
pub fn sort(order: Option<Sort>, tasks: &mut [LocalTask]) {
    if let Some(order) = order {
        order.apply(tasks);
    }
}

/// The lines of a listing for people, each fitted to `limit` columns when there is one.
pub(crate) fn lines(
    ctx: &Ctx,
    tasks: &[LocalTask],
    columns: &[Column],
    limit: Option<usize>,
    colour: bool,
) -> Vec<String> {
    if tasks.is_empty() {
        return vec!["no tasks".into()];
    }
    if columns.is_empty() {
        default_lines(ctx, tasks, limit, colour)
    } else {
        table_lines(ctx.now, tasks, columns, limit, colour)
    }
}

/// Today's lines: `KEY x description  (H)  due …  [blocked: …]  [waiting: …]`, the keys padded
/// to one width. Each line is fitted by itself, the description first, then the details.
fn default_lines(
    ctx: &Ctx,
    tasks: &[LocalTask],
    limit: Option<usize>,
    colour: bool,
) -> Vec<String> {
    let labels: Vec<Cell> = tasks.iter().map(label).collect();
    let label_width = labels.iter().map(|l| table::width(l)).max().unwrap_or(0);
    let fits = [Fit::Keep, Fit::Keep, DESCRIPTION_FIT, TEXT_FIT];
    tasks
        .iter()
        .zip(&labels)
        .map(|(t, label)| {
            let mark = Span::plain(if t.status == TaskStatus::Pending {
                " "
            } else {
                "x"
            });
            let description = description(t);
            let details = details(ctx, t);
            let gaps = if details.is_empty() { 2 } else { 4 };
            let natural = [
                label_width,
                1,
                table::width(&description),
                table::width(&details),
            ];
            let w = table::widths(&natural, &fits, gaps, limit);
            let mut line = String::new();
            table::write_cell(&mut line, label, w[0], true, colour);
            line.push(' ');
            table::write_cell(&mut line, &[mark], w[1], true, colour);
            line.push(' ');
            table::write_cell(&mut line, &description, w[2], false, colour);
            if !details.is_empty() {
                line.push_str("  ");
                table::write_cell(&mut line, &details, w[3], false, colour);
            }
            line
        })
        .collect()
}

/// A `--columns` table: a header line, then a line per task; every column but the last padded
/// to one width, so they line up.
fn table_lines(
    now: DateTime<Utc>,
    tasks: &[LocalTask],
    columns: &[Column],
    limit: Option<usize>,
    colour: bool,
) -> Vec<String> {
    let header_style = Style::new().underline();
    let mut rows: Vec<Vec<Cell>> = vec![columns
        .iter()
        .map(|c| vec![Span::styled(c.header(), header_style)])
        .collect()];
    rows.extend(
        tasks
            .iter()
            .map(|t| columns.iter().map(|c| c.cell(t, now)).collect()),
    );
    let natural: Vec<usize> = (0..columns.len())
        .map(|i| rows.iter().map(|r| table::width(&r[i])).max().unwrap_or(0))
        .collect();
    let fits: Vec<Fit> = columns.iter().map(|c| c.fit()).collect();
    let w = table::widths(&natural, &fits, 2 * (columns.len() - 1), limit);
    rows.iter()
        .map(|row| {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                table::write_cell(&mut line, cell, w[i], i + 1 < row.len(), colour);
            }
            line.truncate(line.trim_end().len());
            line
        })
        .collect()
}

/// The key, or the provisional short id, in the style of its sync state.
fn label(t: &LocalTask) -> Cell {
    let style = if t.sync_state == SyncState::Failed {
        paint::FAILED
    } else if t.key.is_none() {
        paint::PROVISIONAL
    } else {
        paint::KEY
    };
    vec![Span::styled(safe(&t.label()), style)]
}

fn finished_style(t: &LocalTask) -> Style {
    if t.status == TaskStatus::Pending {
        Style::new()
    } else {
        paint::DONE
    }
}

fn description(t: &LocalTask) -> Cell {
    vec![Span::styled(safe(&t.description), finished_style(t))]
}

fn due(t: &LocalTask, d: DateTime<Utc>, now: DateTime<Utc>) -> Cell {
    let text = due_text(t, d, now);
    let style = if text.ends_with("(overdue)") {
        paint::OVERDUE
    } else {
        Style::new()
    };
    vec![Span::styled(text, style)]
}

/// What the default line shows after the description: `(H)`, `due …`, `[blocked: …]`, and why
/// it waits, two spaces apart.
fn details(ctx: &Ctx, t: &LocalTask) -> Cell {
    let mut parts: Vec<Cell> = Vec::new();
    if let Some(p) = t.priority {
        parts.push(vec![Span::plain(format!("({p})"))]);
    }
    if let Some(d) = t.due {
        let mut cell = due(t, d, ctx.now);
        cell[0].text.insert_str(0, "due ");
        parts.push(cell);
    }
    if t.is_blocked() {
        parts.push(vec![Span::plain(format!(
            "[blocked: {} open subtask(s)]",
            t.open_children
        ))]);
    }
    if let Some(r) = ctx.reason(t) {
        parts.push(vec![Span::styled(format!("[{}]", safe(&r)), paint::REASON)]);
    }
    let mut out = Vec::new();
    for (i, part) in parts.into_iter().enumerate() {
        if i > 0 {
            out.push(Span::plain("  "));
        }
        out.extend(part);
    }
    out
}

fn local_time(t: DateTime<Utc>) -> String {
    t.with_timezone(&chrono::Local)
        .format("%Y-%m-%d %H:%M")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use callsign_core::dto::Task;
    use callsign_core::Priority;
    use unicode_width::UnicodeWidthStr;

    fn ctx() -> Ctx {
        Ctx {
            status: Default::default(),
            logged_in: true,
            now: Utc::now(),
        }
    }

    fn task(key: &str, description: &str) -> LocalTask {
        let mut t = LocalTask::from_server(Task {
            project: "DEV".into(),
            description: description.into(),
            tags: vec!["home".into()],
            ..Default::default()
        });
        t.key = Some(key.into());
        t
    }

    /// Where each column of a line starts, in display columns (text after two spaces or more).
    fn starts(line: &str) -> Vec<usize> {
        let mut at = Vec::new();
        let mut col = 0;
        let mut spaces = 2;
        for c in line.chars() {
            if c != ' ' && spaces >= 2 {
                at.push(col);
            }
            spaces = if c == ' ' { spaces + 1 } else { 0 };
            col += c.to_string().width();
        }
        at
    }

    #[test]
    fn columns_line_up_under_the_header_with_wide_characters() {
        let tasks = [
            task("DEV-1", "北京 office visit"),
            task("DEV-10", "🎉 party"),
            task("DEV-2.1", "plain"),
        ];
        let cols = [Column::Key, Column::Description, Column::Tags];
        let table = lines(&ctx(), &tasks, &cols, None, false);
        assert_eq!(table[0], "Key      Description        Tags");
        for l in &table[1..] {
            assert_eq!(starts(l), [0, 9, 28], "{l:?}");
            assert!(l.ends_with("home"));
        }
    }

    #[test]
    fn a_narrow_table_cuts_the_description_never_the_key_or_uuid() {
        let long = "Ask the bank about the mortgage papers and the insurance";
        let tasks = [task("DEV-1234", long)];
        let cols = [Column::Key, Column::Uuid, Column::Description];
        let wide = lines(&ctx(), &tasks, &cols, Some(70), false);
        let row = &wide[1];
        assert!(row.starts_with("DEV-1234  00000000-0000-0000-0000-000000000000  "));
        assert_eq!(row.width(), 70, "{row:?}");
        assert!(row.ends_with('…'), "{row:?}");
        // Narrower than the kept columns: they stay whole and the line runs over.
        let narrow = lines(&ctx(), &tasks, &cols, Some(20), false);
        assert!(narrow[1].contains("DEV-1234  00000000-0000-0000-0000-000000000000"));
        assert!(narrow[1].ends_with(&format!("{}…", &long[..DESCRIPTION_FLOOR - 1])));
    }

    #[test]
    fn the_default_line_keeps_its_details_and_cuts_the_description_first() {
        let mut t = task("DEV-7", "Renew the passport before the trip to Lisbon");
        t.priority = Some(Priority::H);
        let one = std::slice::from_ref(&t);
        assert_eq!(
            lines(&ctx(), one, &[], None, false),
            ["DEV-7   Renew the passport before the trip to Lisbon  (H)"]
        );
        assert_eq!(
            lines(&ctx(), one, &[], Some(30), false),
            ["DEV-7   Renew the passpo…  (H)"]
        );
        // Below the description's floor the line runs over; the key and details stay.
        let narrow = lines(&ctx(), one, &[], Some(20), false);
        assert_eq!(narrow, ["DEV-7   Renew the pass…  (H)"]);
    }

    #[test]
    fn no_tasks_says_so() {
        assert_eq!(
            lines(&ctx(), &[], &[Column::Key], Some(40), false),
            ["no tasks"]
        );
    }
}
