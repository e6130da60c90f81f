//! One filter grammar for the CLI's `list` and the app's filter bar: both parse with
//! [`Filter::parse`], so a filter means the same in both.
//!
//! | term | keeps tasks that … |
//! |---|---|
//! | `word`, `"two words"` | contain it in description, notes, key, old keys, short id or tags (any case) |
//! | `+tag` / `-tag` | have / lack the tag (any case) |
//! | `#PFX`, `project:PFX` | are in that project |
//! | `status:pending\|completed\|deleted\|all` | have that status |
//! | `status:failed`, `status:provisional` | were refused by the server / have no key yet |
//! | `due:WHEN` | are due on that day (local) |
//! | `due.before:WHEN`, `due.after:WHEN` | are due before / after it (strictly) |
//! | `due.any:`, `due.none:`, `due:none` | have a due date / have none |
//! | `priority:H\|M\|L\|none`, `pri:…` | have that priority |
//! | `DEV-12`, `DEV-10..20`, `DEV-42.1..3` | have that key (or had it), or one in the range |
//! | `commits:any`, `commits:none` | have commits linked by git (docs/CLI.md "Git") / have none |
//! | `commits:HASH` | are linked to a commit whose hash starts with it (4 hex digits or more) |
//!
//! Terms of one kind that exclude each other are alternatives (`#DEV #OPS`: either project;
//! `DEV-1 DEV-7`: either key; `status:completed status:deleted`); all other terms must all
//! hold. Without a `status:` term, the caller's default statuses apply (the CLI: pending; the
//! app: its status menu); with only `status:failed` or `status:provisional`, every status.
//!
//! `PFX-N` is a key only when `PFX` names a project the caller knows (any valid prefix when it
//! knows none), so `covid-19` stays a word. Pure: the caller passes the time and time zone
//! (`due:` forms are [`crate::when`]'s) and the known prefixes.
use chrono::{DateTime, Days, NaiveTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::dto::TaskStatus;
use crate::grammar::{self, Token};
use crate::when::{self, Priority, WhenError};
use crate::{Prefix, TaskKey};

/// A sync state a filter can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncWanted {
    /// The server refused the task's create or a change (whatever its status).
    Failed,
    /// The server has not numbered it yet.
    Provisional,
}

/// What a filter asks of the due date. Every bound given must hold; a bound implies a date.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DueWanted {
    /// `Some(true)`: has a due date; `Some(false)`: has none.
    pub has: Option<bool>,
    /// Due at or after this (inclusive: the start of a `due:DAY`).
    pub from: Option<DateTime<Utc>>,
    /// Due strictly after this.
    pub after: Option<DateTime<Utc>>,
    /// Due strictly before this.
    pub before: Option<DateTime<Utc>>,
}

/// What a filter asks of the commits linked to a task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitsWanted {
    /// `Some(true)`: has a linked commit; `Some(false)`: has none.
    pub has: Option<bool>,
    /// Lower-case hash prefixes: a linked commit's hash must start with one (when any).
    pub hashes: Vec<String>,
}

/// Keys `PREFIX-[parents.]from` to `…to`: one key when `from == to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRange {
    pub prefix: String,
    pub parents: Vec<u64>,
    pub from: u64,
    pub to: u64,
}

impl KeyRange {
    fn contains(&self, key: &TaskKey) -> bool {
        key.prefix.as_str() == self.prefix
            && key.parents == self.parents
            && (self.from..=self.to).contains(&key.number)
    }
}

/// A parsed filter. Empty lists ask nothing. Serialised as it is for the app, which applies
/// it to its loaded list with the same rules as [`Filter::matches`] (a fixture shared by both
/// test suites keeps the two in step).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filter {
    /// Lower-cased; each must be in the task's text ([`haystack`]).
    pub words: Vec<String>,
    /// Lower-cased; each must be one of the task's tags.
    pub tags: Vec<String>,
    /// Lower-cased; none may be one of the task's tags.
    pub not_tags: Vec<String>,
    /// Upper-cased; the task's project must be one (when any).
    pub projects: Vec<String>,
    /// The task's status must be one (when any; see the module's note on defaults).
    pub statuses: Vec<TaskStatus>,
    /// Each must hold.
    pub sync: Vec<SyncWanted>,
    pub due: DueWanted,
    /// The task's priority must be one (`None`: no priority) (when any).
    pub priorities: Vec<Option<Priority>>,
    /// The task's key or an old key must be in one (when any).
    pub keys: Vec<KeyRange>,
    #[serde(default)]
    pub commits: CommitsWanted,
}

