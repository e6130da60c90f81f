//! Commits acting on tasks (docs/CLI.md "Git"): the CLI's git hooks hand each new commit to
//! [`Engine::record_commits`], which reads its message with `callsign_core::git`'s grammar,
//! resolves the keys as every lookup does (old keys of moved tasks, imported tasks' keys) and
//! links the commit to each task, completing those a closing word names. Each change is an
//! ordinary local edit, queued and synced like any other, and never on the undo stack.
//!
//! Doing it twice changes nothing: a task that already has the same link (and is completed, if
//! the commit closes it) is left alone. A commit rewritten by an amend or a rebase is replaced
//! by its new one ([`Engine::unlink_commit`]), so it is never counted twice.
use std::cell::RefCell;
use std::collections::HashMap;

use callsign_core::dto::{CommitAction, CommitLink, TaskPatch, TaskStatus};
use callsign_core::git::{read_message, Act, Reading};
use callsign_core::validate::{MAX_COMMIT_AUTHOR, MAX_COMMIT_COMMENT, MAX_COMMIT_SUBJECT};
use callsign_core::Prefix;
use chrono::{DateTime, Utc};

use super::Engine;
use crate::error::{Error, Result};
use crate::undo::Journal;

/// A commit as git tells it.
#[derive(Debug, Clone)]
pub struct Commit {
    /// The full hash.
    pub hash: String,
    /// `Name <email>`.
    pub author: String,
    /// The author date.
    pub at: DateTime<Utc>,
    /// The whole message (subject, body, trailers).
    pub message: String,
}

impl Commit {
    /// The message's first line.
    pub fn subject(&self) -> &str {
        self.message.lines().next().unwrap_or("").trim()
    }

    /// The abbreviated hash people read (7 digits, as git's default).
    pub fn short(&self) -> &str {
        &self.hash[..self.hash.len().min(7)]
    }
}

/// The prefixes a key here may have: those a filter's keys may have
/// ([`Engine::known_prefixes`], cached: the projects' prefixes now and before, those of the
/// tasks held), and those of earlier keys and of imported tasks' keys from their trackers,
/// asked of the store once each and only for a prefix the first do not know.
pub struct KnownPrefixes<'e> {
    engine: &'e Engine,
    /// Sorted.
    filters: Vec<String>,
    asked: RefCell<HashMap<String, bool>>,
}

impl KnownPrefixes<'_> {
    pub fn knows(&self, prefix: &Prefix) -> bool {
        let p = prefix.as_str();
        if self.filters.binary_search_by(|k| k.as_str().cmp(p)).is_ok() {
            return true;
        }
        if let Some(&k) = self.asked.borrow().get(p) {
            return k;
        }
        // A store that cannot answer knows no more keys.
        let k = self.engine.store().holds_prefix(p).unwrap_or(false);
        self.asked.borrow_mut().insert(p.to_owned(), k);
        k
    }
}

/// What one commit did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitReport {
    /// The tasks it completed (labels).
    pub closed: Vec<String>,
    /// The tasks it linked without completing them.
    pub linked: Vec<String>,
    /// Tasks it would have completed that have open subtasks: linked only.
    pub blocked: Vec<String>,
    /// Tasks that already had this link (and state): nothing changed.
    pub unchanged: Vec<String>,
    /// What it named that names no task here, each with why (`ABC-12: no project ABC`).
    pub ignored: Vec<String>,
}

