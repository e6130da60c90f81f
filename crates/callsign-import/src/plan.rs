//! What an import would do, before it does anything: the dry run's facts. Pure: the issues
//! read ([`crate::parse`]), the options, the team and the account's prefixes in; a [`Plan`]
//! out, or why the import cannot go ahead ([`PlanError`]).
//!
//! - **Where each task goes.** With `keep_numbers`, into the project named by its source key's
//!   prefix (`ENG-42` stays `ENG-42`), or by `project` for a source whose keys have none
//!   (GitHub's `#42` becomes `PFX-42`); that prefix must be free in the account, and the
//!   numbers the source never had (deleted issues) stay unused and are listed. Otherwise into
//!   `project`, or the source prefix's project, numbered there; the source key becomes an
//!   earlier key that still resolves.
//! - **Parents first.** Items are ordered so that a parent comes before its children; a child
//!   whose parent is not in the file is imported on its own, and listed.
//! - **Assignees** are mapped to members by name or e-mail; the others are listed and their
//!   tasks left unassigned.
use std::collections::{BTreeMap, BTreeSet, HashMap};

use callsign_core::{Prefix, TaskKey};

use crate::model::{SourceIssue, State};

/// How to import.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Each task keeps its source number (`--keep-numbers`).
    pub keep_numbers: bool,
    /// The project to import into (`--project PFX`); with `keep_numbers`, the prefix for a
    /// source whose keys have none.
    pub project: Option<String>,
}

/// One task to make, in the order to make them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// Its place in the issues given.
    pub issue: usize,
    /// The project it goes into.
    pub project: String,
    /// The number it keeps (`keep_numbers`); `None`: the next number there.
    pub number: Option<u64>,
    /// Its source key, kept as an earlier key when it does not keep its number.
    pub earlier_key: Option<String>,
    /// The member it is assigned to.
    pub assignee: Option<String>,
    /// Its parent's place in the plan (always before it).
    pub parent: Option<usize>,
}

/// A project the import numbers in.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProjectPlan {
    pub prefix: String,
    /// It does not exist yet and is made.
    pub new: bool,
    pub tasks: usize,
    /// Kept numbers: the highest (its counter continues after it) and those the source never
    /// had, which stay unused: how many, and the first [`UNUSED_LISTED`] of them.
    #[serde(rename = "highest_kept")]
    pub highest: Option<u64>,
    pub unused_count: u64,
    pub unused: Vec<u64>,
}

/// The highest number an import keeps (`callsign_core::validate::MAX_KEPT_NUMBER`): the
/// server records each number a kept one passes over.
pub const MAX_KEPT_NUMBER: u64 = callsign_core::validate::MAX_KEPT_NUMBER;

/// How many unused numbers a report lists (it counts them all).
pub const UNUSED_LISTED: usize = 1000;

/// The dry run's report (its JSON is what `callsign import --json` and the app show).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    pub open: usize,
    pub done: usize,
    pub cancelled: usize,
    pub projects: Vec<ProjectPlan>,
    /// Source assignees no member matches, with their task counts.
    pub unmapped_assignees: BTreeMap<String, usize>,
    /// Children imported on their own: their parent is not in the file, or their parents lead
    /// back to them (their source keys).
    pub missing_parents: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub items: Vec<Planned>,
    pub report: Report,
}

/// Why an import cannot go ahead; nothing is made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error(
        "--keep-numbers needs a prefix free in the account, and {0} is a project already: \
         import into it without --keep-numbers (each task gets the next number there, and its \
         old key still finds it), or rename that project first"
    )]
    PrefixInUse(String),
    #[error("{0}")]
    NoPrefix(String),
    #[error("{key} appears twice in the file")]
    Duplicate { key: String },
    #[error("{0:?} is not a project prefix (2-10 letters and digits, starting with a letter)")]
    BadPrefix(String),
    #[error(
        "{key} would name two tasks: {prefix} is a project here, whose keys name its own tasks; \
         import into {prefix} with --keep-numbers only if it holds nothing else, or rename it"
    )]
    SourcePrefixHere { key: String, prefix: String },
    #[error(
        "{key} is past the highest number kept ({max}): keeping it would leave most numbers \
         below it unused; import without --keep-numbers"
    )]
    TooFar { key: String, max: u64 },
}

