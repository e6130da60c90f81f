//! Field rules shared by the server (which enforces them) and the clients (which check early so a
//! user hears about a bad field at once, not after a sync).
use chrono::{DateTime, Utc};

use crate::dto::{CommitLink, NewTask, Origin, Task, TaskPatch};
use crate::{Prefix, TaskKey, MAX_NUMBER};

pub const MAX_DESCRIPTION: usize = 1_000;
pub const MAX_NOTES: usize = 64 * 1024;
pub const MAX_TAGS: usize = 64;
pub const MAX_TAG: usize = 64;
pub const MAX_IDEMPOTENCY_KEY: usize = 255;
/// The most commit links, and the most unlinked hashes, one create or update carries.
pub const MAX_COMMIT_LINKS: usize = 100;
pub const MAX_COMMIT_SUBJECT: usize = 300;
pub const MAX_COMMIT_AUTHOR: usize = 200;
pub const MAX_COMMIT_COMMENT: usize = 2_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FieldError(pub String);

/// No text field holds U+0000: PostgreSQL's `text` and `jsonb` cannot store it, and no
/// Taskwarrior value contains it, so it is refused on every backend alike.
fn no_nul(field: &str, s: &str) -> Result<(), FieldError> {
    if s.contains('\0') {
        return Err(FieldError(format!(
            "{field} must not contain the NUL character (U+0000)"
        )));
    }
    Ok(())
}

pub fn description(d: &str) -> Result<(), FieldError> {
    no_nul("description", d)?;
    if d.trim().is_empty() {
        return Err(FieldError("description must not be empty".into()));
    }
    if d.chars().count() > MAX_DESCRIPTION {
        return Err(FieldError(format!(
            "description is longer than {MAX_DESCRIPTION} characters"
        )));
    }
    Ok(())
}

pub fn notes(n: &str) -> Result<(), FieldError> {
    no_nul("notes", n)?;
    if n.len() > MAX_NOTES {
        return Err(FieldError(format!(
            "notes are longer than {MAX_NOTES} bytes"
        )));
    }
    Ok(())
}

pub fn tags(tags: &[String]) -> Result<(), FieldError> {
    if tags.len() > MAX_TAGS {
        return Err(FieldError(format!("more than {MAX_TAGS} tags")));
    }
    for t in tags {
        let ok = !t.is_empty()
            && t.chars().count() <= MAX_TAG
            && t.chars()
                .all(|c| !c.is_whitespace() && !c.is_control() && c != ':')
            && t.starts_with(|c: char| c.is_alphabetic())
            && !t.chars().all(|c| c.is_ascii_uppercase());
        if !ok {
            return Err(FieldError(format!(
                "tag {t:?} is invalid: a tag starts with a letter, has no spaces or colons, is not all capitals, and has at most {MAX_TAG} characters"
            )));
        }
    }
    Ok(())
}

/// A due date between the years 1970 and 9999 (Taskwarrior stores it as Unix seconds).
pub fn due(d: Option<DateTime<Utc>>) -> Result<(), FieldError> {
    match d {
        Some(t) if !crate::when::in_range(t) => Err(FieldError(format!(
            "due {} is out of range: a due date lies between the years 1970 and 9999",
            t.to_rfc3339()
        ))),
        _ => Ok(()),
    }
}

/// A commit's full hash: 40 (SHA-1) or 64 (SHA-256) lower-case hex digits.
pub fn commit_hash(h: &str) -> Result<(), FieldError> {
    let ok =
        matches!(h.len(), 40 | 64) && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if ok {
        Ok(())
    } else {
        Err(FieldError(format!(
            "commit hash {h:?} is not a full hash: 40 or 64 lower-case hex digits"
        )))
    }
}

/// One line of text of 1 to `max` characters with no control characters.
fn commit_line(hash: &str, field: &str, s: &str, max: usize) -> Result<(), FieldError> {
    if s.is_empty() || s.chars().count() > max || s.chars().any(char::is_control) {
        return Err(FieldError(format!(
            "commit {hash}: {field} must be 1 to {max} characters with no control characters"
        )));
    }
    Ok(())
}