impl Engine {
    /// What says whether a key here may have a prefix (the grammar's `known`).
    pub fn commit_prefixes(&self) -> Result<KnownPrefixes<'_>> {
        Ok(KnownPrefixes {
            engine: self,
            filters: self.known_prefixes()?,
            asked: RefCell::new(HashMap::new()),
        })
    }

    /// Reads each commit's message and acts on the tasks it names (see the module doc), in
    /// order; one report a commit. `rewritten_from(c)`: the commit an amend or a rebase made `c`
    /// from; a task linked to either has been acted on already (its status is left as it is
    /// now: it may have been reopened since). A task that cannot be changed is reported, and
    /// the others still are. The prefixes a key may have are read once for all of them.
    pub fn record_commits<'a>(
        &self,
        commits: &[Commit],
        rewritten_from: impl Fn(&Commit) -> Option<&'a str>,
    ) -> Result<Vec<CommitReport>> {
        let prefixes = self.commit_prefixes()?;
        let known = |p: &Prefix| prefixes.knows(p);
        Ok(commits
            .iter()
            .map(|c| self.act_on(c, rewritten_from(c), &read_message(&c.message, known)))
            .collect())
    }

    fn act_on(
        &self,
        commit: &Commit,
        rewritten_from: Option<&str>,
        reading: &Reading,
    ) -> CommitReport {
        let mut report = CommitReport::default();
        for text in &reading.unknown {
            let prefix = text.split(['-', ' ']).next().unwrap_or(text);
            report.ignored.push(format!(
                "{text}: no project {} here",
                prefix.to_ascii_uppercase()
            ));
        }
        for m in &reading.mentions {
            let key = m.key.to_string();
            let task = match self.get(&key) {
                Ok(t) => t,
                Err(Error::NotFound(_)) => {
                    report.ignored.push(format!("{key}: no such task here"));
                    continue;
                }
                Err(e) => {
                    report.ignored.push(format!("{key}: {e}"));
                    continue;
                }
            };
            let subject = match commit.subject() {
                "" => commit.short(),
                s => s,
            };
            let link = CommitLink {
                hash: commit.hash.clone(),
                subject: cut(subject, MAX_COMMIT_SUBJECT),
                author: cut(&commit.author, MAX_COMMIT_AUTHOR),
                at: commit.at,
                action: match m.act {
                    Act::Close => CommitAction::Closes,
                    Act::Link => CommitAction::Refs,
                },
                comment: m.comment.as_deref().map(|c| cut(c, MAX_COMMIT_COMMENT)),
            };
            // Acted on before (this commit read again, or the one it was rewritten from): the
            // link is kept up to date, the status is the task's own now.
            let seen = task
                .commits
                .iter()
                .any(|c| c.hash == commit.hash || Some(c.hash.as_str()) == rewritten_from);
            let close = m.act == Act::Close && task.status == TaskStatus::Pending && !seen;
            let blocked = close && task.is_blocked();
            let label = task.label();
            if task.commits.contains(&link) && (!close || blocked) {
                report.unchanged.push(label);
                continue;
            }
            let patch = TaskPatch {
                commits: vec![link],
                status: (close && !blocked).then_some(TaskStatus::Completed),
                ..TaskPatch::default()
            };
            if let Err(e) = self.edit_as(&task.uuid.to_string(), patch, Journal::Skip) {
                report.ignored.push(format!("{label}: {e}"));
                continue;
            }
            match (close, blocked) {
                (true, true) => report.blocked.push(label),
                (true, false) => report.closed.push(label),
                _ => report.linked.push(label),
            }
        }
        report
    }

    /// Takes the link of commit `old` off every task that has it (an amend or a rebase
    /// rewrote it; its new commit links itself). Returns the tasks' labels.
    pub fn unlink_commit(&self, old: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        // Read first: the store's lock is not to be held while editing.
        let linked = self.store().tasks_with_commit(old)?;
        for uuid in linked {
            let patch = TaskPatch {
                unlink_commits: vec![old.to_owned()],
                ..TaskPatch::default()
            };
            let task = self.edit_as(&uuid.to_string(), patch, Journal::Skip)?;
            out.push(task.label());
        }
        Ok(out)
    }
}

/// At most `max` characters of `s`, trimmed, control characters (a tab) as spaces.
fn cut(s: &str, max: usize) -> String {
    s.trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(max)
        .collect::<String>()
        .trim_end()
        .to_owned()
}