/// A member as the plan matches assignees against them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub email: Option<String>,
}

/// Plans importing `issues`. `prefixes` are every prefix the account's projects have or had;
/// `resumable` those of projects an import from the same tracker kept numbers in before (the
/// same file again, a run cut short, a later export): kept numbers may go on there.
pub fn plan(
    issues: &[SourceIssue],
    opts: &Options,
    team: &[Member],
    prefixes: &[String],
    resumable: &[String],
) -> Result<Plan, PlanError> {
    let existing: BTreeSet<String> = prefixes.iter().map(|p| p.to_uppercase()).collect();
    let resumable: BTreeSet<String> = resumable.iter().map(|p| p.to_uppercase()).collect();
    let project = match &opts.project {
        Some(p) => Some(
            Prefix::parse(p.trim())
                .map_err(|_| PlanError::BadPrefix(p.clone()))?
                .to_string(),
        ),
        None => None,
    };
    let mut seen = BTreeSet::new();
    let mut report = Report::default();
    let mut places: Vec<(String, Option<u64>, Option<String>)> = Vec::with_capacity(issues.len());
    for i in issues {
        if !seen.insert(i.id.clone()) {
            return Err(PlanError::Duplicate {
                key: i.key.clone().unwrap_or_else(|| i.id.clone()),
            });
        }
        match i.state {
            State::Open => report.open += 1,
            State::Done => report.done += 1,
            State::Cancelled => report.cancelled += 1,
        }
        places.push(place(i, opts, project.as_deref())?);
    }
    if opts.keep_numbers {
        let mut taken = BTreeSet::new();
        for (n, p) in places.iter().enumerate() {
            if let Some(number) = p.1 {
                if !taken.insert((p.0.as_str(), number)) {
                    return Err(PlanError::Duplicate {
                        key: issues[n]
                            .key
                            .clone()
                            .unwrap_or_else(|| issues[n].id.clone()),
                    });
                }
            }
        }
        let kept: BTreeSet<&str> = places
            .iter()
            .filter(|p| p.1.is_some())
            .map(|p| p.0.as_str())
            .collect();
        if let Some(p) = kept
            .iter()
            .find(|p| existing.contains(**p) && !resumable.contains(**p))
        {
            return Err(PlanError::PrefixInUse((*p).to_owned()));
        }
        if let Some(n) = places
            .iter()
            .position(|p| p.1.is_some_and(|n| n > MAX_KEPT_NUMBER))
        {
            return Err(PlanError::TooFar {
                key: issues[n].key.clone().unwrap_or_default(),
                max: MAX_KEPT_NUMBER,
            });
        }
    } else {
        for (i, p) in issues.iter().zip(&places) {
            let source = i.key.as_deref().and_then(split_key).and_then(|k| k.0);
            if let Some(prefix) = source.filter(|s| existing.contains(s) || *s == p.0) {
                return Err(PlanError::SourcePrefixHere {
                    key: i.key.clone().unwrap_or_default(),
                    prefix,
                });
            }
        }
    }
    // Parents before children: by depth in the file's tree, then in the file's order.
    let by_id: HashMap<&str, usize> = issues
        .iter()
        .enumerate()
        .map(|(n, i)| (i.id.as_str(), n))
        .collect();
    let named = |n: usize| {
        issues[n]
            .parent
            .as_deref()
            .and_then(|p| by_id.get(p).copied())
    };
    // A task whose parents lead back to it (a cycle in the file) is imported on its own.
    let cyclic: Vec<bool> = (0..issues.len())
        .map(|n| {
            let mut at = named(n);
            for _ in 0..issues.len() {
                match at {
                    Some(p) if p == n => return true,
                    Some(p) => at = named(p),
                    None => return false,
                }
            }
            false
        })
        .collect();
    let parent_of = |n: usize| named(n).filter(|_| !cyclic[n]);
    let depth = |n: usize| {
        let mut d = 0;
        let mut at = n;
        while let Some(p) = parent_of(at) {
            d += 1;
            at = p;
        }
        d
    };
    // Kept numbers highest first: the first commit raises the project's counter past every
    // number the import keeps, so a task made here meanwhile never takes one of them.
    let mut order: Vec<usize> = (0..issues.len()).collect();
    order.sort_by_key(|n| (depth(*n), std::cmp::Reverse(places[*n].1.unwrap_or(0))));
    let position: HashMap<usize, usize> =
        order.iter().enumerate().map(|(at, n)| (*n, at)).collect();
    let mut unmapped: BTreeMap<String, usize> = BTreeMap::new();
    let mut items = Vec::with_capacity(order.len());
    for &n in &order {
        let i = &issues[n];
        let (project, number, earlier_key) = places[n].clone();
        let assignee = i.assignee.as_deref().and_then(|a| {
            let m = member_for(a, team);
            if m.is_none() {
                *unmapped.entry(a.to_owned()).or_default() += 1;
            }
            m
        });
        let parent = match (&i.parent, parent_of(n)) {
            (_, Some(p)) => Some(position[&p]),
            (Some(_), None) => {
                report
                    .missing_parents
                    .push(i.key.clone().unwrap_or_else(|| i.id.clone()));
                None
            }
            (None, None) => None,
        };
        items.push(Planned {
            issue: n,
            project,
            number,
            earlier_key,
            assignee,
            parent,
        });
    }
    report.unmapped_assignees = unmapped;
    report.projects = projects(&items, &existing);
    Ok(Plan { items, report })
}