/// A filter term that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error(
        "'{0}' is not a status: use status:pending, completed, deleted, all, failed or provisional"
    )]
    Status(String),
    #[error("{word}: {source}")]
    When { word: String, source: WhenError },
    #[error("'{0}': due takes due:WHEN, due.before:WHEN, due.after:WHEN, due.any: or due.none:")]
    DueModifier(String),
    #[error("'{0}': {1} takes no modifier")]
    Modifier(String, &'static str),
    #[error("'{0}' is not a project: {1}")]
    Project(String, crate::PrefixError),
    #[error("'{0}': commits takes commits:any, commits:none or commits:HASH (4 to 64 hex digits)")]
    Commits(String),
    #[error("'{0}' runs backwards: a key range goes from the lower number to the higher")]
    Backwards(String),
    #[error(
        "'{0}': a key range stays in one project and under one parent (DEV-10..20, DEV-4.1..3)"
    )]
    RangeScope(String),
}

/// The facts about one task a filter looks at.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub uuid: Uuid,
    pub description: &'a str,
    pub notes: &'a str,
    pub tags: &'a [String],
    /// Upper-cased prefix.
    pub project: &'a str,
    pub key: Option<&'a str>,
    pub previous_keys: &'a [String],
    pub status: TaskStatus,
    pub failed: bool,
    pub due: Option<DateTime<Utc>>,
    pub priority: Option<Priority>,
    /// The commits linked to it.
    pub commits: &'a [crate::dto::CommitLink],
}

impl Facts<'_> {
    /// The task's [`haystack`], its short id the provisional label (`~` and the UUID's first
    /// eight hex digits).
    pub fn text(&self) -> String {
        let short_id = format!("~{}", &self.uuid.simple().to_string()[..8]);
        haystack(
            self.description,
            self.notes,
            self.key,
            self.previous_keys,
            &short_id,
            self.tags,
        )
    }
}

/// The lower-cased text words match against: description, notes, key and old keys, the
/// provisional short id and the tags, a line each.
pub fn haystack(
    description: &str,
    notes: &str,
    key: Option<&str>,
    previous_keys: &[String],
    short_id: &str,
    tags: &[String],
) -> String {
    let mut keys = key.unwrap_or_default().to_owned();
    for k in previous_keys {
        keys.push(' ');
        keys.push_str(k);
    }
    format!(
        "{description}\n{notes}\n{keys}\n{short_id}\n{}",
        tags.join(" ")
    )
    .to_lowercase()
}

impl Filter {
    /// Parses filter text as typed in the app's filter bar (`"` quotes a phrase).
    pub fn parse_text<Tz: TimeZone>(
        text: &str,
        now: DateTime<Tz>,
        known: &[String],
    ) -> Result<Filter, FilterError> {
        Filter::parse(&grammar::split(text), now, known)
    }

    /// Parses filter words (the CLI's arguments: one word each, as the shell split them).
    /// `known`: the project prefixes a `PFX-N` key may have (upper-case); empty: any.
    pub fn parse<Tz: TimeZone>(
        words: &[impl AsRef<str>],
        now: DateTime<Tz>,
        known: &[String],
    ) -> Result<Filter, FilterError> {
        let mut f = Filter::default();
        for word in words {
            let word = word.as_ref();
            match grammar::classify(word) {
                Token::Tag(t) => push_new(&mut f.tags, t.to_lowercase()),
                Token::NotTag(t) => push_new(&mut f.not_tags, t.to_lowercase()),
                Token::Project(p) => push_new(&mut f.projects, p.to_ascii_uppercase()),
                Token::Attr {
                    name,
                    modifier,
                    value,
                } => f.attribute(word, name, modifier.as_deref(), &value, &now)?,
                Token::Word(w) => match key_range(&w, known)? {
                    Some(range) => push_new(&mut f.keys, range),
                    None => push_new(&mut f.words, w.to_lowercase()),
                },
            }
        }
        Ok(f)
    }

