//! A Jira CSV export for the `import` section, made up but shaped like a real one
//! (crates/callsign-import/fixtures/jira.csv and jira.md): newest first, keys `ENG-n` with the
//! numbers of deleted issues missing, about 10 % sub-tasks under an earlier story, task or bug
//! and some stories under an earlier epic (`Parent` is the parent's id, `Parent key` its key),
//! descriptions of a few hundred bytes of wiki markup, up to three `Labels` columns, assignees
//! (some unassigned), resolutions, due dates.
//!
//! Deterministic: the same `n` and seed give the same bytes, so every run imports the same file.
use std::fmt::Write as _;

use chrono::{Duration, NaiveDate, NaiveDateTime};

/// The project prefix of the export's keys.
pub const PREFIX: &str = "ENG";

/// People the export assigns issues to; [`TEAM`] are the ones who are members of the account.
const PEOPLE: [&str; 20] = [
    "Priya Nair",
    "Mei Chen",
    "Tomás Ortega",
    "Jonas Weber",
    "Aisha Bello",
    "Lars Eriksson",
    "Sofia Rossi",
    "Daniel Kim",
    "Fatima Zahra",
    "Noah Fischer",
    "Olga Petrova",
    "Ravi Shankar",
    "Emma Dubois",
    "Kwame Mensah",
    "Lucía Gómez",
    "Hiro Tanaka",
    "Grace O'Neil",
    "Marek Nowak",
    "Ines Duarte",
    "Sam Carter",
];

/// Member names of the account: each matches one person above by first name, so their issues
/// are assigned; the others' are left unassigned and listed, as after a real team change.
pub const TEAM: [&str; 8] = [
    "priya", "mei", "jonas", "aisha", "lars", "sofia", "daniel", "noah",
];

const LABELS: [&str; 24] = [
    "backend",
    "frontend",
    "ios",
    "android",
    "payments",
    "tech-debt",
    "customer-reported",
    "security",
    "performance",
    "ux",
    "api",
    "infra",
    "flaky-test",
    "regression",
    "docs",
    "onboarding",
    "billing",
    "search",
    "i18n",
    "accessibility",
    "q3-roadmap",
    "needs-design",
    "blocked-external",
    "release-2.4",
];

const VERBS: [&str; 12] = [
    "Fix",
    "Add",
    "Investigate",
    "Migrate",
    "Remove",
    "Improve",
    "Document",
    "Refactor",
    "Support",
    "Speed up",
    "Validate",
    "Log",
];

const THINGS: [&str; 20] = [
    "checkout flow",
    "login rate limiter",
    "CSV export",
    "push notifications",
    "saved cards list",
    "search indexer",
    "invoice PDF",
    "password reset e-mail",
    "admin audit log",
    "webhook retries",
    "order totals",
    "image uploads",
    "feature flags",
    "session cookies",
    "sync of offline edits",
    "the \"Pay now\" button",
    "currency rounding",
    "onboarding checklist",
    "API pagination",
    "dark mode",
];

const WHERE: [&str; 10] = [
    "",
    " on Safari",
    " for EU customers",
    " after the 3DS challenge",
    " behind a feature flag",
    " in the admin panel",
    " (v2)",
    " on Android 14",
    ", part 2",
    " when offline",
];

/// One issue of the export.
#[derive(Debug, Clone)]
pub struct Issue {
    pub number: u64,
    pub kind: &'static str,
    pub title: String,
    /// Jira wiki markup, as the export has it.
    pub description: String,
    pub labels: Vec<&'static str>,
    /// The parent's place in [`Export::issues`].
    pub parent: Option<usize>,
    status: &'static str,
    resolution: &'static str,
    category: &'static str,
    priority: &'static str,
    assignee: Option<&'static str>,
    reporter: &'static str,
    created: NaiveDateTime,
    due: Option<NaiveDate>,
}

impl Issue {
    pub fn key(&self) -> String {
        format!("{PREFIX}-{}", self.number)
    }

    fn id(&self) -> u64 {
        10_000 + self.number
    }
}

/// The export: its issues oldest first, and the file as Jira writes it (newest first).
pub struct Export {
    pub issues: Vec<Issue>,
    pub csv: String,
}

/// SplitMix64: a small generator whose sequence no crate update changes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

