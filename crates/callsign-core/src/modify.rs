//! `callsign modify`'s changes, in Taskwarrior's words ([`crate::grammar`]):
//!
//! | word | change |
//! |---|---|
//! | plain words | replace the description (all of them, joined by spaces) |
//! | `+tag` / `-tag` | add / remove the tag (removal ignores case) |
//! | `#PFX`, `project:PFX` | move the task to that project |
//! | `due:WHEN`, `due:` or `due:none` | set / clear the due date |
//! | `priority:H\|M\|L`, `pri:…`, `priority:` or `priority:none` | set / clear the priority |
//!
//! Pure: the caller passes the time and time zone for `due:`.
use chrono::{DateTime, TimeZone, Utc};

use crate::dto::TaskPatch;
use crate::grammar::{self, Token};
use crate::when::{self, Priority, WhenError};
use crate::{Prefix, PrefixError};

/// A parsed modification: what to change; `None` and empty lists change nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Modification {
    pub description: Option<String>,
    pub add_tags: Vec<String>,
    pub remove_tags: Vec<String>,
    pub project: Option<Prefix>,
    /// `Some(None)` clears it.
    pub due: Option<Option<DateTime<Utc>>>,
    /// `Some(None)` clears it.
    pub priority: Option<Option<Priority>>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModifyError {
    #[error("{word}: {source}")]
    When { word: String, source: WhenError },
    #[error("'{0}' is not a project: {1}")]
    Project(String, PrefixError),
    #[error("'{0}': modify sets due:WHEN or clears it with due:none; due.before: and the like are for filters")]
    Modifier(String),
    #[error("'{0}': modify does not change the status: use `callsign done`, `delete` or `reopen`")]
    Status(String),
    #[error("'{0}': commits are linked by git (`callsign git install`); commits: is for filters")]
    Commits(String),
    #[error("+{0} and -{0} in one change: say which")]
    TagBothWays(String),
    #[error(
        "nothing to change: give words for a new description, +tag, -tag, #PFX, due: or priority:"
    )]
    Empty,
}

impl Modification {
    /// Parses modification words (one word each, as the shell split them).
    pub fn parse<Tz: TimeZone>(
        words: &[impl AsRef<str>],
        now: DateTime<Tz>,
    ) -> Result<Modification, ModifyError> {
        let mut m = Modification::default();
        let mut text: Vec<&str> = Vec::new();
        for word in words {
            let word = word.as_ref();
            match grammar::classify(word) {
                Token::Tag(t) => {
                    if !m.add_tags.contains(&t) {
                        m.add_tags.push(t);
                    }
                }
                Token::NotTag(t) => {
                    if !m.remove_tags.iter().any(|x| x.eq_ignore_ascii_case(&t)) {
                        m.remove_tags.push(t);
                    }
                }
                Token::Project(p) => {
                    m.project = Some(Prefix::parse(&p).map_err(|e| ModifyError::Project(p, e))?)
                }
                Token::Attr {
                    name,
                    modifier,
                    value,
                } => {
                    if modifier.is_some() {
                        return Err(ModifyError::Modifier(word.to_owned()));
                    }
                    let when_err = |source| ModifyError::When {
                        word: word.to_owned(),
                        source,
                    };
                    match name {
                        "due" => {
                            m.due = Some(
                                when::parse_due_or_none(&value, now.clone()).map_err(when_err)?,
                            )
                        }
                        "priority" => {
                            m.priority =
                                Some(when::parse_priority_or_none(&value).map_err(when_err)?)
                        }
                        "project" => {
                            let p = value.trim();
                            m.project = Some(
                                Prefix::parse(p)
                                    .map_err(|e| ModifyError::Project(p.to_owned(), e))?,
                            );
                        }
                        "commits" => return Err(ModifyError::Commits(word.to_owned())),
                        _ => return Err(ModifyError::Status(word.to_owned())),
                    }
                }
                Token::Word(_) => text.push(word),
            }
        }
        if let Some(t) = m
            .add_tags
            .iter()
            .find(|a| m.remove_tags.iter().any(|r| r.eq_ignore_ascii_case(a)))
        {
            return Err(ModifyError::TagBothWays(t.clone()));
        }
        let description = text.join(" ");
        if !description.trim().is_empty() {
            m.description = Some(description.trim().to_owned());
        }
        if m == Modification::default() {
            return Err(ModifyError::Empty);
        }
        Ok(m)
    }

    /// The tags after the change, or `None` when they stay as they are.
    pub fn tags_after(&self, current: &[String]) -> Option<Vec<String>> {
        let mut tags: Vec<String> = current
            .iter()
            .filter(|t| !self.remove_tags.iter().any(|r| r.eq_ignore_ascii_case(t)))
            .cloned()
            .collect();
        for t in &self.add_tags {
            if !tags.iter().any(|x| x.eq_ignore_ascii_case(t)) {
                tags.push(t.clone());
            }
        }
        (tags != current).then_some(tags)
    }

    /// The field patch for a task whose tags are `current_tags` (the project is left out: a
    /// move has its own rules). May be empty when the task already is as asked.
    pub fn patch(&self, current_tags: &[String]) -> TaskPatch {
        TaskPatch {
            description: self.description.clone(),
            tags: self.tags_after(current_tags),
            due: self.due,
            priority: self.priority,
            ..TaskPatch::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 26, 10, 0, 0).unwrap()
    }

    #[test]
    fn words_tags_project_due_and_priority() {
        let m = Modification::parse(
            &[
                "Fix",
                "the",
                "redirect",
                "+bug",
                "-ui",
                "#ops",
                "due:tomorrow",
                "pri:h",
            ],
            now(),
        )
        .unwrap();
        assert_eq!(m.description.as_deref(), Some("Fix the redirect"));
        assert_eq!(m.add_tags, ["bug"]);
        assert_eq!(m.remove_tags, ["ui"]);
        assert_eq!(m.project.unwrap().as_str(), "OPS");
        assert_eq!(
            m.due,
            Some(Some(Utc.with_ymd_and_hms(2026, 11, 27, 0, 0, 0).unwrap()))
        );
        assert_eq!(m.priority, Some(Some(Priority::H)));
    }

    #[test]
    fn none_clears_and_tags_change_only_what_they_name() {
        let m = Modification::parse(&["due:none", "priority:", "-BUG", "+later"], now()).unwrap();
        assert_eq!(m.description, None);
        assert_eq!((m.due, m.priority), (Some(None), Some(None)));
        let current = vec!["bug".to_owned(), "ui".to_owned()];
        assert_eq!(
            m.tags_after(&current),
            Some(vec!["ui".to_owned(), "later".to_owned()])
        );
        let same = Modification::parse(&["+ui"], now()).unwrap();
        assert_eq!(same.tags_after(&current), None, "already tagged: no change");
        assert!(same.patch(&current).is_empty());
    }

    #[test]
    fn what_modify_refuses_is_said_in_words() {
        let err = |w: &[&str]| Modification::parse(w, now()).unwrap_err().to_string();
        assert!(err(&[]).contains("nothing to change"));
        assert!(err(&["status:completed"]).contains("callsign done"));
        assert!(err(&["due.before:fri"]).contains("for filters"));
        assert!(err(&["due:someday"]).contains("'someday' is not a date"));
        assert!(err(&["pri:Z"]).contains("not a priority"));
        assert!(err(&["project:1x"]).contains("not a project"));
        assert!(err(&["+a", "-A"]).contains("say which"));
    }
}