/// One commit link: a full hash, a subject of 1-300 and an author of 1-200 characters (one
/// line each), and a comment of at most 2000 characters (newlines allowed, no NUL).
pub fn commit_link(c: &CommitLink) -> Result<(), FieldError> {
    commit_hash(&c.hash)?;
    commit_line(&c.hash, "subject", &c.subject, MAX_COMMIT_SUBJECT)?;
    commit_line(&c.hash, "author", &c.author, MAX_COMMIT_AUTHOR)?;
    if let Some(comment) = &c.comment {
        no_nul(&format!("commit {}: comment", c.hash), comment)?;
        if comment.chars().count() > MAX_COMMIT_COMMENT {
            return Err(FieldError(format!(
                "commit {}: comment is longer than {MAX_COMMIT_COMMENT} characters",
                c.hash
            )));
        }
    }
    Ok(())
}

/// The commit links and unlinked hashes of one request: at most [`MAX_COMMIT_LINKS`] of each,
/// each valid, no hash twice, and none both linked and unlinked.
pub fn commits(links: &[CommitLink], unlinks: &[String]) -> Result<(), FieldError> {
    if links.len() > MAX_COMMIT_LINKS {
        return Err(FieldError(format!(
            "more than {MAX_COMMIT_LINKS} commit links"
        )));
    }
    if unlinks.len() > MAX_COMMIT_LINKS {
        return Err(FieldError(format!(
            "more than {MAX_COMMIT_LINKS} commits to unlink"
        )));
    }
    for (i, c) in links.iter().enumerate() {
        commit_link(c)?;
        if links[..i].iter().any(|o| o.hash == c.hash) {
            return Err(FieldError(format!("commit {} is linked twice", c.hash)));
        }
        if unlinks.contains(&c.hash) {
            return Err(FieldError(format!(
                "commit {} is both linked and unlinked",
                c.hash
            )));
        }
    }
    for h in unlinks {
        commit_hash(h)?;
    }
    Ok(())
}

pub fn new_task(t: &NewTask) -> Result<(), FieldError> {
    description(&t.description)?;
    notes(&t.notes)?;
    tags(&t.tags)?;
    commits(&t.commits, &[])?;
    member("assignee", t.assignee.as_deref())?;
    if let Some(o) = &t.origin {
        origin(o)?;
    }
    if t.keep_number {
        kept_key(t)?;
    }
    due(t.due)
}

/// The highest number an import keeps: the server records every number a kept one passes
/// over, so a far one would cost a row for each.
pub const MAX_KEPT_NUMBER: u64 = 1_000_000;

/// The longest origin key taken.
pub const MAX_ORIGIN_KEY: usize = 64;

/// An imported task's origin: a known tracker, and a key of printable characters without
/// spaces (`ENG-42`, `#12`).
pub fn origin(o: &Origin) -> Result<(), FieldError> {
    if !Origin::TRACKERS.contains(&o.tracker.as_str()) {
        return Err(FieldError(format!(
            "origin tracker {:?} is none of {}",
            o.tracker,
            Origin::TRACKERS.join(", ")
        )));
    }
    if let Some(k) = &o.key {
        if k.is_empty()
            || k.chars().count() > MAX_ORIGIN_KEY
            || k.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(FieldError(format!(
                "origin key {k:?} must be 1 to {MAX_ORIGIN_KEY} characters with no spaces"
            )));
        }
    }
    Ok(())
}