/// `n` issues.
pub fn export(n: usize) -> Export {
    let mut r = Rng(0x4a49_5241_0042);
    let start = NaiveDate::from_ymd_opt(2021, 6, 1)
        .and_then(|d| d.and_hms_opt(9, 0, 0))
        .expect("a date");
    // About three years of issues, whatever `n`.
    let step = (3 * 365 * 24 * 60 / n.max(1)) as i64;
    let mut issues: Vec<Issue> = Vec::with_capacity(n);
    let (mut number, mut created) = (0u64, start);
    for at in 0..n {
        // Deleted issues leave their numbers unused: after about 6 % of the issues, 1-3.
        number += 1 + if r.chance(0.06) {
            1 + r.below(3) as u64
        } else {
            0
        };
        created += Duration::minutes(1 + r.below(2 * step.max(1) as usize) as i64);
        let roll = r.below(100);
        let epics: Vec<usize> = (at.saturating_sub(800)..at)
            .filter(|&i| issues[i].kind == "Epic")
            .collect();
        let parents: Vec<usize> = (at.saturating_sub(200)..at)
            .filter(|&i| matches!(issues[i].kind, "Story" | "Task" | "Bug"))
            .collect();
        let (kind, parent) = match roll {
            0..=1 => ("Epic", None),
            2..=11 if !parents.is_empty() => ("Sub-task", Some(r.pick(&parents))),
            12..=41 => {
                let under = (!epics.is_empty() && r.chance(0.5)).then(|| r.pick(&epics));
                ("Story", under)
            }
            42..=64 => ("Bug", None),
            _ => ("Task", None),
        };
        // Older issues are mostly finished.
        let done = r.chance(0.9 - 0.7 * at as f64 / n.max(1) as f64);
        let (status, resolution, category) = if done {
            match r.below(20) {
                0 => ("Closed", "Won't Do", "Done"),
                1 => ("Closed", "Duplicate", "Done"),
                _ => ("Done", "Done", "Done"),
            }
        } else {
            r.pick(&[
                ("To Do", "", "To Do"),
                ("To Do", "", "To Do"),
                ("In Progress", "", "In Progress"),
                ("In Review", "", "In Progress"),
            ])
        };
        let labels = {
            let mut l: Vec<&str> = (0..r.below(4)).map(|_| r.pick(&LABELS)).collect();
            l.dedup();
            l
        };
        let title = match parent.filter(|_| kind == "Sub-task") {
            Some(p) => format!(
                "{} for {}",
                r.pick(&["Tests", "Rollout", "Review"]),
                issues[p].title
            ),
            None => format!("{} {}{}", r.pick(&VERBS), r.pick(&THINGS), r.pick(&WHERE)),
        };
        issues.push(Issue {
            number,
            kind,
            description: description(&mut r, kind),
            labels,
            parent,
            status,
            resolution,
            category,
            priority: r.pick(&["Highest", "High", "Medium", "Medium", "Low", "Lowest"]),
            assignee: r.chance(0.8).then(|| r.pick(&PEOPLE)),
            reporter: r.pick(&PEOPLE),
            created,
            due: (!done && r.chance(0.15)).then(|| (created + Duration::days(14)).date()),
            title,
        });
    }
    let csv = csv(&issues);
    Export { issues, csv }
}

/// A description of a few hundred bytes of wiki markup (one in ten is empty, as in real ones).
fn description(r: &mut Rng, kind: &str) -> String {
    if r.chance(0.1) {
        return String::new();
    }
    let mut d = String::new();
    if kind == "Bug" {
        d.push_str("*Steps to reproduce:*\n# Sign in as a customer with a saved card\n");
        d.push_str("# Open the cart and apply coupon {{SPRING15}}\n# Press *Pay now*\n\n");
        d.push_str("*Expected:* the order is placed.\n*Actual:* a spinner, then _nothing_.\n");
        if r.chance(0.5) {
            d.push_str("{noformat}\nTypeError: cannot read properties of undefined\n    at pay (checkout.js:212)\n{noformat}\n");
        }
    } else {
        d.push_str("h2. Goal\nLet shoppers finish checkout without leaving the page; see the ");
        d.push_str("[design doc|https://wiki.example.com/display/ENG/Checkout+v2].\n\n");
        d.push_str("h2. Acceptance criteria\n* Amounts are sent in minor units (cents)\n");
        d.push_str("* A declined card shows the processor's message, not a stack trace\n");
        if r.chance(0.4) {
            d.push_str("{code:javascript}\nconst intent = await stripe.paymentIntents.create({ amount, currency: \"eur\" });\n{code}\n");
        }
    }
    if r.chance(0.3) {
        d.push_str("{quote}Do *not* log raw card numbers.{quote}\n");
    }
    if r.chance(0.2) {
        d.push_str("!screenshot.png|width=640,height=360!\n");
    }
    let _ = write!(d, "Reported from build 2.{}.{}.", r.below(9), r.below(30));
    d
}