    fn attribute<Tz: TimeZone>(
        &mut self,
        word: &str,
        name: &'static str,
        modifier: Option<&str>,
        value: &str,
        now: &DateTime<Tz>,
    ) -> Result<(), FilterError> {
        if name != "due" && modifier.is_some() {
            return Err(FilterError::Modifier(word.to_owned(), name));
        }
        let when = |v: &str| {
            when::parse_due(v, now.clone()).map_err(|source| FilterError::When {
                word: word.to_owned(),
                source,
            })
        };
        match name {
            "status" => match value.trim().to_ascii_lowercase().as_str() {
                "failed" => push_new(&mut self.sync, SyncWanted::Failed),
                "provisional" => push_new(&mut self.sync, SyncWanted::Provisional),
                "all" | "any" => {
                    for s in [
                        TaskStatus::Pending,
                        TaskStatus::Completed,
                        TaskStatus::Deleted,
                    ] {
                        push_new(&mut self.statuses, s);
                    }
                }
                v => match TaskStatus::parse(v) {
                    Some(s) => push_new(&mut self.statuses, s),
                    None => return Err(FilterError::Status(value.to_owned())),
                },
            },
            "priority" => {
                let p =
                    when::parse_priority_or_none(value).map_err(|source| FilterError::When {
                        word: word.to_owned(),
                        source,
                    })?;
                push_new(&mut self.priorities, p);
            }
            "project" => {
                let p = Prefix::parse(value.trim())
                    .map_err(|e| FilterError::Project(value.to_owned(), e))?;
                push_new(&mut self.projects, p.as_str().to_owned());
            }
            "due" => {
                let empty = matches!(value.trim().to_ascii_lowercase().as_str(), "" | "none");
                let due = &mut self.due;
                match modifier {
                    None if empty => due.has = Some(false),
                    None => {
                        let (start, end) = day_of(when(value)?, now);
                        due.from = Some(due.from.map_or(start, |f| f.max(start)));
                        due.before = Some(due.before.map_or(end, |b| b.min(end)));
                    }
                    Some("before" | "below" | "by") => {
                        let t = when(value)?;
                        due.before = Some(due.before.map_or(t, |b| b.min(t)));
                    }
                    Some("after" | "above") => {
                        let t = when(value)?;
                        due.after = Some(due.after.map_or(t, |a| a.max(t)));
                    }
                    Some("any") => due.has = Some(true),
                    Some("none") => due.has = Some(false),
                    Some(_) => return Err(FilterError::DueModifier(word.to_owned())),
                }
            }
            "commits" => {
                let v = value.trim().to_ascii_lowercase();
                match v.as_str() {
                    "any" => self.commits.has = Some(true),
                    "none" => self.commits.has = Some(false),
                    h if (4..=64).contains(&h.len())
                        && h.bytes().all(|b| b.is_ascii_hexdigit()) =>
                    {
                        push_new(&mut self.commits.hashes, v.clone())
                    }
                    _ => return Err(FilterError::Commits(word.to_owned())),
                }
            }
            _ => unreachable!("grammar::classify knows only these attributes"),
        }
        Ok(())
    }

    /// True when nothing is asked but (maybe) the statuses.
    pub fn asks_status(&self) -> bool {
        !self.statuses.is_empty() || !self.sync.is_empty()
    }

    /// The statuses a task must have to pass (empty: any): the filter's own when it asks for
    /// a status, else `default_statuses`.
    pub fn statuses_or<'a>(&'a self, default_statuses: &'a [TaskStatus]) -> &'a [TaskStatus] {
        if self.asks_status() {
            &self.statuses
        } else {
            default_statuses
        }
    }