/// The key a create with `keep_number` takes: its origin key, a key of the create's own project
/// with one number (`ENG-42`, not `ENG-42.1`), or GitHub's `#12` as that number in the
/// create's project.
pub fn kept_key(t: &NewTask) -> Result<TaskKey, FieldError> {
    let Some(text) = t.origin.as_ref().and_then(|o| o.key.as_deref()) else {
        return Err(FieldError("keep_number needs an origin with a key".into()));
    };
    // GitHub's `#12` keeps its number in the create's project.
    let hash = text.strip_prefix('#').and_then(|n| n.parse::<u64>().ok());
    let key = match (hash, Prefix::parse(t.project.trim())) {
        (Some(n), Ok(p)) if n >= 1 => TaskKey::new(p, n),
        _ => TaskKey::parse(text)
            .map_err(|e| FieldError(format!("keep_number: origin key {text:?}: {e}")))?,
    };
    if key.number > MAX_KEPT_NUMBER {
        return Err(FieldError(format!(
            "keep_number: {key} is past the highest number an import keeps ({MAX_KEPT_NUMBER})"
        )));
    }
    if !key.parents.is_empty() || !key.prefix.as_str().eq_ignore_ascii_case(t.project.trim()) {
        return Err(FieldError(format!(
            "keep_number: origin key {key} is not PROJECT-NUMBER in project {}",
            t.project.trim()
        )));
    }
    Ok(key)
}

/// A member's name where one is given (`assignee`, `created_by`).
fn member(field: &str, name: Option<&str>) -> Result<(), FieldError> {
    match name.map(crate::MemberName::parse) {
        Some(Err(e)) => Err(FieldError(format!("{field}: {e}"))),
        _ => Ok(()),
    }
}

pub fn patch(p: &TaskPatch) -> Result<(), FieldError> {
    if p.is_empty() {
        return Err(FieldError("the update changes nothing".into()));
    }
    if let Some(d) = &p.description {
        description(d)?;
    }
    if let Some(n) = &p.notes {
        notes(n)?;
    }
    if let Some(t) = &p.tags {
        tags(t)?;
    }
    if let Some(d) = p.due {
        due(d)?;
    }
    if let Some(a) = &p.assignee {
        member("assignee", a.as_deref())?;
    }
    commits(&p.commits, &p.unlink_commits)?;
    if let Some(project) = &p.project {
        let prefix =
            Prefix::parse(project).map_err(|e| FieldError(format!("project {project:?}: {e}")))?;
        if prefix.is_local() {
            return Err(FieldError(format!(
                "project {project:?} is a device's local inbox, not a server project"
            )));
        }
    }
    Ok(())
}

