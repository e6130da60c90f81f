//! The shared fixture (`cases.json`): what each filter keeps, here and in the app's tests, which
//! read the filters this parser made (`cases.parsed.json`, checked here to be current).
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use super::*;

#[derive(Deserialize)]
struct Fixture {
    now: DateTime<Utc>,
    known: Vec<String>,
    default_statuses: Vec<TaskStatus>,
    tasks: Vec<Task>,
    cases: Vec<Case>,
    errors: Vec<ErrorCase>,
}

#[derive(Deserialize)]
struct Task {
    label: String,
    uuid: Uuid,
    key: Option<String>,
    previous_keys: Vec<String>,
    project: String,
    description: String,
    notes: String,
    status: TaskStatus,
    tags: Vec<String>,
    due: Option<DateTime<Utc>>,
    priority: Option<Priority>,
    #[serde(default)]
    commits: Vec<crate::dto::CommitLink>,
    failed: bool,
}

#[derive(Deserialize)]
struct Case {
    filter: String,
    expect: Vec<String>,
}

#[derive(Deserialize)]
struct ErrorCase {
    filter: String,
    error: String,
}

const CASES: &str = include_str!("cases.json");
const PARSED: &str = "src/filter/cases.parsed.json";

fn fixture() -> Fixture {
    serde_json::from_str(CASES).expect("cases.json parses")
}

fn kept(f: &Filter, fx: &Fixture) -> Vec<String> {
    fx.tasks
        .iter()
        .filter(|t| {
            f.matches(
                &Facts {
                    uuid: t.uuid,
                    description: &t.description,
                    notes: &t.notes,
                    tags: &t.tags,
                    project: &t.project,
                    key: t.key.as_deref(),
                    previous_keys: &t.previous_keys,
                    status: t.status,
                    failed: t.failed,
                    due: t.due,
                    priority: t.priority,
                    commits: &t.commits,
                },
                &fx.default_statuses,
            )
        })
        .map(|t| t.label.clone())
        .collect()
}

#[test]
fn every_case_keeps_the_tasks_it_names() {
    let fx = fixture();
    let mut wrong = Vec::new();
    for c in &fx.cases {
        let f = Filter::parse_text(&c.filter, fx.now, &fx.known).expect(&c.filter);
        let got = kept(&f, &fx);
        if got != c.expect {
            wrong.push(format!(
                "{:?}: kept {got:?}, expected {:?}",
                c.filter, c.expect
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_error_case_is_refused_in_words() {
    let fx = fixture();
    for c in &fx.errors {
        let e = Filter::parse_text(&c.filter, fx.now, &fx.known)
            .expect_err(&c.filter)
            .to_string();
        assert!(
            e.contains(&c.error),
            "{:?}: {e:?} lacks {:?}",
            c.filter,
            c.error
        );
    }
}

/// The app applies the parsed filters of `cases.parsed.json` to the same tasks; that file must
/// be what this parser makes of the cases now. `CALLSIGN_UPDATE_FIXTURES=1` rewrites it.
#[test]
fn the_apps_copy_of_the_parsed_filters_is_current() {
    let fx = fixture();
    let parsed: Vec<Value> = fx
        .cases
        .iter()
        .map(|c| {
            let f = Filter::parse_text(&c.filter, fx.now, &fx.known).expect(&c.filter);
            serde_json::json!({ "filter": c.filter, "parsed": f })
        })
        .collect();
    let text = serde_json::to_string_pretty(&parsed).expect("serialises") + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(PARSED);
    if std::env::var_os("CALLSIGN_UPDATE_FIXTURES").is_some() {
        std::fs::write(&path, &text).expect("writes the parsed cases");
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == text,
        "{} is out of date: run the test with CALLSIGN_UPDATE_FIXTURES=1",
        path.display()
    );
}

#[test]
fn a_key_shaped_word_is_a_key_only_for_a_known_prefix() {
    let now = Utc::now();
    let known = vec!["DEV".to_owned()];
    let f = Filter::parse_text("covid-19 DEV-3", now, &known).unwrap();
    assert_eq!(f.words, ["covid-19"]);
    assert_eq!(f.keys.len(), 1);
    let any = Filter::parse_text("covid-19", now, &[]).unwrap();
    assert!(
        any.words.is_empty(),
        "with no known prefixes any prefix counts"
    );
}

#[test]
fn due_on_a_day_is_that_local_day() {
    let tz = chrono_tz::America::New_York;
    let now = tz.with_ymd_and_hms(2026, 11, 26, 22, 0, 0).unwrap();
    let f = Filter::parse_text("due:tomorrow", now, &[]).unwrap();
    // 2026-11-27 00:00 in New York is 05:00 UTC.
    assert_eq!(
        f.due.from.unwrap().to_rfc3339(),
        "2026-11-27T05:00:00+00:00"
    );
    assert_eq!(
        f.due.before.unwrap().to_rfc3339(),
        "2026-11-28T05:00:00+00:00"
    );
}
