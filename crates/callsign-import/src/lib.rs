//! Other trackers' exports read into one shape, keys kept (issue 42). Pure: the bytes of an
//! export in, [`SourceIssue`]s out, in the file's order; the CLI and the app decide what to make
//! of them (docs/CLI.md, "Import").
//!
//! - [`Format::Jira`]: Jira's CSV export (all fields or current fields). Columns are found by
//!   name, case-insensitively, every occurrence of a repeated one (`Labels` ×5) kept; dates
//!   are `22/Sep/25 9:26 AM` in the exporting user's zone, read as UTC; descriptions are Jira
//!   wiki markup, turned into Markdown ([`wiki`]).
//! - [`Format::Linear`]: Linear's CSV export (`ID`, `Title`, … `Parent issue`), dates as
//!   JavaScript prints them (`Tue May 14 2024 08:53:33 GMT+0000 (GMT)`).
//! - [`Format::GitHub`]: `gh issue list --state all --json
//!   number,title,body,state,stateReason,labels,assignees,createdAt,closedAt`.
//! - [`Format::Taskwarrior`]: `task export` of Taskwarrior 3 (and 2.x).
//!
//! What real exports look like, with where each fact comes from, is in `fixtures/*.md`; the
//! fixtures are shaped after them. Files that are not UTF-8 are refused with the encoding they
//! look like; a UTF-8 byte-order mark is skipped.
pub mod build;
mod csvtable;
mod github;
mod jira;
mod linear;
mod model;
pub mod plan;
mod taskwarrior;
pub mod wiki;

pub use model::{Format, ImportError, Priority, SourceIssue, State};

/// Reads an export.
pub fn parse(format: Format, bytes: &[u8]) -> Result<Vec<SourceIssue>, ImportError> {
    let text = text(bytes)?;
    if text.trim().is_empty() {
        return Err(ImportError::Empty);
    }
    match format {
        Format::Jira => jira::parse(text),
        Format::Linear => linear::parse(text),
        Format::GitHub => github::parse(text),
        Format::Taskwarrior => taskwarrior::parse(text),
    }
}

/// The text of a file: UTF-8, its byte-order mark skipped; otherwise refused, naming the
/// encoding it looks like when a mark or the bytes say.
fn text(bytes: &[u8]) -> Result<&str, ImportError> {
    let guess = match bytes {
        [0xFF, 0xFE, ..] => Some("UTF-16 (little-endian)"),
        [0xFE, 0xFF, ..] => Some("UTF-16 (big-endian)"),
        [0xEF, 0xBB, 0xBF, rest @ ..] => {
            return std::str::from_utf8(rest).map_err(|_| ImportError::Encoding(None))
        }
        _ => None,
    };
    if guess.is_some() {
        return Err(ImportError::Encoding(guess.map(str::to_owned)));
    }
    std::str::from_utf8(bytes).map_err(|_| {
        // Every byte of a Latin-1 / Windows-1252 text is a character: the likely culprit.
        ImportError::Encoding(Some("Windows-1252 or Latin-1".into()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_other_than_utf8_are_refused_by_name_and_the_bom_is_skipped() {
        assert_eq!(
            text(&[0xFF, 0xFE, b'a', 0]),
            Err(ImportError::Encoding(Some("UTF-16 (little-endian)".into())))
        );
        let latin1 = b"Summary,Issue key\nCaf\xe9,ENG-1\n";
        let e = parse(Format::Jira, latin1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the file is not UTF-8 text (it looks like Windows-1252 or Latin-1): save or export \
             it as UTF-8 and try again"
        );
        assert_eq!(text(b"\xEF\xBB\xBFSummary").unwrap(), "Summary");
        assert_eq!(parse(Format::GitHub, b"  \n"), Err(ImportError::Empty));
    }

    /// The dry run of the Jira fixture with kept numbers: ENG-3 was deleted in Jira, and stays
    /// unused; every sub-task's parent is in the file; nobody maps to an empty team.
    #[test]
    fn the_jira_fixture_planned_with_kept_numbers() {
        let issues = parse(Format::Jira, include_bytes!("../fixtures/jira.csv")).unwrap();
        let keep = plan::Options {
            keep_numbers: true,
            project: None,
        };
        let p = plan::plan(&issues, &keep, &[], &[], &[]).unwrap();
        let eng = &p.report.projects[0];
        assert_eq!(
            (
                eng.prefix.as_str(),
                eng.new,
                eng.highest,
                eng.unused.clone()
            ),
            ("ENG", true, Some(9), vec![3])
        );
        assert!(p.report.missing_parents.is_empty());
        let unmapped: usize = p.report.unmapped_assignees.values().sum();
        assert_eq!(
            unmapped,
            issues.iter().filter(|i| i.assignee.is_some()).count()
        );
    }

    #[test]
    fn formats_by_name() {
        for f in [
            Format::Jira,
            Format::Linear,
            Format::GitHub,
            Format::Taskwarrior,
        ] {
            assert_eq!(Format::parse(&f.as_str().to_uppercase()), Some(f));
        }
        assert_eq!(Format::parse("trello"), None);
    }
}