/// A task as a server reports it, checked by a client before it stores it: the field rules the
/// server enforces on what it takes in, a well-formed project prefix (never the local inbox's),
/// and a key that is exactly `PROJECT-NUMBER` with the number in `1..=MAX_NUMBER`. A server
/// that breaks these is broken or hostile; the client skips such a task instead of storing it.
pub fn task(t: &Task) -> Result<(), FieldError> {
    member("created_by", t.created_by.as_deref())?;
    if let Some(o) = &t.origin {
        origin(o)?;
    }
    member("assignee", t.assignee.as_deref())?;
    if t.conflicts.len() > crate::merge::MAX_CONFLICTS {
        return Err(FieldError(format!(
            "{} conflicts on one task (at most {} are kept)",
            t.conflicts.len(),
            crate::merge::MAX_CONFLICTS
        )));
    }
    let prefix = Prefix::parse(&t.project)
        .map_err(|e| FieldError(format!("project {:?}: {e}", t.project)))?;
    if prefix.as_str() != t.project || prefix.is_local() {
        return Err(FieldError(format!(
            "project {:?} is not a server project's prefix",
            t.project
        )));
    }
    match (&t.key, t.number) {
        (None, None) => {}
        (Some(key), Some(n)) => {
            if n == 0 || n > MAX_NUMBER {
                return Err(FieldError(format!("number {n} is out of range")));
            }
            let parsed = TaskKey::parse(key).ok();
            let well_formed = parsed
                .as_ref()
                .is_some_and(|k| k.to_string() == *key && k.prefix == prefix && k.number == n);
            if !well_formed {
                let want = TaskKey::new(prefix, n);
                return Err(FieldError(format!(
                    "key {key:?} does not match project and number ({want}, or a subtask's \
                     {want}'s parent path)"
                )));
            }
            // A subtask's key has its parent's path, a task's has none; but an imported
            // subtask keeps the key its tracker gave it (`ENG-8` under `ENG-2`).
            let is_subtask = parsed.is_some_and(|k| k.depth() > 0);
            let kept = t
                .origin
                .as_ref()
                .and_then(|o| o.key.as_deref())
                .is_some_and(|o| Origin::normal_key(o) == *key);
            if is_subtask != t.parent.is_some() && (!kept || is_subtask) {
                return Err(FieldError(format!(
                    "key {key:?} and parent {:?} disagree: a subtask, and only a subtask, has a \
                     parent and a dotted key",
                    t.parent
                )));
            }
        }
        _ => {
            return Err(FieldError(
                "key and number must both be set or both be null".into(),
            ))
        }
    }
    for old in &t.previous_keys {
        let ok = TaskKey::parse(old).is_ok_and(|k| k.to_string() == *old);
        if !ok || t.key.as_ref() == Some(old) {
            return Err(FieldError(format!(
                "previous key {old:?} is not a key, or is the task's current key"
            )));
        }
    }
    // No range check on `due`: the range is the API's rule for what it takes in, but a task
    // store may hold any date Taskwarrior wrote (`due:1965-01-01`), and a client that
    // refused it would never see that task.
    description(&t.description)?;
    notes(&t.notes)?;
    // Each link as a request's, but any number of them: a task gathers links over time.
    for c in &t.commits {
        commit_link(c)?;
    }
    tags(&t.tags)
}

