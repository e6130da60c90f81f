//! `callsign import`: the input formats, parsed into captures before anything is written.
//!
//! Plain text: one task description per line. `--jsonl`: one JSON object per line,
//! `{"description": "...", "project": "PFX", "notes": "...", "tags": ["..."], "due": "fri",
//! "priority": "H"}`, where only the description is required (`due` takes the forms
//! `add --due` takes, in this machine's time zone). Blank lines are skipped in both. Every problem names its line, and
//! a file with any problem imports nothing.
use anyhow::{anyhow, bail, Result};
use callsign_core::when::parse_priority_or_none;
use callsign_core::Prefix;
use callsign_sync::NewTaskInput;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// The captures in the input, in order. `project` is the `--project` flag: the project of every
/// line that names none (the saved default when it is `None` too).
/// `due` reads a line's due date as typed (the engine's [`callsign_sync::Engine::parse_due`]).
pub fn parse(
    input: &str,
    jsonl: bool,
    project: Option<&str>,
    due: &Due<'_>,
) -> Result<Vec<NewTaskInput>> {
    let mut out = Vec::new();
    for (i, line) in input.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let n = i + 1;
        let mut task = if jsonl {
            parse_json(line, due).map_err(|e| anyhow!("line {n}: {e}"))?
        } else {
            NewTaskInput {
                description: line.to_owned(),
                ..NewTaskInput::default()
            }
        };
        if task.project.is_none() {
            task.project = project.map(str::to_owned);
        }
        if let Some(p) = &task.project {
            Prefix::parse(p.trim()).map_err(|e| anyhow!("line {n}: project: {e}"))?;
        }
        out.push(task);
    }
    Ok(out)
}

/// Reads a due date as typed: `None` for `none`.
pub type Due<'a> = dyn Fn(&str) -> Result<Option<DateTime<Utc>>> + 'a;

fn parse_json(line: &str, due: &Due<'_>) -> Result<NewTaskInput> {
    let Value::Object(fields) = serde_json::from_str::<Value>(line)? else {
        bail!("expected a JSON object");
    };
    let mut task = NewTaskInput::default();
    let text = |k: &str, v: &Value| match v {
        Value::String(s) => Ok(s.clone()),
        _ => Err(anyhow!("{k:?} must be a string")),
    };
    for (k, v) in &fields {
        match k.as_str() {
            "description" => task.description = text(k, v)?,
            "project" if !v.is_null() => task.project = Some(text(k, v)?),
            "project" => {}
            "notes" => task.notes = text(k, v)?,
            "tags" => {
                task.tags = v
                    .as_array()
                    .and_then(|a| a.iter().map(|t| t.as_str().map(str::to_owned)).collect())
                    .ok_or_else(|| anyhow!("\"tags\" must be an array of strings"))?;
            }
            "due" if !v.is_null() => task.due = due(&text(k, v)?)?,
            "priority" if !v.is_null() => task.priority = parse_priority_or_none(&text(k, v)?)?,
            "due" | "priority" => {}
            other => bail!(
                "unknown field {other:?} (expected description, project, notes, tags, due, \
                 priority)"
            ),
        }
    }
    if task.description.trim().is_empty() {
        bail!("\"description\" is required and must not be empty");
    }
    Ok(task)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `parse` with due dates read at local time now.
    fn parse(input: &str, jsonl: bool, project: Option<&str>) -> Result<Vec<NewTaskInput>> {
        let due = |d: &str| {
            Ok(callsign_core::when::parse_due_or_none(
                d,
                chrono::Local::now(),
            )?)
        };
        super::parse(input, jsonl, project, &due)
    }

    #[test]
    fn plain_lines_are_descriptions_and_blank_lines_are_skipped() {
        let tasks = parse("Buy milk\r\n\n  Call the bank  \n", false, Some("home")).unwrap();
        let got: Vec<_> = tasks
            .iter()
            .map(|t| (t.description.as_str(), t.project.as_deref()))
            .collect();
        assert_eq!(
            got,
            [("Buy milk", Some("home")), ("Call the bank", Some("home"))]
        );
    }

    #[test]
    fn json_lines_carry_their_own_fields_and_fall_back_to_the_flag() {
        let input = r#"{"description": "Ship it", "project": "OPS", "notes": "by Friday", "tags": ["a"]}
{"description": "Plain one"}
"#;
        let tasks = parse(input, true, Some("DEF")).unwrap();
        assert_eq!(tasks[0].project.as_deref(), Some("OPS"));
        assert_eq!(
            (tasks[0].notes.as_str(), tasks[0].tags.as_slice()),
            ("by Friday", ["a".to_owned()].as_slice())
        );
        assert_eq!(
            (tasks[1].description.as_str(), tasks[1].project.as_deref()),
            ("Plain one", Some("DEF"))
        );
    }

    #[test]
    fn json_lines_take_due_and_priority() {
        let input = r#"{"description": "a", "due": "2026-12-01", "priority": "h"}
{"description": "b", "due": null, "priority": null}
"#;
        let tasks = parse(input, true, None).unwrap();
        let due = tasks[0].due.unwrap().with_timezone(&chrono::Local);
        assert_eq!(due.format("%Y-%m-%d %H:%M").to_string(), "2026-12-01 00:00");
        assert_eq!(tasks[0].priority, Some(callsign_core::Priority::H));
        assert_eq!((tasks[1].due, tasks[1].priority), (None, None));
        let e = parse(r#"{"description": "c", "due": "soon"}"#, true, None).unwrap_err();
        assert!(
            e.to_string().starts_with("line 1: 'soon' is not a date"),
            "{e}"
        );
        let e = parse(r#"{"description": "c", "priority": "X"}"#, true, None).unwrap_err();
        assert!(e.to_string().contains("use H, M or L"), "{e}");
    }

    #[test]
    fn a_bad_line_is_named_by_its_number() {
        for (input, jsonl, want) in [
            ("{\"description\": \"ok\"}\n\nnot json", true, "line 3: "),
            (
                r#"{"description": ""}"#,
                true,
                "line 1: \"description\" is required",
            ),
            (
                r#"{"descripton": "typo"}"#,
                true,
                "line 1: unknown field \"descripton\"",
            ),
            (
                r#"{"description": "x", "tags": "a"}"#,
                true,
                "line 1: \"tags\" must be",
            ),
            (
                r#"{"description": "x", "project": "9X"}"#,
                true,
                "line 1: project: ",
            ),
            ("fine\nalso fine", false, "line 1: project: "),
        ] {
            let project = if jsonl { None } else { Some("bad-prefix") };
            let err = parse(input, jsonl, project).unwrap_err().to_string();
            assert!(
                err.starts_with(want),
                "{input:?}: {err:?} should start {want:?}"
            );
        }
    }
}
