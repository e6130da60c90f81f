//! The standup: per member, what they completed and created since the last working day and
//! what is open and assigned to them, each line as it is said aloud (`DEV-42  Fix the login
//! redirect`), keys first. Pure: the tasks and members come in, the report goes out.
//!
//! A completed task counts for its assignee (its creator when nobody is assigned): the server
//! does not record who completed it. It counts when it was last changed since `since` while
//! completed. The server stamps the creator when it numbers a task, so a provisional task (no
//! key yet) was created on this device: it counts as created by this device's member.
use std::collections::BTreeSet;

use callsign_core::dto::TaskStatus;
use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc, Weekday};
use serde::Serialize;
use uuid::Uuid;

use crate::model::{key_order, LocalTask};

/// One task as said aloud.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Line {
    /// The key, or `~` and the UUID's first 8 hex digits before the server numbers it.
    pub key: String,
    pub description: String,
    /// The task, so a reader of the report can open it.
    pub uuid: Uuid,
    /// Not numbered yet: `key` is then the provisional `~1a2b3c4d`, not a key to say.
    pub provisional: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberReport {
    pub name: String,
    pub completed: Vec<Line>,
    pub created: Vec<Line>,
    /// Pending and assigned to them (whenever made).
    pub open: Vec<Line>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Standup {
    pub since: DateTime<Utc>,
    pub members: Vec<MemberReport>,
}

/// The working day before `today`: Friday for a Monday (and for a weekend day).
pub fn last_working_day(today: NaiveDate) -> NaiveDate {
    let back = match today.weekday() {
        Weekday::Mon => 3,
        Weekday::Sun => 2,
        _ => 1,
    };
    today - Duration::days(back)
}

/// The standup of `members` (the team as known; anyone else a task names is added) since
/// `since`; `me` is this device's member, the creator of its provisional tasks. Members come
/// by name; each list in key order, provisional tasks last.
pub fn standup(
    tasks: &[LocalTask],
    members: &[String],
    me: Option<&str>,
    since: DateTime<Utc>,
) -> Standup {
    let creator = |t: &LocalTask| -> Option<String> {
        t.created_by
            .clone()
            .or_else(|| t.key.is_none().then(|| me.map(str::to_owned)).flatten())
    };
    let mut names: BTreeSet<String> = members.iter().cloned().collect();
    for t in tasks {
        names.extend(creator(t));
        names.extend(t.assignee.iter().cloned());
    }
    // Keys as they are said: DEV-2 before DEV-11, a subtask DEV-11.1 right after DEV-11.
    let mut order: Vec<&LocalTask> = tasks.iter().collect();
    order.sort_by_cached_key(|t| {
        let key = key_order(t);
        (key.is_none(), key, t.label())
    });
    let line = |t: &&LocalTask| Line {
        key: t.label(),
        description: t.description.clone(),
        uuid: t.uuid,
        provisional: t.key.is_none(),
    };
    let members = names
        .into_iter()
        .map(|name| {
            let of = |f: &dyn Fn(&LocalTask) -> bool| -> Vec<Line> {
                order.iter().filter(|t| f(t)).map(line).collect()
            };
            let is = |v: &Option<String>| v.as_deref() == Some(name.as_str());
            MemberReport {
                completed: of(&|t| {
                    let who = t.assignee.clone().or_else(|| creator(t));
                    t.status == TaskStatus::Completed && t.modified_at >= since && is(&who)
                }),
                created: of(&|t| {
                    t.status != TaskStatus::Deleted && t.created_at >= since && is(&creator(t))
                }),
                open: of(&|t| t.status == TaskStatus::Pending && is(&t.assignee)),
                name,
            }
        })
        .collect();
    Standup { since, members }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_last_working_day_skips_the_weekend() {
        let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        for (today, last) in [
            ("2026-11-30", "2026-11-27"), // Monday: Friday
            ("2026-11-26", "2026-11-25"), // Thursday: Wednesday
            ("2026-11-29", "2026-11-27"), // Sunday: Friday
            ("2026-11-28", "2026-11-27"), // Saturday: Friday
        ] {
            assert_eq!(last_working_day(d(today)), d(last), "{today}");
        }
    }

    fn task(
        key: &str,
        d: &str,
        status: TaskStatus,
        by: &str,
        to: Option<&str>,
        day: u32,
    ) -> LocalTask {
        let at = Utc.with_ymd_and_hms(2026, 11, day, 12, 0, 0).unwrap();
        let (project, n) = key.split_once('-').unwrap();
        LocalTask {
            key: Some(key.into()),
            project: project.into(),
            number: n.parse().ok(),
            description: d.into(),
            status,
            created_by: Some(by.into()),
            assignee: to.map(str::to_owned),
            created_at: at,
            modified_at: at,
            ..LocalTask::from_server(
                serde_json::from_value(serde_json::json!({
                    "uuid": uuid::Uuid::new_v4(), "key": null, "project": "DEV", "number": null,
                    "description": "", "notes": "", "status": "pending", "tags": [],
                    "created_at": at, "modified_at": at
                }))
                .unwrap(),
            )
        }
    }

    #[test]
    fn each_member_hears_what_they_completed_created_and_have_open() {
        use TaskStatus::*;
        let tasks = [
            task("DEV-10", "Old and open", Pending, "alice", Some("bob"), 2),
            task(
                "DEV-42",
                "Fix the login redirect",
                Completed,
                "alice",
                Some("bob"),
                25,
            ),
            task("DEV-43", "Write the notes", Pending, "alice", None, 26),
            task("DEV-9", "Done long ago", Completed, "bob", Some("bob"), 3),
            task("DEV-44", "Mine, done", Completed, "carol", None, 26),
            task("DEV-45", "Dropped", Deleted, "alice", None, 26),
            LocalTask {
                key: None,
                number: None,
                created_by: None,
                ..task("DEV-0", "Not numbered yet", Pending, "alice", None, 26)
            },
            LocalTask {
                created_by: None,
                ..task("DEV-1", "From before members", Pending, "alice", None, 26)
            },
        ];
        let since = Utc.with_ymd_and_hms(2026, 11, 25, 0, 0, 0).unwrap();
        let team = ["alice".into(), "bob".into(), "dan".into()];
        let s = standup(&tasks, &team, Some("alice"), since);
        let said = |m: &MemberReport, l: &[Line]| {
            let _ = m;
            l.iter().map(|l| l.key.clone()).collect::<Vec<_>>()
        };
        let names: Vec<&str> = s.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["alice", "bob", "carol", "dan"]);
        let (alice, bob, carol, dan) = (&s.members[0], &s.members[1], &s.members[2], &s.members[3]);
        let provisional = format!("~{}", &tasks[6].uuid.simple().to_string()[..8]);
        assert_eq!(
            said(alice, &alice.created),
            ["DEV-42", "DEV-43", provisional.as_str()],
            "numbered first, in key order"
        );
        let last = alice.created.last().unwrap();
        assert!(last.provisional && last.uuid == tasks[6].uuid, "{last:?}");
        assert!(!alice.created[0].provisional);
        let nobody = standup(&tasks, &team, None, since);
        assert_eq!(
            said(&nobody.members[0], &nobody.members[0].created),
            ["DEV-42", "DEV-43"],
            "with no member known, a provisional task has no creator"
        );
        assert!(alice.completed.is_empty() && alice.open.is_empty());
        assert_eq!(
            said(bob, &bob.completed),
            ["DEV-42"],
            "assigned to bob, done since"
        );
        assert_eq!(said(bob, &bob.open), ["DEV-10"], "open whenever made");
        assert_eq!(
            said(carol, &carol.completed),
            ["DEV-44"],
            "unassigned: its creator's"
        );
        assert!(dan.completed.is_empty() && dan.created.is_empty() && dan.open.is_empty());
        assert_eq!(bob.completed[0].description, "Fix the login redirect");
    }

    #[test]
    fn keys_come_in_the_order_they_are_said() {
        use TaskStatus::*;
        let tasks: Vec<LocalTask> = ["PFX-11", "PFX-2", "OPS-1", "PFX-11.1", "PFX-1"]
            .into_iter()
            .map(|k| task(k, k, Pending, "alice", None, 26))
            .collect();
        let since = Utc.with_ymd_and_hms(2026, 11, 25, 0, 0, 0).unwrap();
        let s = standup(&tasks, &["alice".into()], None, since);
        let keys: Vec<&str> = s.members[0]
            .created
            .iter()
            .map(|l| l.key.as_str())
            .collect();
        assert_eq!(keys, ["OPS-1", "PFX-1", "PFX-2", "PFX-11", "PFX-11.1"]);
    }
}