/// An idempotency key: 1-255 printable ASCII characters.
pub fn idempotency_key(k: &str) -> Result<(), FieldError> {
    let ok =
        !k.is_empty() && k.len() <= MAX_IDEMPOTENCY_KEY && k.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(FieldError(format!(
            "an idempotency key is 1-{MAX_IDEMPOTENCY_KEY} printable ASCII characters"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(&["work"], true)]
    #[case(&["a b"], false)]
    #[case(&[""], false)]
    #[case(&["9lives"], false)]
    #[case(&["URGENT"], false)]
    #[case(&["a:b"], false)]
    fn tag_rules(#[case] t: &[&str], #[case] ok: bool) {
        let t: Vec<String> = t.iter().map(|s| s.to_string()).collect();
        assert_eq!(tags(&t).is_ok(), ok);
    }

    #[rstest]
    #[case("buy milk", true)]
    #[case("   ", false)]
    #[case("nul \0 inside", false)]
    #[case("\0", false)]
    fn description_rules(#[case] d: &str, #[case] ok: bool) {
        assert_eq!(description(d).is_ok(), ok);
    }

    #[test]
    fn notes_take_newlines_but_not_nul() {
        assert!(notes("line one\nline two").is_ok());
        assert_eq!(
            notes("a\0b").unwrap_err().0,
            "notes must not contain the NUL character (U+0000)"
        );
    }

    #[rstest]
    #[case("abc-123", true)]
    #[case("", false)]
    #[case("has space", false)]
    #[case("é", false)]
    fn idempotency_keys(#[case] k: &str, #[case] ok: bool) {
        assert_eq!(idempotency_key(k).is_ok(), ok);
    }

    #[test]
    fn a_due_date_outside_1970_to_9999_is_refused_in_requests_only() {
        let at = |y| {
            chrono::NaiveDate::from_ymd_opt(y, 6, 1)
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap()
                .and_utc()
        };
        assert!(due(Some(at(1970))).is_ok() && due(Some(at(9999))).is_ok() && due(None).is_ok());
        assert!(due(Some(at(1969))).unwrap_err().0.contains("1970"));
        let mut t = server_task(None, None);
        t.due = Some(at(1965));
        assert!(
            task(&t).is_ok(),
            "a server's task is taken with any due date"
        );
        let p = TaskPatch {
            due: Some(Some(at(1900))),
            ..Default::default()
        };
        assert!(patch(&p).is_err());
    }

    fn server_task(key: Option<&str>, number: Option<u64>) -> Task {
        Task {
            uuid: uuid::Uuid::nil(),
            key: key.map(str::to_owned),
            project: "SYN".into(),
            number,
            description: "Buy milk".into(),
            notes: String::new(),
            status: crate::dto::TaskStatus::Pending,
            tags: vec!["home".into()],
            due: None,
            priority: None,
            parent: None,
            previous_keys: vec![],
            conflicts: vec![],
            created_by: None,
            assignee: None,
            created_at: chrono::DateTime::default(),
            modified_at: chrono::DateTime::default(),
            origin: None,
            commits: vec![],
        }
    }

    fn link() -> CommitLink {
        CommitLink {
            hash: "0123456789abcdef0123456789abcdef01234567".into(),
            subject: "Fix the sync loop".into(),
            author: "Ann Lee <ann@example.com>".into(),
            at: chrono::DateTime::default(),
            action: crate::dto::CommitAction::Closes,
            comment: Some("took a while\nbut done".into()),
        }
    }

    #[rstest]
    #[case::sha1("0123456789abcdef0123456789abcdef01234567", true)]
    #[case::sha256(&"ab".repeat(32), true)]
    #[case::short("0123456", false)]
    #[case::upper_case("0123456789ABCDEF0123456789ABCDEF01234567", false)]
    #[case::not_hex(&"g".repeat(40), false)]
    #[case::forty_one(&"a".repeat(41), false)]
    #[case::empty("", false)]
    fn commit_hashes(#[case] h: &str, #[case] ok: bool) {
        assert_eq!(commit_hash(h).is_ok(), ok);
    }

    #[rstest]
    #[case::good(|_: &mut CommitLink| {}, None)]
    #[case::no_comment(|c: &mut CommitLink| c.comment = None, None)]
    #[case::bad_hash(|c: &mut CommitLink| c.hash = "abc".into(), Some("not a full hash"))]
    #[case::empty_subject(|c: &mut CommitLink| c.subject = String::new(), Some("subject must be 1 to 300"))]
    #[case::long_subject(|c: &mut CommitLink| c.subject = "s".repeat(301), Some("subject must be 1 to 300"))]
    #[case::longest_subject(|c: &mut CommitLink| c.subject = "é".repeat(300), None)]
    #[case::subject_with_newline(|c: &mut CommitLink| c.subject = "a\nb".into(), Some("no control characters"))]
    #[case::empty_author(|c: &mut CommitLink| c.author = String::new(), Some("author must be 1 to 200"))]
    #[case::long_author(|c: &mut CommitLink| c.author = "a".repeat(201), Some("author must be 1 to 200"))]
    #[case::author_with_tab(|c: &mut CommitLink| c.author = "a\tb".into(), Some("author must be"))]
    #[case::longest_comment(|c: &mut CommitLink| c.comment = Some("c".repeat(2000)), None)]
    #[case::long_comment(|c: &mut CommitLink| c.comment = Some("c".repeat(2001)), Some("comment is longer than 2000"))]
    #[case::comment_with_nul(|c: &mut CommitLink| c.comment = Some("a\0b".into()), Some("NUL"))]
    fn commit_link_rules(#[case] change: fn(&mut CommitLink), #[case] err: Option<&str>) {
        let mut c = link();
        change(&mut c);
        match (commit_link(&c), err) {
            (Ok(()), None) => {}
            (Err(e), Some(want)) => assert!(e.0.contains(want), "{e}"),
            (got, want) => panic!("{got:?}, want {want:?}"),
        }
    }

    #[rstest]
    #[case::one_link(1, vec![], None)]
    #[case::most_links(MAX_COMMIT_LINKS, vec![], None)]
    #[case::too_many_links(MAX_COMMIT_LINKS + 1, vec![], Some("more than 100 commit links"))]
    #[case::most_unlinks(0, vec!["a"; MAX_COMMIT_LINKS], None)]
    #[case::too_many_unlinks(0, vec!["a"; MAX_COMMIT_LINKS + 1], Some("more than 100 commits to unlink"))]
    #[case::bad_unlink(0, vec!["A"], Some("not a full hash"))]
    #[case::linked_and_unlinked(1, vec!["0"], Some("both linked and unlinked"))]
    fn commit_counts(#[case] n: usize, #[case] unlinks: Vec<&str>, #[case] err: Option<&str>) {
        // Link i has the hash of i in 40 hex digits; unlink "a" is 40 a's.
        let links: Vec<CommitLink> = (0..n)
            .map(|i| CommitLink {
                hash: format!("{i:040x}"),
                ..link()
            })
            .collect();
        let unlinks: Vec<String> = unlinks
            .iter()
            .map(|h| match *h {
                "0" => format!("{:040x}", 0),
                h => h.repeat(40),
            })
            .collect();
        let p = TaskPatch {
            commits: links.clone(),
            unlink_commits: unlinks.clone(),
            ..Default::default()
        };
        match (patch(&p), err) {
            (Ok(()), None) => {}
            (Err(e), Some(want)) => assert!(e.0.contains(want), "{e}"),
            (got, want) => panic!("{got:?}, want {want:?}"),
        }
        if unlinks.is_empty() {
            let mut t = NewTask::new("SYN", "x");
            t.commits = links;
            assert_eq!(new_task(&t).is_ok(), err.is_none());
        }
    }

    #[test]
    fn a_commit_is_linked_once_per_request() {
        let mut t = NewTask::new("SYN", "x");
        t.commits = vec![link(), link()];
        assert!(new_task(&t).unwrap_err().0.contains("linked twice"));
        t.commits[1].subject = "a bad one".repeat(100);
        assert!(new_task(&t).unwrap_err().0.contains("subject"));
    }

    #[test]
    fn previous_keys_are_keys_other_than_the_current_one() {
        let mut t = server_task(Some("SYN-42"), Some(42));
        t.previous_keys = vec!["OPS-7".into(), "OPS-7.2".into()];
        assert!(task(&t).is_ok());
        for bad in ["SYN-42", "ops 7", "nonsense"] {
            t.previous_keys = vec![bad.into()];
            assert!(task(&t).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_patch_moves_to_a_server_project_only() {
        for (project, ok) in [("ops", true), ("INBOX", false), ("1x", false)] {
            let p = TaskPatch {
                project: Some(project.into()),
                ..Default::default()
            };
            assert_eq!(patch(&p).is_ok(), ok, "{project}");
        }
    }

    #[rstest]
    #[case::numbered(Some("SYN-42"), Some(42), true)]
    #[case::provisional(None, None, true)]
    #[case::largest(Some("SYN-9223372036854775807"), Some(MAX_NUMBER), true)]
    #[case::too_large(Some("SYN-18446744073709551615"), Some(u64::MAX), false)]
    #[case::zero(Some("SYN-0"), Some(0), false)]
    #[case::other_number(Some("SYN-41"), Some(42), false)]
    #[case::subtask_without_parent(Some("SYN-42.1"), Some(1), false)]
    #[case::other_project(Some("ABC-42"), Some(42), false)]
    #[case::lower_case(Some("syn-42"), Some(42), false)]
    #[case::key_without_number(Some("SYN-42"), None, false)]
    #[case::number_without_key(None, Some(42), false)]
    fn a_server_task_key_is_project_dash_number(
        #[case] key: Option<&str>,
        #[case] number: Option<u64>,
        #[case] ok: bool,
    ) {
        assert_eq!(task(&server_task(key, number)).is_ok(), ok);
    }

    #[test]
    fn a_subtask_has_a_parent_and_a_dotted_key() {
        let mut t = server_task(Some("SYN-42.1"), Some(1));
        t.parent = Some(uuid::Uuid::from_u128(7));
        assert!(task(&t).is_ok());
        t.key = Some("SYN-42.2".into());
        assert!(task(&t).is_err(), "number and key disagree");
        let mut t = server_task(Some("SYN-42"), Some(42));
        t.parent = Some(uuid::Uuid::from_u128(7));
        assert!(task(&t).is_err(), "a parent without a dotted key");
        // Unless it is the key its tracker gave it, kept by an import.
        t.origin = Some(crate::dto::Origin {
            tracker: "jira".into(),
            key: Some("syn-42".into()),
        });
        assert!(task(&t).is_ok(), "an imported subtask keeps its key");
        t.origin.as_mut().unwrap().key = Some("SYN-41".into());
        assert!(task(&t).is_err(), "another origin key is no excuse");
        let mut t = server_task(None, None);
        t.parent = Some(uuid::Uuid::from_u128(7));
        assert!(task(&t).is_ok(), "a provisional subtask");
    }

    #[test]
    fn an_import_names_a_known_tracker_and_keeps_a_key_of_its_own_project() {
        let mut t = NewTask::new("ENG", "imported");
        t.origin = Some(Origin {
            tracker: "jira".into(),
            key: Some("ENG-42".into()),
        });
        assert!(new_task(&t).is_ok());
        t.keep_number = true;
        assert_eq!(kept_key(&t).unwrap().to_string(), "ENG-42");
        for (tracker, key, keep_ok) in [
            ("trello", "ENG-42", false),
            ("jira", "ENG-42.1", false),
            ("jira", "OPS-42", false),
            ("jira", "ENG-1000001", false),
            ("jira", "has space", false),
            ("github", "#12", true),
            ("github", "#0", false),
            ("linear", "eng-7", true),
        ] {
            t.origin = Some(Origin {
                tracker: tracker.into(),
                key: Some(key.into()),
            });
            assert_eq!(new_task(&t).is_ok(), keep_ok, "{tracker} {key}");
        }
        t.keep_number = false;
        t.origin.as_mut().unwrap().key = Some("#12".into());
        assert!(new_task(&t).is_ok(), "any key when the number is not kept");
        t.origin.as_mut().unwrap().key = Some("x".repeat(MAX_ORIGIN_KEY + 1));
        assert!(new_task(&t).is_err());
        assert_eq!(Origin::normal_key(" eng 7"), "ENG-7");
        assert_eq!(Origin::normal_key("#12 "), "#12");
    }

    #[test]
    fn a_server_task_obeys_the_field_rules() {
        let good = server_task(Some("SYN-1"), Some(1));
        assert!(task(&good).is_ok());
        let mut t = good.clone();
        t.description = "x".repeat(5_000_000);
        assert!(task(&t).is_err());
        let mut t = good.clone();
        t.project = "INBOX".into();
        assert!(
            task(&t).is_err(),
            "the local inbox is never a server project"
        );
        let mut t = good.clone();
        t.project = "syn".into();
        t.key = None;
        t.number = None;
        assert!(task(&t).is_err(), "prefixes are stored upper-case");
        let mut t = good.clone();
        t.tags = vec!["a b".into()];
        assert!(task(&t).is_err());
        let mut t = good;
        t.commits = (0..MAX_COMMIT_LINKS + 5)
            .map(|i| CommitLink {
                hash: format!("{i:040x}"),
                ..link()
            })
            .collect();
        assert!(
            task(&t).is_ok(),
            "a task may gather more links than one request carries"
        );
        t.commits[3].hash = "short".into();
        assert!(task(&t).unwrap_err().0.contains("not a full hash"));
    }

    #[test]
    fn blank_description_is_rejected() {
        assert!(description("   ").is_err());
        assert!(description("Buy milk").is_ok());
    }
}
