//! Settings → Import: another tracker's export planned (a dry run) or queued, and how its tasks
//! stand afterwards. The engine reads, plans and queues (`Engine::import_export`, which says
//! what needs the server); these commands only carry the file in and the facts out.
//!
//! **The request.** The web view reads the file and sends its bytes as the raw body of
//! `import_export` (`invoke('import_export', bytes, {headers})`: no path crosses, and a large
//! export is not turned into a JSON array of numbers); how to import it comes in the
//! `Callsign-Import` header as JSON ([`ImportOptions`]). When Tauri's IPC falls back to
//! `postMessage`, the same bytes arrive as a JSON array, which is read as well.
//!
//! **The answer.** The plan in the shape the CLI's `import --json` prints it (`report`),
//! whether the server answered (`online`), the tasks queued in order (`uuids`: empty in a dry
//! run), how many were `queued` now or were `present` already (the same file again queues
//! nothing), and the file's keys that name another task here (`clashes`: refused). The UI then
//! polls `import_progress(uuids)` while the sync loop sends them.

use callsign_sync::{ImportClash, ImportFormat, ImportProgress, ImportReport, ImportRequest};
use serde::{Deserialize, Serialize};
use tauri::ipc::{InvokeBody, Request};
use tauri::State;
use uuid::Uuid;

use crate::commands::AppEngine;
use crate::error::{CmdError, CmdResult};

/// The header that carries [`ImportOptions`].
pub const OPTIONS_HEADER: &str = "callsign-import";

/// How to import the body: `format` is `jira`, `linear`, `github` or `taskwarrior`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportOptions {
    pub format: String,
    /// Each task keeps its very number, in a project made for it.
    #[serde(default)]
    pub keep_numbers: bool,
    /// The project to import into (with `keep_numbers`, the prefix for GitHub's `#N`); empty
    /// or none: the file's own prefixes.
    #[serde(default)]
    pub project: Option<String>,
    /// Plan only: nothing is made.
    #[serde(default)]
    pub dry_run: bool,
}

/// What `import_export` answers.
#[derive(Debug, Clone, Serialize)]
pub struct UiImport {
    /// The plan (`callsign import --json`'s `plan`).
    pub report: ImportReport,
    /// The server answered (a dry run goes on without it, from what this device last heard).
    pub online: bool,
    /// The file's tasks in the order they were queued; empty in a dry run.
    pub uuids: Vec<Uuid>,
    /// Saved here and queued for the server now.
    pub queued: usize,
    /// Here already (an earlier run of the same file): left as they are.
    pub present: usize,
    /// Keys of the file that name another task here already (imported before with another
    /// issue, or a kept number another task holds): those issues are refused.
    pub clashes: Vec<ImportClash>,
}

/// Reads, plans and, unless `dry_run`, queues the export in the body; see the module. A file
/// that cannot be read, a plan that cannot go ahead, a member who is not an owner, or (for a
/// real import) no answer from the server is `invalid`, in the engine's words.
#[tauri::command]
pub async fn import_export(
    engine: State<'_, AppEngine>,
    request: Request<'_>,
) -> CmdResult<UiImport> {
    let (opts, bytes) = read_request(&request)?;
    let format = ImportFormat::parse(&opts.format).ok_or_else(|| {
        CmdError::new(
            "invalid",
            format!(
                "{:?} is not a format this app imports: jira, linear, github or taskwarrior",
                opts.format
            ),
        )
    })?;
    let outcome = engine
        .0
        .import_export(ImportRequest {
            format,
            bytes,
            keep_numbers: opts.keep_numbers,
            project: opts
                .project
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty()),
            dry_run: opts.dry_run,
        })
        .await?;
    Ok(UiImport {
        report: outcome.report,
        online: outcome.online,
        uuids: outcome.uuids,
        queued: outcome.queued.queued,
        present: outcome.queued.present,
        clashes: outcome.clashes,
    })
}

