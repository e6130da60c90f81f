//! Due dates and priorities through the CLI, the engine and the real server: set offline in
//! Taskwarrior's forms, kept through sync, seen by a second device, cleared by an edit, sorted
//! by; a form the parser refuses is a readable error that stores nothing.
use anyhow::Result;
use chrono::{DateTime, Datelike, Local, Utc};
use serde_json::Value;

use crate::cli::Cli;
use crate::fixture::TestServer;

fn by_description<'a>(list: &'a [Value], d: &str) -> &'a Value {
    list.iter()
        .find(|t| t["description"] == d)
        .unwrap_or_else(|| panic!("no task {d:?} in {list:?}"))
}

fn due(t: &Value) -> Option<DateTime<Utc>> {
    t["due"].as_str().map(|s| s.parse().expect("RFC 3339 due"))
}

#[test]
fn due_and_priority_sync_to_another_device_and_clear() -> Result<()> {
    let (server, account) = TestServer::start("DUE")?;
    let homes = [tempfile::tempdir()?, tempfile::tempdir()?];
    let a = Cli::new(homes[0].path());
    let b = Cli::new(homes[1].path());

    // Offline (no login yet): captured at once with both fields.
    // Captured in an order that neither sort below keeps, so the sorts are seen to act.
    a.add(
        "Call the bank",
        &["--project", "DUE", "--due", "2030-01-15T14:30"],
    )?;
    a.add(
        "Pay rent",
        &["--project", "DUE", "--due", "tomorrow", "--priority", "h"],
    )?;
    a.add("Read the paper", &["--project", "DUE", "--priority", "L"])?;
    let refused = a.output(&["add", "Soon", "--project", "DUE", "--due", "soon"])?;
    assert!(!refused.status.success());
    let err = String::from_utf8(refused.stderr)?;
    assert!(
        err.contains("'soon' is not a date") && err.contains("tomorrow"),
        "{err}"
    );
    let refused = a.output(&["add", "Odd", "--project", "DUE", "--priority", "urgent"])?;
    assert!(String::from_utf8(refused.stderr)?.contains("use H, M or L"));
    assert_eq!(a.list()?.len(), 3, "a refused capture stores nothing");

    let rent = by_description(&a.list()?, "Pay rent").clone();
    let tomorrow = Local::now().date_naive().succ_opt().unwrap();
    let local = due(&rent).unwrap().with_timezone(&Local);
    assert_eq!(
        (local.date_naive(), local.format("%H:%M").to_string()),
        (tomorrow, "00:00".into())
    );
    assert_eq!(rent["priority"], "H");

    a.login(&server.url, &account.token)?;
    a.ok(&["sync", "--timeout", "30"])?;
    b.login(&server.url, &server.token(&account, "second")?)?;
    b.ok(&["sync", "--timeout", "30"])?;
    let seen = b.list()?;
    let rent_b = by_description(&seen, "Pay rent");
    assert!(rent_b["key"]
        .as_str()
        .is_some_and(|k| k.starts_with("DUE-")));
    assert_eq!(due(rent_b), due(&rent));
    assert_eq!(rent_b["priority"], "H");
    let bank = due(by_description(&seen, "Call the bank"))
        .unwrap()
        .with_timezone(&Local);
    assert_eq!((bank.year(), bank.month(), bank.day()), (2030, 1, 15));
    assert_eq!(bank.format("%H:%M").to_string(), "14:30");

    // Sorted by due on the second device: soonest first, none last; by priority: H, L.
    let order = |sort: &str| -> Result<Vec<String>> {
        let v = b.json(&["list", "--sort", sort])?;
        Ok(v.as_array()
            .unwrap()
            .iter()
            .map(|t| t["description"].as_str().unwrap().to_owned())
            .collect())
    };
    assert_eq!(
        order("due")?,
        ["Pay rent", "Call the bank", "Read the paper"]
    );
    assert_eq!(
        order("priority")?,
        ["Pay rent", "Read the paper", "Call the bank"]
    );
    let human = b.ok(&["list", "--sort", "due"])?;
    assert!(
        human.lines().next().unwrap().contains("(H)  due "),
        "{human}"
    );

    // The second device clears the due date and changes the priority; the first sees both.
    let key = rent_b["key"].as_str().unwrap().to_owned();
    b.ok(&["edit", &key, "--due", "none", "--priority", "M"])?;
    b.ok(&["sync", "--timeout", "30"])?;
    a.ok(&["sync", "--timeout", "30"])?;
    let rent_a = by_description(&a.list()?, "Pay rent").clone();
    assert_eq!(
        (rent_a["due"].clone(), rent_a["priority"].clone()),
        (Value::Null, "M".into())
    );
    let shown = a.ok(&["show", &key])?;
    assert!(
        shown.contains("priority: M") && !shown.contains("due:"),
        "{shown}"
    );
    Ok(())
}
