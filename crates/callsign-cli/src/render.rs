//! Printing: plain lines for people, JSON (`--json`) for scripts. A task in JSON is the server's
//! task fields plus `sync_state` (`provisional` | `synced` | `failed`), `last_error`, and
//! `waiting` (why it is not synced yet, or null).
//!
//! Human output never prints text from the server or a task raw: control characters and
//! bidirectional overrides are escaped ([`safe`], [`safe_block`]), so a description cannot clear
//! the screen or retitle the terminal. `--json` stays exact (JSON escapes them itself).
mod undo;

use std::borrow::Cow;
use std::io::Write;

use anyhow::Result;
use callsign_core::dto::{Invite, Member, TaskStatus};
use callsign_core::LOCAL_PROJECT;
use callsign_sync::lock::SyncLock;
use callsign_sync::reason::{task_failure, waiting_reason};
use callsign_sync::standup::Standup;
use callsign_sync::{Engine, Event, JoinReport, LocalTask, LoginReport, SyncStatus};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// Text for one line of a terminal: control characters (newlines too) and the Unicode
/// formatting characters that reorder or hide text are shown as escapes (`\u{1b}`).
pub fn safe(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// Like [`safe`], but keeps line breaks (notes are several lines).
pub fn safe_block(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

fn escape(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    let bad = |c: char| {
        (c.is_control() && !(keep_newlines && c == '\n'))
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if bad(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A due date in this machine's time zone: the date, the time unless it is midnight, and
/// `(overdue)` for a pending task past it. A due date at midnight (`tomorrow`, `fri`) means
/// that whole day, so it is overdue only once the day is over, as in Taskwarrior and the app.
pub(crate) fn due_text(t: &LocalTask, due: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let local = due.with_timezone(&chrono::Local);
    let whole_day = local.time() == chrono::NaiveTime::MIN;
    let mut s = if whole_day {
        local.format("%a %Y-%m-%d").to_string()
    } else {
        local.format("%a %Y-%m-%d %H:%M").to_string()
    };
    let past = if whole_day {
        local.date_naive() < now.with_timezone(&chrono::Local).date_naive()
    } else {
        due < now
    };
    if t.status == TaskStatus::Pending && past {
        s.push_str(" (overdue)");
    }
    s
}

pub struct Out {
    pub json: bool,
    /// Colours in the human output: only on a terminal, never with `NO_COLOR` ([`colour`]).
    pub colour: bool,
    /// The width task lists fit ([`crate::table::limit`]); `None`: whole lines.
    pub width: Option<usize>,
}

/// Whether to colour: `NO_COLOR` (set and not empty, no-color.org) always wins; else
/// `CLICOLOR_FORCE` (set, not `0`) forces it; else only when standard output is a terminal.
pub fn colour(stdout_is_terminal: bool, no_color: Option<&str>, force: Option<&str>) -> bool {
    if no_color.is_some_and(|v| !v.is_empty()) {
        return false;
    }
    if force.is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    stdout_is_terminal
}

/// The styles of `list`: the key, a task without one (provisional), one refused, an overdue
/// date, the waiting reason, a finished task.
pub(crate) mod paint {
    use anstyle::{AnsiColor, Style};

    pub const KEY: Style = Style::new().bold();
    pub const PROVISIONAL: Style = AnsiColor::Yellow.on_default();
    pub const FAILED: Style = AnsiColor::Red.on_default().bold();
    pub const OVERDUE: Style = AnsiColor::Red.on_default();
    pub const REASON: Style = Style::new().dimmed();
    pub const DONE: Style = Style::new().dimmed();
}

pub fn print_json(v: &Value) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, v)?;
    writeln!(out)?;
    Ok(())
}

pub fn flush() -> Result<()> {
    std::io::stdout().flush()?;
    Ok(())
}

/// The waiting reasons need the sync status and whether we are logged in, and every row the
/// same now; read them once.
pub(crate) struct Ctx {
    pub(crate) status: SyncStatus,
    pub(crate) logged_in: bool,
    pub(crate) now: DateTime<Utc>,
}

impl Ctx {
    fn read(engine: &Engine) -> Result<Ctx> {
        Ok(Ctx {
            status: engine.status()?,
            logged_in: engine.settings()?.server_url.is_some() && engine.has_token()?,
            now: Utc::now(),
        })
    }

    pub(crate) fn reason(&self, t: &LocalTask) -> Option<String> {
        waiting_reason(t, &self.status, self.logged_in, self.now)
    }

    fn task_json(&self, t: &LocalTask) -> Result<Value> {
        let mut v = serde_json::to_value(t)?;
        v["waiting"] = json!(self.reason(t));
        v["failure"] = json!(task_failure(t));
        v["local"] = json!(t.is_local());
        v["blocked"] = json!(t.is_blocked());
        Ok(v)
    }
}

impl Out {
    pub fn task(&self, engine: &Engine, t: &LocalTask) -> Result<()> {
        let ctx = Ctx::read(engine)?;
        if self.json {
            return print_json(&ctx.task_json(t)?);
        }
        println!("{}  {}", safe(&t.label()), safe(&t.description));
        println!("  uuid:     {}", t.uuid);
        println!("  project:  {}", safe(&t.project));
        println!("  status:   {}", t.status.as_str());
        if let Some(a) = &t.assignee {
            println!("  assigned: @{}", safe(a));
        }
        if let Some(c) = &t.created_by {
            println!("  made by:  @{}", safe(c));
        }
        if !t.previous_keys.is_empty() {
            println!("  was:      {}", safe(&t.previous_keys.join(", ")));
        }
        if let Some(o) = &t.origin {
            let key = o
                .key
                .as_deref()
                .map(|k| format!(" {k}"))
                .unwrap_or_default();
            println!("  imported: from {}{}", safe(&o.tracker), safe(&key));
        }
        if let Some(p) = t.parent {
            let parent = engine.get(&p.to_string());
            let label = parent.as_ref().map(LocalTask::label);
            println!(
                "  parent:   {}",
                safe(&label.unwrap_or_else(|_| p.to_string()))
            );
        }
        if t.children > 0 {
            let subtasks = engine.query(&callsign_sync::TaskQuery {
                all: true,
                parent: Some(t.uuid),
                ..Default::default()
            })?;
            println!("  subtasks: {} open of {}", t.open_children, t.children);
            for c in &subtasks {
                let mark = if c.status == TaskStatus::Pending {
                    " "
                } else {
                    "x"
                };
                println!("    {mark} {}  {}", safe(&c.label()), safe(&c.description));
            }
        }
        if !t.tags.is_empty() {
            println!("  tags:     {}", safe(&t.tags.join(" ")));
        }
        if let Some(p) = t.priority {
            println!("  priority: {p}");
        }
        if let Some(d) = t.due {
            println!("  due:      {}", due_text(t, d, ctx.now));
        }
        if !t.notes.is_empty() {
            println!("  notes:    {}", safe_block(&t.notes));
        }
        for (i, c) in t.commits.iter().enumerate() {
            let label = if i == 0 { "commits:" } else { "" };
            let verb = match c.action {
                callsign_core::dto::CommitAction::Closes => "closes",
                callsign_core::dto::CommitAction::Refs => "refs",
            };
            println!(
                "  {label:<9} {} {}  {}, {} ({verb})",
                &c.hash[..c.hash.len().min(7)],
                safe(&c.subject),
                safe(&c.author),
                c.at.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M"),
            );
            if let Some(comment) = &c.comment {
                println!("            {}", safe(comment));
            }
        }
        let state = match ctx.reason(t) {
            Some(r) => r,
            None if t.key.is_some() => "synced".into(),
            None => "provisional".into(),
        };
        println!("  sync:     {}", safe(&state));
        for (i, c) in t.conflicts.iter().enumerate() {
            println!(
                "  conflict {}: {} was changed on two devices; the other value was {}",
                i + 1,
                c.field,
                safe(&conflict_value(&c.value))
            );
        }
        if !t.conflicts.is_empty() {
            println!(
                "  (`callsign resolve {} N --restore` brings value N back; `--keep` keeps \
                 what is there)",
                safe(&t.label())
            );
        }
        Ok(())
    }

    /// `resolve`: what the task holds now.
    pub fn resolved(&self, engine: &Engine, t: &LocalTask, restored: bool) -> Result<()> {
        if !self.json {
            let what = if restored { "restored" } else { "kept" };
            println!("{what}; the change is queued for the server");
        }
        self.task(engine, t)
    }

    /// `import`: the count for people; the UUIDs in input order for scripts.
    pub fn imported(&self, uuids: &[uuid::Uuid]) -> Result<()> {
        if self.json {
            return print_json(&json!({ "imported": uuids.len(), "uuids": uuids }));
        }
        println!(
            "imported {} task(s); provisional until the server numbers them",
            uuids.len()
        );
        Ok(())
    }

    /// `branch`: the name (with `--print`, only the name, for scripts and the clipboard).
    pub fn branch(&self, name: &str, print: bool, created: bool) -> Result<()> {
        if self.json {
            return print_json(&json!({ "branch": name, "created": created, "switched": !print }));
        }
        match (print, created) {
            (true, _) => println!("{name}"),
            (false, true) => println!("switched to a new branch {name}"),
            (false, false) => println!("switched to {name}"),
        }
        Ok(())
    }

    /// `git install` and `git uninstall`: each hook and whether it runs (ran) an earlier one.
    pub fn hooks(
        &self,
        installed: bool,
        dir: &std::path::Path,
        hooks: &[crate::git::HookChange],
    ) -> Result<()> {
        if self.json {
            return print_json(
                &json!({ "hooks_dir": dir, "installed": installed, "hooks": hooks }),
            );
        }
        if hooks.is_empty() {
            println!("no Callsign hooks in {}", dir.display());
        }
        for h in hooks {
            let (verb, chained) = match (installed, h.chained) {
                (true, true) => ("installed", " (the hook that was there runs first)"),
                (true, false) => ("installed", ""),
                (false, true) => ("removed", " (the hook it ran first is back)"),
                (false, false) => ("removed", ""),
            };
            println!("{verb} {}{chained}", h.path.display());
        }
        Ok(())
    }

    /// `list`, `next` and `inbox`: the tasks in `columns` ([`crate::report`]; none: the
    /// default line), or every field of each in JSON.
    pub fn list(
        &self,
        engine: &Engine,
        tasks: &[LocalTask],
        columns: &[crate::report::Column],
    ) -> Result<()> {
        let ctx = Ctx::read(engine)?;
        if self.json {
            let all: Result<Vec<Value>> = tasks.iter().map(|t| ctx.task_json(t)).collect();
            return print_json(&Value::Array(all?));
        }
        let mut out = std::io::stdout().lock();
        for line in crate::report::lines(&ctx, tasks, columns, self.width, self.colour) {
            writeln!(out, "{line}")?;
        }
        Ok(())
    }

    pub fn joined(&self, server: &str, r: &JoinReport) -> Result<()> {
        if self.json {
            return print_json(&json!({
                "server": server,
                "member": r.member,
                "projects": r.login.projects.as_ref().ok(),
                "error": r.login.projects.as_ref().err(),
                "project": r.login.project,
                "local": r.login.local,
            }));
        }
        println!(
            "joined the team at {server} as @{} ({})",
            safe(&r.member.name),
            r.member.role
        );
        self.login_lines(&r.login)
    }

    pub fn invite(&self, i: &Invite) -> Result<()> {
        if self.json {
            return print_json(&json!(i));
        }
        let local = i.expires_at.with_timezone(&chrono::Local);
        println!("{}", i.code);
        println!(
            "single use, for a new {}, until {}: they run\n  callsign join --server URL \
             --code {} --name THEIR-NAME\nor use \"Join a team\" in the app's settings",
            i.role,
            local.format("%Y-%m-%d %H:%M"),
            i.code
        );
        Ok(())
    }

    pub fn standup(&self, s: &Standup, me: Option<&Member>) -> Result<()> {
        if self.json {
            return print_json(&json!(s));
        }
        let since = s.since.with_timezone(&chrono::Local);
        println!("Standup since {}", since.format("%a %Y-%m-%d"));
        match (s.members.is_empty(), me) {
            (true, None) => println!(
                "  this device is not in a team yet: `callsign join` with an invite code, or \
                 `callsign login` (with the server reachable)"
            ),
            (true, Some(_)) => {
                println!("  no members known yet: run `callsign members` once online")
            }
            _ => {}
        }
        let width = s
            .members
            .iter()
            .flat_map(|m| m.completed.iter().chain(&m.created).chain(&m.open))
            .map(|l| l.key.chars().count())
            .max()
            .unwrap_or(0);
        for m in &s.members {
            let you = if me.is_some_and(|me| me.name == m.name) {
                " (you)"
            } else {
                ""
            };
            println!("\n@{}{you}", safe(&m.name));
            if m.completed.is_empty() && m.created.is_empty() && m.open.is_empty() {
                println!("  nothing since then, nothing open");
            }
            for (what, lines) in [
                ("completed", &m.completed),
                ("created", &m.created),
                ("open", &m.open),
            ] {
                if lines.is_empty() {
                    continue;
                }
                println!("  {what}");
                for l in lines {
                    println!("    {:<width$}  {}", safe(&l.key), safe(&l.description));
                }
            }
        }
        Ok(())
    }

    pub fn members(&self, members: &[Member], me: Option<&Member>) -> Result<()> {
        if self.json {
            return print_json(&json!({ "members": members, "me": me }));
        }
        for m in members {
            let mark = if me.is_some_and(|me| me.name == m.name) {
                "*"
            } else {
                " "
            };
            println!("{mark} @{:<32} {}", safe(&m.name), m.role);
        }
        Ok(())
    }

    pub fn login(&self, server: &str, r: &LoginReport) -> Result<()> {
        if self.json {
            return print_json(&json!({
                "server": server,
                "me": r.me.as_ref().ok(),
                "projects": r.projects.as_ref().ok(),
                "error": r.projects.as_ref().err(),
                "project": r.project,
                "local": r.local,
            }));
        }
        match &r.me {
            Ok(me) => println!("logged in to {server} as @{} ({})", safe(&me.name), me.role),
            Err(_) => println!("logged in to {server}"),
        }
        self.login_lines(r)
    }

    /// What a login found: the projects, the default project, the local inbox.
    fn login_lines(&self, r: &LoginReport) -> Result<()> {
        match &r.projects {
            Ok(ps) => {
                let names: Vec<_> = ps
                    .iter()
                    .map(|p| format!("{} ({})", safe(&p.prefix), safe(&p.name)))
                    .collect();
                println!("projects: {}", names.join(", "));
            }
            Err(e) => println!(
                "could not list projects now ({}); tasks will sync later",
                safe(e)
            ),
        }
        if let Some(p) = &r.project {
            println!("new tasks go to {p}");
        }
        if r.local > 0 {
            let to = r.project.as_deref().unwrap_or("PFX");
            println!(
                "{} task(s) captured before there was a server wait in this device's {} \
                 (`callsign inbox`); send them with `callsign inbox --send-to {to}`",
                r.local, LOCAL_PROJECT
            );
        }
        Ok(())
    }

    /// `discard`: what went (`after` is `None` when the task left this device).
    pub fn discarded(
        &self,
        engine: &Engine,
        before: &LocalTask,
        after: Option<&LocalTask>,
    ) -> Result<()> {
        match after {
            Some(t) if self.json => {
                print_json(&json!({"removed": false, "task": Ctx::read(engine)?.task_json(t)?}))
            }
            None if self.json => print_json(&json!({"removed": true, "uuid": before.uuid})),
            Some(t) => {
                println!("{}: the refused changes are dropped; the server's values come back with the next sync", safe(&t.label()));
                Ok(())
            }
            None => {
                println!(
                    "{}: removed from this device (the server never had it)",
                    before.label()
                );
                Ok(())
            }
        }
    }

    pub fn inbox_sent(&self, n: usize, project: &str) -> Result<()> {
        if self.json {
            return print_json(&json!({"sent": n, "project": project.to_ascii_uppercase()}));
        }
        println!(
            "{n} task(s) queued for {}; they get keys at the next sync",
            project.to_ascii_uppercase()
        );
        Ok(())
    }

    /// `project rename`: the project as the server has it now.
    pub fn project_added(&self, p: &callsign_core::dto::Project) -> Result<()> {
        if self.json {
            return print_json(&serde_json::to_value(p)?);
        }
        println!(
            "created {} ({}): its tasks are {}-1, {}-2, …",
            safe(&p.prefix),
            safe(&p.name),
            safe(&p.prefix),
            safe(&p.prefix)
        );
        Ok(())
    }

    pub fn projects(&self, list: &[callsign_core::dto::Project]) -> Result<()> {
        if self.json {
            return print_json(&serde_json::to_value(list)?);
        }
        if list.is_empty() {
            println!("no projects known yet (`callsign login` fetches them)");
        }
        for p in list {
            let earlier = if p.previous_prefixes.is_empty() {
                String::new()
            } else {
                format!("  (was {})", safe(&p.previous_prefixes.join(", ")))
            };
            println!("{:<10} {}{earlier}", safe(&p.prefix), safe(&p.name));
        }
        Ok(())
    }

    pub fn project_renamed(&self, from: &str, p: &callsign_core::dto::Project) -> Result<()> {
        if self.json {
            return print_json(&serde_json::to_value(p)?);
        }
        println!(
            "{} is now {} ({}): its tasks get their new keys at the next sync, and {}-N keys \
             still find them",
            from.trim().to_ascii_uppercase(),
            safe(&p.prefix),
            safe(&p.name),
            from.trim().to_ascii_uppercase()
        );
        Ok(())
    }

    pub fn synced(&self, s: &SyncStatus) -> Result<()> {
        if self.json {
            return print_json(&serde_json::to_value(s)?);
        }
        println!("synced: nothing pending");
        if s.failed > 0 {
            println!(
                "{} task(s) refused by the server: `callsign list --failed` shows why; fix one \
                 with `callsign edit` (or `retry`), or `callsign discard` it",
                s.failed
            );
        }
        if s.local > 0 {
            println!(
                "{} task(s) wait in this device's {LOCAL_PROJECT}: `callsign inbox --send-to PFX`",
                s.local
            );
        }
        Ok(())
    }

    pub fn status(&self, engine: &Engine) -> Result<()> {
        let s = engine.status()?;
        let server = engine.settings()?.server_url;
        let holder = SyncLock::live_holder(engine.data_dir());
        if self.json {
            let mut v = serde_json::to_value(&s)?;
            v["server"] = json!(server);
            v["loop_pid"] = json!(holder.map(|h| h.pid));
            return print_json(&v);
        }
        println!(
            "server:     {}",
            safe(server.as_deref().unwrap_or("(none: run `callsign login`)"))
        );
        let online = match s.online {
            Some(true) => "online",
            Some(false) => "offline",
            None => "unknown (never synced)",
        };
        println!("connection: {online}");
        if s.recovering > 0 {
            println!(
                "pending:    {} ({} kept by the server while it recovers from a backup: \
                 docs/RECOVERY.md)",
                s.pending + s.in_flight,
                s.recovering
            );
        } else {
            println!("pending:    {}", s.pending + s.in_flight);
        }
        println!("failed:     {}", s.failed);
        println!(
            "local:      {} (in {LOCAL_PROJECT}, kept on this device)",
            s.local
        );
        let last = s
            .last_sync_at
            .map(|t| t.to_rfc3339())
            .unwrap_or_else(|| "never".into());
        println!("last sync:  {last}");
        if let Some(p) = &s.problem {
            println!("problem:    {}", safe(&p.summary));
            println!("  detail:   {}", safe(&p.detail));
        }
        if let Some(h) = holder {
            println!("sync loop:  PID {}", h.pid);
        }
        Ok(())
    }

    pub fn event(&self, ev: &Event) -> Result<()> {
        if self.json {
            return print_json(&serde_json::to_value(ev)?);
        }
        if let Event::SyncStatus(s) = ev {
            let online = if s.online == Some(false) {
                "offline"
            } else {
                "online"
            };
            println!(
                "{online}: {} pending, {} failed",
                s.pending + s.in_flight,
                s.failed
            );
        }
        Ok(())
    }
}

/// A conflict's value as a person reads it: text quoted, tags by name, nothing as `none`.
fn conflict_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "none".into(),
        serde_json::Value::String(s) => format!("{s:?}"),
        serde_json::Value::Array(a) if a.is_empty() => "no tags".into(),
        serde_json::Value::Array(a) => a
            .iter()
            .map(|t| {
                t.as_str()
                    .map_or_else(|| t.to_string(), |s| format!("+{s}"))
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A due date at midnight is that whole day; one with a time is due at that time.
    #[test]
    fn overdue_follows_the_whole_day_rule() {
        use chrono::{Local, TimeZone};
        let task = LocalTask::from_server(callsign_core::dto::Task {
            project: "SYN".into(),
            description: "d".into(),
            ..Default::default()
        });
        let local = |y, mo, d, h, mi| Local.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap().to_utc();
        let now = local(2026, 11, 25, 15, 30);
        let text = |due| due_text(&task, due, now);
        assert!(
            !text(local(2026, 11, 25, 0, 0)).contains("overdue"),
            "today, all day"
        );
        assert!(
            text(local(2026, 11, 24, 0, 0)).ends_with("(overdue)"),
            "yesterday"
        );
        assert!(
            text(local(2026, 11, 25, 15, 0)).ends_with("(overdue)"),
            "half an hour ago"
        );
        assert!(
            !text(local(2026, 11, 25, 16, 0)).contains("overdue"),
            "in half an hour"
        );
        let mut done = task.clone();
        done.status = TaskStatus::Completed;
        assert!(!due_text(&done, local(2026, 11, 1, 0, 0), now).contains("overdue"));
    }

    #[test]
    fn colour_only_on_a_terminal_and_never_with_no_color() {
        let cases = [
            (true, None, None, true),
            (false, None, None, false),
            (true, Some("1"), None, false),
            (true, Some(""), None, true),
            (false, None, Some("1"), true),
            (false, None, Some("0"), false),
            (true, Some("1"), Some("1"), false),
        ];
        for (tty, no_color, force, want) in cases {
            assert_eq!(
                colour(tty, no_color, force),
                want,
                "{tty} {no_color:?} {force:?}"
            );
        }
    }

    #[test]
    fn control_characters_and_bidi_overrides_are_escaped() {
        assert_eq!(
            safe("\u{1b}[2J\u{1b}]0;PWNED\u{7}"),
            "\\u{1b}[2J\\u{1b}]0;PWNED\\u{7}"
        );
        assert_eq!(safe("a\nb\tc"), "a\\u{a}b\\u{9}c");
        assert_eq!(safe_block("a\nb\rc"), "a\nb\\u{d}c");
        assert_eq!(safe("abc\u{202e}fdp.exe"), "abc\\u{202e}fdp.exe");
        assert!(matches!(safe("Buy milk — ü 北京"), Cow::Borrowed(_)));
    }
}