/// How an import's tasks (`uuids`, as `import_export` gave them) stand now: `total`, `keyed`,
/// `waiting`, and the refused ones as `[key in the source, the server's reason]`.
#[tauri::command]
pub fn import_progress(
    engine: State<'_, AppEngine>,
    uuids: Vec<String>,
) -> CmdResult<ImportProgress> {
    let uuids = uuids
        .iter()
        .map(|u| {
            Uuid::parse_str(u.trim())
                .map_err(|_| CmdError::new("invalid", format!("{u:?} is not a task's UUID")))
        })
        .collect::<CmdResult<Vec<Uuid>>>()?;
    Ok(engine.0.import_progress(&uuids)?)
}

/// The options header and the file's bytes.
fn read_request(request: &Request<'_>) -> CmdResult<(ImportOptions, Vec<u8>)> {
    let bad =
        |why: &str| CmdError::new("invalid", format!("the import request is malformed: {why}"));
    let header = request
        .headers()
        .get(OPTIONS_HEADER)
        .ok_or_else(|| bad("no Callsign-Import header"))?
        .to_str()
        .map_err(|_| bad("the Callsign-Import header is not ASCII"))?;
    let opts: ImportOptions =
        serde_json::from_str(header).map_err(|e| bad(&format!("Callsign-Import: {e}")))?;
    let bytes = match request.body() {
        InvokeBody::Raw(b) => b.clone(),
        InvokeBody::Json(v) => serde_json::from_value(v.clone())
            .map_err(|_| bad("the body is not the file's bytes"))?,
    };
    Ok((opts, bytes))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};
    use tauri::http::{HeaderMap, HeaderValue};
    use tauri::ipc::InvokeBody;

    use crate::tests::{from_server, server_task, ui, Ui};

    const JIRA: &[u8] = include_bytes!("../../crates/callsign-import/fixtures/jira.csv");

    /// `import_export` as the web view calls it: the file as the raw body, the options as JSON
    /// in the header.
    fn import(ui: &Ui, body: InvokeBody, options: Value) -> Result<Value, Value> {
        let mut headers = HeaderMap::new();
        headers.insert(
            super::OPTIONS_HEADER,
            HeaderValue::from_str(&options.to_string()).unwrap(),
        );
        ui.call_with("import_export", body, headers)
    }

    /// Offline with no server, a dry run still plans from the file: ENG kept and new, ENG-3
    /// never in the file listed as unused, the next number after the highest kept, and nothing
    /// made. The postMessage form of the body (a JSON array) reads the same.
    #[test]
    fn a_dry_run_plans_the_jira_export_offline_and_makes_nothing() {
        let ui = ui();
        let options = json!({"format": "jira", "keep_numbers": true, "dry_run": true});
        let plan = import(&ui, InvokeBody::Raw(JIRA.to_vec()), options.clone()).unwrap();
        assert_eq!(plan["online"], false);
        assert_eq!(plan["uuids"], json!([]));
        assert_eq!(plan["clashes"], json!([]));
        assert_eq!(
            (plan["queued"].clone(), plan["present"].clone()),
            (json!(0), json!(0))
        );
        let r = &plan["report"];
        assert_eq!(
            r["open"].as_u64().unwrap()
                + r["done"].as_u64().unwrap()
                + r["cancelled"].as_u64().unwrap(),
            8,
            "{r}"
        );
        assert_eq!(
            r["projects"],
            json!([{"prefix": "ENG", "new": true, "tasks": 8, "highest_kept": 9,
                    "unused_count": 1, "unused": [3]}])
        );
        assert!(r["unmapped_assignees"].is_object(), "{r}");
        assert!(
            ui.ok("list_tasks", json!({"filter": {"status": "all"}}))
                .as_array()
                .unwrap()
                .is_empty(),
            "a dry run makes nothing"
        );
        let as_array = InvokeBody::Json(json!(JIRA.to_vec()));
        assert_eq!(import(&ui, as_array, options).unwrap(), plan);
    }

    /// A key of the file another task here already has as its tracker key: the preview names
    /// it and the task, as the server will refuse that issue.
    #[test]
    fn a_preview_names_a_key_another_task_has_already() {
        let ui = ui();
        let mut other = server_task("0b6c3f5e-8d1c-4f6e-9a52-0000000000c1", "OPS-8", None, &[]);
        other["origin"] = json!({"tracker": "jira", "key": "ENG-4"});
        from_server(&ui, json!([other]));
        let options = json!({"format": "jira", "keep_numbers": true, "dry_run": true});
        let plan = import(&ui, InvokeBody::Raw(JIRA.to_vec()), options).unwrap();
        assert_eq!(plan["clashes"], json!([{"key": "ENG-4", "task": "OPS-8"}]));
    }

    /// Refusals come as `{code, message}` in words: a real import with no server, a format it
    /// does not know, a file that is not the format, a request without its options.
    #[test]
    fn an_import_is_refused_in_words() {
        let ui = ui();
        let body = || InvokeBody::Raw(JIRA.to_vec());
        let e = import(&ui, body(), json!({"format": "jira", "keep_numbers": true})).unwrap_err();
        assert_eq!(e["code"], "invalid");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("needs the server once"),
            "{e}"
        );
        let e = import(&ui, body(), json!({"format": "asana", "dry_run": true})).unwrap_err();
        assert_eq!(
            e,
            json!({"code": "invalid", "message": "\"asana\" is not a format this app imports: \
                   jira, linear, github or taskwarrior"})
        );
        let e = import(&ui, body(), json!({"format": "github", "dry_run": true})).unwrap_err();
        assert_eq!(e["code"], "invalid", "a CSV is no GitHub JSON: {e}");
        let e = import(
            &ui,
            InvokeBody::Raw(Vec::new()),
            json!({"format": "jira", "dry_run": true}),
        )
        .unwrap_err();
        assert_eq!(e["code"], "invalid", "{e}");
        let e = ui
            .call_with("import_export", body(), HeaderMap::new())
            .unwrap_err();
        assert_eq!(e["code"], "invalid");
        assert!(
            e["message"].as_str().unwrap().contains("Callsign-Import"),
            "{e}"
        );
    }

    /// The progress of tasks this device has: keyed ones counted, unknown ones not; a UUID that
    /// is not one is `invalid`.
    #[test]
    fn import_progress_counts_the_keyed_tasks() {
        let ui = ui();
        let keyed = "0b6c3f5e-8d1c-4f6e-9a52-0000000000a1";
        from_server(&ui, json!([server_task(keyed, "ENG-4", None, &[])]));
        let p = ui.ok(
            "import_progress",
            json!({"uuids": [keyed, "0b6c3f5e-8d1c-4f6e-9a52-0000000000ff"]}),
        );
        assert_eq!(
            p,
            json!({"total": 2, "keyed": 1, "waiting": 0, "failed": []})
        );
        let e = ui.err("import_progress", json!({"uuids": ["ENG-4"]}));
        assert_eq!(e["code"], "invalid");
    }

    /// An imported task carries where it came from, and its tracker key finds it as typed
    /// (`#12`, any case), as the jump box's fallback asks.
    #[test]
    fn an_imported_task_shows_its_origin_and_its_old_key_finds_it() {
        let ui = ui();
        let uuid = "0b6c3f5e-8d1c-4f6e-9a52-0000000000b2";
        let mut t = server_task(uuid, "OPS-7", None, &[]);
        t["origin"] = json!({"tracker": "github", "key": "#12"});
        let mut jira = server_task("0b6c3f5e-8d1c-4f6e-9a52-0000000000b3", "OPS-8", None, &[]);
        jira["origin"] = json!({"tracker": "jira", "key": "ENG-42"});
        from_server(&ui, json!([t, jira]));
        let found = ui.ok("resolve_task", json!({"query": "#12"}));
        assert_eq!(found["uuid"], uuid);
        assert_eq!(found["origin"], json!({"tracker": "github", "key": "#12"}));
        let found = ui.ok("resolve_task", json!({"query": " eng-42 "}));
        assert_eq!(found["key"], "OPS-8");
        let e = ui.err("resolve_task", json!({"query": "#13"}));
        assert_eq!(e, json!({"code": "not_found", "message": "No task #13"}));
    }
}