/// Where one issue goes: its project, the number it keeps, its earlier key.
fn place(
    i: &SourceIssue,
    opts: &Options,
    project: Option<&str>,
) -> Result<(String, Option<u64>, Option<String>), PlanError> {
    let source = i.key.as_deref().and_then(split_key);
    if opts.keep_numbers {
        if let (Some(key), None) = (&i.key, &source) {
            return Err(PlanError::NoPrefix(format!(
                "{key} is not a key whose number can be kept (PREFIX-N or #N)"
            )));
        }
        return match source {
            Some((Some(prefix), n)) => Ok((prefix, Some(n), None)),
            Some((None, n)) => match project {
                Some(p) => Ok((p.to_owned(), Some(n), None)),
                None => Err(PlanError::NoPrefix(format!(
                    "{} has no prefix: with --keep-numbers, name the project its numbers go \
                     into with --project",
                    i.key.as_deref().unwrap_or_default()
                ))),
            },
            None => Err(PlanError::NoPrefix(
                "this source has no keys to keep (Taskwarrior): import it without \
                 --keep-numbers"
                    .into(),
            )),
        };
    }
    let Some(target) = project else {
        return Err(PlanError::NoPrefix(
            "choose the project to import into with --project (each task gets its next number \
             there, and its old key still finds it), or keep the source's numbers with \
             --keep-numbers"
                .into(),
        ));
    };
    let target = target.to_owned();
    Ok((target, None, i.key.clone()))
}

/// `ENG-42` → (`ENG`, 42); `#42` → (none, 42); anything else is no key to keep.
fn split_key(key: &str) -> Option<(Option<String>, u64)> {
    if let Some(n) = key.strip_prefix('#').and_then(|n| n.parse().ok()) {
        return Some((None, n));
    }
    match TaskKey::parse(key) {
        Ok(k) if k.depth() == 0 => Some((Some(k.prefix.to_string()), k.number)),
        _ => None,
    }
}