const HEADER: &str = "Summary,Issue key,Issue id,Issue Type,Status,Project key,Project name,\
Priority,Resolution,Assignee,Reporter,Created,Updated,Resolved,Due date,Labels,Labels,Labels,\
Description,Parent,Parent key,Parent summary,Status Category";

/// The file as Jira writes it: newest first, `22/Sep/25 9:26 AM` dates.
fn csv(issues: &[Issue]) -> String {
    let mut out = String::with_capacity(issues.len() * 700);
    out.push_str(HEADER);
    out.push('\n');
    let date = |t: NaiveDateTime| t.format("%d/%b/%y %-I:%M %p").to_string();
    for i in issues.iter().rev() {
        let updated = i.created + Duration::hours(30);
        let parent = i.parent.map(|p| &issues[p]);
        let label = |n: usize| i.labels.get(n).copied().unwrap_or_default();
        let fields: [String; 23] = [
            i.title.clone(),
            i.key(),
            i.id().to_string(),
            i.kind.into(),
            i.status.into(),
            PREFIX.into(),
            "Payments Engineering".into(),
            i.priority.into(),
            i.resolution.into(),
            i.assignee.unwrap_or_default().into(),
            i.reporter.into(),
            date(i.created),
            date(updated),
            if i.resolution.is_empty() {
                String::new()
            } else {
                date(updated)
            },
            i.due
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(date)
                .unwrap_or_default(),
            label(0).into(),
            label(1).into(),
            label(2).into(),
            i.description.clone(),
            parent.map(|p| p.id().to_string()).unwrap_or_default(),
            parent.map(Issue::key).unwrap_or_default(),
            parent.map(|p| p.title.clone()).unwrap_or_default(),
            i.category.into(),
        ];
        for (n, f) in fields.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            if f.contains([',', '"', '\n', '\r']) {
                out.push('"');
                out.push_str(&f.replace('"', "\"\""));
                out.push('"');
            } else {
                out.push_str(f);
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use callsign_import::{build, plan, Format};

    /// The file reads whole with the importer's own parser and plans with kept numbers: every
    /// key, its parent, the gaps left unused, members matched by first name.
    #[test]
    fn the_export_reads_and_plans_as_a_real_one() {
        let e = export(2_000);
        assert_eq!(export(2_000).csv, e.csv, "deterministic");
        let issues = callsign_import::parse(Format::Jira, e.csv.as_bytes()).unwrap();
        assert_eq!(issues.len(), 2_000);
        let subtasks = e.issues.iter().filter(|i| i.kind == "Sub-task").count();
        assert!((150..=250).contains(&subtasks), "{subtasks} sub-tasks");
        let parented = issues.iter().filter(|i| i.parent.is_some()).count();
        assert_eq!(
            parented,
            e.issues.iter().filter(|i| i.parent.is_some()).count()
        );
        let bytes: usize = e.issues.iter().map(|i| i.description.len()).sum();
        assert!(
            (250..=700).contains(&(bytes / 2_000)),
            "{} bytes",
            bytes / 2_000
        );
        assert!(issues.iter().any(|i| i.labels.len() == 3));
        let team: Vec<plan::Member> = TEAM
            .iter()
            .map(|n| plan::Member {
                name: (*n).into(),
                email: None,
            })
            .collect();
        let keep = plan::Options {
            keep_numbers: true,
            project: None,
        };
        let p = plan::plan(&issues, &keep, &team, &["BEN".into()], &[]).unwrap();
        let eng = &p.report.projects[0];
        let highest = e.issues.last().unwrap().number;
        assert_eq!((eng.prefix.as_str(), eng.highest), (PREFIX, Some(highest)));
        assert_eq!(eng.unused_count, highest - 2_000);
        assert!(eng.unused_count > 0);
        assert!(p.report.missing_parents.is_empty());
        assert!(p.items.iter().any(|i| i.assignee.is_some()));
        assert!(!p.report.unmapped_assignees.is_empty());
        let made = build::creates(Format::Jira, &issues, &p, &|_| None);
        for m in &made {
            callsign_core::validate::new_task(&m.body).unwrap();
        }
        assert!(made
            .iter()
            .any(|m| m.body.notes.contains("**Steps to reproduce:**")
                || m.body.notes.contains("## Goal")));
    }
}
