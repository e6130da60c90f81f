//! The shape every export is read into, and why one could not be read.
use chrono::{DateTime, NaiveDate, Utc};

pub use callsign_core::Priority;

/// An export's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jira,
    Linear,
    GitHub,
    Taskwarrior,
}

impl Format {
    /// `jira`, `linear`, `github`, `taskwarrior` (any case).
    pub fn parse(s: &str) -> Option<Format> {
        match s.trim().to_ascii_lowercase().as_str() {
            "jira" => Some(Format::Jira),
            "linear" => Some(Format::Linear),
            "github" | "gh" => Some(Format::GitHub),
            "taskwarrior" | "tw" | "task" => Some(Format::Taskwarrior),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Jira => "jira",
            Format::Linear => "linear",
            Format::GitHub => "github",
            Format::Taskwarrior => "taskwarrior",
        }
    }
}

/// Where an issue stands, as Callsign keeps it; the source's own word is kept beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Open,
    Done,
    Cancelled,
}

/// One issue of an export.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceIssue {
    /// Its key in the source: `ENG-42` (Jira, Linear), `#42` (GitHub); `None` where the source
    /// has none (Taskwarrior: its UUID is kept instead).
    pub key: Option<String>,
    /// The source's own stable id (Jira's `Issue id`, Linear's and Jira's key, GitHub's number,
    /// Taskwarrior's UUID): what a re-run's idempotency keys are made from.
    pub id: String,
    /// Taskwarrior's UUID, kept as the task's.
    pub uuid: Option<String>,
    pub title: String,
    /// Markdown (Jira's wiki markup converted).
    pub description: String,
    pub state: State,
    /// The source's status word (`In Review`, `Won't Do`, `CLOSED (NOT_PLANNED)`).
    pub source_status: String,
    pub priority: Option<Priority>,
    pub labels: Vec<String>,
    pub due: Option<NaiveDate>,
    /// A person as the source names them: a display name (Jira), an e-mail (Linear), a login
    /// (GitHub).
    pub assignee: Option<String>,
    /// The parent's `id` (see above), when the source has parents.
    pub parent: Option<String>,
    pub created: Option<DateTime<Utc>>,
}

/// Why an export could not be read. Nothing is imported from a file that fails.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImportError {
    #[error("the file is not UTF-8 text{}: save or export it as UTF-8 and try again", .0.as_deref().map(|e| format!(" (it looks like {e})")).unwrap_or_default())]
    Encoding(Option<String>),
    #[error("the file is empty")]
    Empty,
    #[error("this is not a {format} export: {why}")]
    NotThisFormat { format: &'static str, why: String },
    #[error("row {row}: {why}")]
    Row { row: usize, why: String },
}