/// The member `who` (a display name, an e-mail, a login) names: the one member whose name or
/// e-mail matches it exactly (any case), else its e-mail's local part, else its first word.
fn member_for(who: &str, team: &[Member]) -> Option<String> {
    let who = who.trim().trim_start_matches('@').to_lowercase();
    let local = who.split('@').next().unwrap_or(&who).to_owned();
    let first = who.split_whitespace().next().unwrap_or(&who).to_owned();
    let squashed: String = who.chars().filter(|c| c.is_alphanumeric()).collect();
    for candidate in [&who, &local, &squashed, &first] {
        let found: Vec<&Member> = team
            .iter()
            .filter(|m| {
                m.name.to_lowercase() == *candidate
                    || m.email
                        .as_deref()
                        .is_some_and(|e| e.to_lowercase() == *candidate)
            })
            .collect();
        if let [m] = found.as_slice() {
            return Some(m.name.clone());
        }
    }
    None
}

fn projects(items: &[Planned], existing: &BTreeSet<String>) -> Vec<ProjectPlan> {
    let mut by: BTreeMap<&str, Vec<&Planned>> = BTreeMap::new();
    for it in items {
        by.entry(it.project.as_str()).or_default().push(it);
    }
    by.into_iter()
        .map(|(prefix, its)| {
            let kept: BTreeSet<u64> = its.iter().filter_map(|i| i.number).collect();
            let highest = kept.iter().next_back().copied();
            let unused = (1..=highest.unwrap_or(0))
                .filter(|n| !kept.contains(n))
                .take(UNUSED_LISTED)
                .collect();
            ProjectPlan {
                prefix: prefix.to_owned(),
                new: !existing.contains(prefix),
                tasks: its.len(),
                highest,
                unused_count: highest.unwrap_or(0) - kept.len() as u64,
                unused,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(key: &str, parent: Option<&str>, assignee: Option<&str>) -> SourceIssue {
        SourceIssue {
            key: Some(key.to_owned()),
            id: key.to_owned(),
            uuid: None,
            title: format!("task {key}"),
            description: String::new(),
            state: State::Open,
            source_status: "To Do".into(),
            priority: None,
            labels: Vec::new(),
            due: None,
            assignee: assignee.map(str::to_owned),
            parent: parent.map(str::to_owned),
            created: None,
        }
    }

    fn team() -> Vec<Member> {
        vec![
            Member {
                name: "mei".into(),
                email: Some("mei.chen@example.com".into()),
            },
            Member {
                name: "tomas".into(),
                email: None,
            },
        ]
    }

    #[test]
    fn kept_numbers_continue_after_the_highest_and_gaps_are_listed() {
        let issues = vec![
            issue("ENG-4", Some("ENG-1"), Some("Mei Chen")),
            issue("ENG-1", None, Some("mei.chen@example.com")),
            issue("ENG-2", Some("ENG-9"), Some("Priya Nair")),
            issue("ENG-7", Some("ENG-4"), Some("@Tomas")),
        ];
        let keep = Options {
            keep_numbers: true,
            project: None,
        };
        let p = plan(&issues, &keep, &team(), &["OPS".into()], &[]).unwrap();
        // Parents first (ENG-2's parent is not in the file), kept numbers highest first: ENG-2
        // and ENG-1, then ENG-4, then ENG-7.
        let order: Vec<&str> = p
            .items
            .iter()
            .map(|i| issues[i.issue].key.as_deref().unwrap())
            .collect();
        assert_eq!(order, vec!["ENG-2", "ENG-1", "ENG-4", "ENG-7"]);
        for (at, it) in p.items.iter().enumerate() {
            if let Some(parent) = it.parent {
                assert!(parent < at);
            }
        }
        assert_eq!(p.items[2].parent, Some(1));
        assert_eq!(p.items[3].parent, Some(2));
        assert_eq!(p.items[1].number, Some(1));
        assert_eq!(p.items[1].earlier_key, None);
        let assignees: Vec<Option<&str>> = p.items.iter().map(|i| i.assignee.as_deref()).collect();
        assert_eq!(
            assignees,
            vec![None, Some("mei"), Some("mei"), Some("tomas")]
        );
        assert_eq!(
            p.report.projects,
            vec![ProjectPlan {
                prefix: "ENG".into(),
                new: true,
                tasks: 4,
                highest: Some(7),
                unused_count: 3,
                unused: vec![3, 5, 6],
            }]
        );
        assert_eq!(p.report.missing_parents, vec!["ENG-2"]);
        assert_eq!(
            p.report.unmapped_assignees,
            BTreeMap::from([("Priya Nair".to_owned(), 1)])
        );
        // The prefix taken: refused in words, nothing planned.
        let e = plan(&issues, &keep, &team(), &["eng".into()], &[]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--keep-numbers needs a prefix free"),
            "{e}"
        );
        // Unless all it holds came from this file (a run cut short goes on).
        let p = plan(&issues, &keep, &team(), &["eng".into()], &["ENG".into()]).unwrap();
        assert!(!p.report.projects[0].new);
    }

    #[test]
    fn without_kept_numbers_the_source_key_is_an_earlier_key() {
        let issues = vec![issue("ENG-4", None, None), issue("#12", None, None)];
        let into = Options {
            keep_numbers: false,
            project: Some("ops".into()),
        };
        let p = plan(&issues, &into, &[], &["OPS".into()], &[]).unwrap();
        assert!(p
            .items
            .iter()
            .all(|i| i.project == "OPS" && i.number.is_none()));
        assert_eq!(p.items[1].earlier_key.as_deref(), Some("#12"));
        assert!(!p.report.projects[0].new);
        // The source's prefix a project here: its keys would name two tasks.
        let e = plan(&issues, &into, &[], &["OPS".into(), "ENG".into()], &[]).unwrap_err();
        assert!(matches!(e, PlanError::SourcePrefixHere { .. }), "{e}");
        let own = Options {
            keep_numbers: false,
            project: Some("ENG".into()),
        };
        assert!(plan(&issues, &own, &[], &[], &[]).is_err());
        let nowhere = Options::default();
        let e = plan(&issues, &nowhere, &[], &[], &[]).unwrap_err();
        assert!(e.to_string().contains("--project"), "{e}");
        // GitHub numbers kept need a prefix; a Taskwarrior export has none to keep.
        let keep = Options {
            keep_numbers: true,
            project: None,
        };
        let e = plan(&issues[1..], &keep, &[], &[], &[]).unwrap_err();
        assert!(e.to_string().contains("--project"), "{e}");
        let keep_into = Options {
            keep_numbers: true,
            project: Some("GH".into()),
        };
        let p = plan(&issues[1..], &keep_into, &[], &[], &[]).unwrap();
        assert_eq!(
            (p.items[0].project.as_str(), p.items[0].number),
            ("GH", Some(12))
        );
        let mut tw = issue("x", None, None);
        tw.key = None;
        assert!(plan(&[tw], &keep_into, &[], &[], &[]).is_err());
        // A parent cycle in the file: its tasks come on their own, before their children.
        let mut cycle = vec![
            issue("ENG-1", Some("ENG-2"), None),
            issue("ENG-2", Some("ENG-1"), None),
            issue("ENG-3", Some("ENG-2"), None),
        ];
        let p = plan(&cycle, &into, &[], &[], &[]).unwrap();
        let parents: Vec<Option<usize>> = p.items.iter().map(|i| i.parent).collect();
        assert_eq!(parents, vec![None, None, Some(1)]);
        assert_eq!(p.report.missing_parents, vec!["ENG-1", "ENG-2"]);
        // Far numbers are counted, not all listed; past the highest kept, refused.
        cycle.truncate(1);
        cycle[0].key = Some("ENG-900000".into());
        let p = plan(&cycle, &keep, &[], &[], &[]).unwrap();
        let eng = &p.report.projects[0];
        assert_eq!(
            (eng.unused_count, eng.unused.len()),
            (899_999, UNUSED_LISTED)
        );
        cycle[0].key = Some("ENG-4000000000".into());
        let e = plan(&cycle, &keep, &[], &[], &[]).unwrap_err();
        assert!(matches!(e, PlanError::TooFar { .. }), "{e}");
        let twice = vec![issue("ENG-1", None, None), issue("ENG-1", None, None)];
        assert_eq!(
            plan(&twice, &into, &[], &[], &[]).unwrap_err(),
            PlanError::Duplicate {
                key: "ENG-1".into()
            }
        );
    }
}