    /// Whether the task passes. `default_statuses` apply when the filter names no status (an
    /// empty default: any status).
    pub fn matches(&self, t: &Facts<'_>, default_statuses: &[TaskStatus]) -> bool {
        let statuses = self.statuses_or(default_statuses);
        if !statuses.is_empty() && !statuses.contains(&t.status) {
            return false;
        }
        for s in &self.sync {
            let holds = match s {
                SyncWanted::Failed => t.failed,
                SyncWanted::Provisional => t.key.is_none(),
            };
            if !holds {
                return false;
            }
        }
        if !self.projects.is_empty() && !self.projects.iter().any(|p| p == t.project) {
            return false;
        }
        let has_tag = |want: &str| t.tags.iter().any(|x| x.to_lowercase() == want);
        if !self.tags.iter().all(|w| has_tag(w)) || self.not_tags.iter().any(|w| has_tag(w)) {
            return false;
        }
        if !self.priorities.is_empty() && !self.priorities.contains(&t.priority) {
            return false;
        }
        if !self.due_matches(t.due) {
            return false;
        }
        let c = &self.commits;
        if c.has.is_some_and(|has| has == t.commits.is_empty()) {
            return false;
        }
        if !c.hashes.is_empty()
            && !t
                .commits
                .iter()
                .any(|l| c.hashes.iter().any(|h| l.hash.starts_with(h.as_str())))
        {
            return false;
        }
        if !self.keys.is_empty() {
            let mut keys = t
                .key
                .into_iter()
                .chain(t.previous_keys.iter().map(String::as_str));
            let hit = keys
                .any(|k| TaskKey::parse(k).is_ok_and(|k| self.keys.iter().any(|r| r.contains(&k))));
            if !hit {
                return false;
            }
        }
        // The text is built only when a word needs it.
        if self.words.is_empty() {
            return true;
        }
        let text = t.text();
        self.words.iter().all(|w| text.contains(w.as_str()))
    }

    fn due_matches(&self, due: Option<DateTime<Utc>>) -> bool {
        let d = &self.due;
        let bounded = d.from.is_some() || d.after.is_some() || d.before.is_some();
        match due {
            None => d.has != Some(true) && !bounded,
            Some(due) => {
                d.has != Some(false)
                    && d.from.is_none_or(|f| due >= f)
                    && d.after.is_none_or(|a| due > a)
                    && d.before.is_none_or(|b| due < b)
            }
        }
    }
}

fn push_new<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

/// The local day `t` falls on, in `now`'s time zone: its start and the next day's start.
fn day_of<Tz: TimeZone>(t: DateTime<Utc>, now: &DateTime<Tz>) -> (DateTime<Utc>, DateTime<Utc>) {
    let tz = now.timezone();
    let day = t.with_timezone(&tz).date_naive();
    let start = |d: chrono::NaiveDate| {
        tz.from_local_datetime(&d.and_time(NaiveTime::MIN))
            .earliest()
            .map_or(t, |s| s.with_timezone(&Utc))
    };
    let next = day.checked_add_days(Days::new(1)).unwrap_or(day);
    (start(day), start(next))
}

/// `PFX-N`, `PFX-N..M`, `PFX-N..PFX-M` (and subtask forms) with a known prefix, as a range;
/// `None` when the word is not key-shaped or its prefix is not known.
fn key_range(word: &str, known: &[String]) -> Result<Option<KeyRange>, FilterError> {
    let Some((head, numbers)) = word.split_once('-') else {
        return Ok(None);
    };
    let Ok(prefix) = Prefix::parse(head) else {
        return Ok(None);
    };
    if !known.is_empty()
        && !known
            .iter()
            .any(|k| k.eq_ignore_ascii_case(prefix.as_str()))
    {
        return Ok(None);
    }
    let (low, high) = match numbers.split_once("..") {
        Some((l, h)) => (l, Some(h)),
        None => (numbers, None),
    };
    let Ok(low) = TaskKey::parse(&format!("{prefix}-{low}")) else {
        return Ok(None);
    };
    let to = match high {
        None => low.number,
        Some(h) => {
            let high = if h.contains('-') {
                TaskKey::parse(h)
            } else {
                let mut parents: Vec<String> = low.parents.iter().map(u64::to_string).collect();
                parents.push(h.to_owned());
                TaskKey::parse(&format!("{prefix}-{}", parents.join(".")))
            };
            let Ok(high) = high else {
                return Ok(None);
            };
            if high.prefix != low.prefix || high.parents != low.parents {
                return Err(FilterError::RangeScope(word.to_owned()));
            }
            if high.number < low.number {
                return Err(FilterError::Backwards(word.to_owned()));
            }
            high.number
        }
    };
    Ok(Some(KeyRange {
        prefix: low.prefix.as_str().to_owned(),
        parents: low.parents,
        from: low.number,
        to,
    }))
}

#[cfg(test)]
mod tests;
