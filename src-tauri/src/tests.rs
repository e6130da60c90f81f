//! Every command through Tauri's mock runtime (IPC as the UI calls it), errors included.
use serde_json::{json, Value};
use tauri::http::HeaderMap;
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{
    get_ipc_response, mock_builder, mock_context, noop_assets, MockRuntime, INVOKE_KEY,
};
use tauri::webview::InvokeRequest;
use tauri::{Manager as _, WebviewWindow};

pub(crate) struct Ui {
    window: WebviewWindow<MockRuntime>,
    _app: tauri::App<MockRuntime>,
    pub(crate) dir: tempfile::TempDir,
}

pub(crate) fn ui() -> Ui {
    let dir = tempfile::tempdir().unwrap();
    let engine = callsign_sync::Engine::open(dir.path()).unwrap();
    let app = crate::manage(mock_builder(), &engine)
        .invoke_handler(crate::handler())
        .build(mock_context(noop_assets()))
        .unwrap();
    let window = tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    Ui {
        window,
        _app: app,
        dir,
    }
}

impl Ui {
    fn call(&self, cmd: &str, body: Value) -> Result<Value, Value> {
        self.call_with(cmd, InvokeBody::Json(body), HeaderMap::new())
    }

    /// A command called with any body (raw bytes too) and headers, as `invoke(cmd, payload,
    /// {headers})` sends them.
    pub(crate) fn call_with(
        &self,
        cmd: &str,
        body: InvokeBody,
        headers: HeaderMap,
    ) -> Result<Value, Value> {
        get_ipc_response(
            &self.window,
            InvokeRequest {
                cmd: cmd.into(),
                callback: CallbackFn(0),
                error: CallbackFn(1),
                url: "tauri://localhost".parse().unwrap(),
                body,
                headers,
                invoke_key: INVOKE_KEY.to_string(),
            },
        )
        .map(|b| b.deserialize::<Value>().unwrap())
    }

    pub(crate) fn ok(&self, cmd: &str, body: Value) -> Value {
        self.call(cmd, body)
            .unwrap_or_else(|e| panic!("{cmd} failed: {e}"))
    }

    pub(crate) fn err(&self, cmd: &str, body: Value) -> Value {
        self.call(cmd, body).expect_err(cmd)
    }

    fn add(&self, d: &str) -> Value {
        self.ok(
            "create_task",
            json!({"input": {"description": d, "project": "syn"}}),
        )
    }
}

#[test]
fn create_shows_a_provisional_task_at_the_top_of_the_list() {
    let ui = ui();
    let a = ui.add("First");
    assert_eq!(a["sync_state"], "provisional");
    assert_eq!(a["key"], Value::Null);
    assert_eq!(a["project"], "SYN");
    assert_eq!(a["waiting"]["state"], "pending");
    assert!(
        a["waiting"]["reason"]
            .as_str()
            .unwrap()
            .contains("not logged in"),
        "{a}"
    );
    ui.add("Second");
    let list = ui.ok("list_tasks", json!({}));
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["description"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["Second", "First"], "newest first");
}

#[test]
fn create_refuses_a_blank_description_or_bad_project() {
    let ui = ui();
    let e = ui.err(
        "create_task",
        json!({"input": {"description": "  ", "project": "SYN"}}),
    );
    assert_eq!(e["code"], "invalid");
    assert!(e["message"].as_str().unwrap().contains("description"));
    let e = ui.err(
        "create_task",
        json!({"input": {"description": "x", "project": "1x"}}),
    );
    assert_eq!(e["code"], "invalid");
    assert!(
        ui.ok("list_tasks", json!({}))
            .as_array()
            .unwrap()
            .is_empty(),
        "nothing stored"
    );
}

/// Due and priority arrive as typed: parsed by the engine, `none` or empty clears, a form it
/// does not know is `invalid` with the forms it knows, and nothing is stored then.
#[test]
fn due_and_priority_are_taken_as_typed() {
    let ui = ui();
    let t = ui.ok(
        "create_task",
        json!({"input": {"description": "Pay rent", "due": "2026-12-01", "priority": "h"}}),
    );
    assert_eq!(t["priority"], "H");
    assert!(
        t["due"].as_str().is_some_and(|d| d.starts_with("2026-1")),
        "{t}"
    );
    let id = t["uuid"].as_str().unwrap().to_owned();
    let e = ui.ok(
        "edit_task",
        json!({"id": id, "patch": {"due": "none", "priority": "none"}}),
    );
    assert_eq!(
        (e["due"].clone(), e["priority"].clone()),
        (Value::Null, Value::Null)
    );
    let e = ui.ok(
        "edit_task",
        json!({"id": id, "patch": {"priority": "L", "due": ""}}),
    );
    assert_eq!(e["priority"], "L");
    for input in [json!({"due": "soon"}), json!({"priority": "urgent"})] {
        let mut body = json!({"description": "Bad"});
        body.as_object_mut()
            .unwrap()
            .extend(input.as_object().unwrap().clone());
        let e = ui.err("create_task", json!({"input": body}));
        assert_eq!(e["code"], "invalid", "{input}");
        assert!(e["message"].as_str().unwrap().contains("use"), "{e}");
    }
    assert_eq!(
        ui.ok("list_tasks", json!({})).as_array().unwrap().len(),
        1,
        "nothing else stored"
    );
}

/// A subtask made through the command the detail pane calls: it takes its parent's project,
/// the parent shows it open and cannot be completed (`task_blocked`, naming it) until it is done.
#[test]
fn a_subtask_blocks_its_parent_until_it_is_done() {
    let ui = ui();
    let parent = ui.ok(
        "create_task",
        json!({"input": {"description": "Launch", "project": "dev"}}),
    );
    let pid = parent["uuid"].as_str().unwrap().to_owned();
    let child = ui.ok(
        "create_task",
        json!({"input": {"description": "Write the post", "parent": pid}}),
    );
    assert_eq!(
        (child["parent"].as_str(), child["project"].as_str()),
        (Some(&*pid), Some("DEV"))
    );
    let parent = ui.ok("resolve_task", json!({"query": pid}));
    assert_eq!(
        (parent["children"].clone(), parent["open_children"].clone()),
        (json!(1), json!(1))
    );
    let e = ui.err("complete_task", json!({"id": pid}));
    assert_eq!(e["code"], "task_blocked");
    let short = format!(
        "~{}",
        &child["uuid"].as_str().unwrap().replace('-', "")[..8]
    );
    assert!(e["message"].as_str().unwrap().contains(&short), "{e}");
    ui.ok("complete_task", json!({"id": child["uuid"]}));
    let done = ui.ok("complete_task", json!({"id": pid}));
    assert_eq!(done["status"], "completed");
}

#[test]
fn with_no_server_a_capture_goes_to_the_local_inbox_and_waits_there() {
    let ui = ui();
    let t = ui.ok(
        "create_task",
        json!({"input": {"description": "Offline idea"}}),
    );
    assert_eq!(
        (t["project"].as_str(), t["local"].as_bool()),
        (Some("INBOX"), Some(true))
    );
    assert_eq!(t["waiting"]["reason"], "on this device (local only)");
    let s = ui.ok("sync_status", json!({}));
    assert_eq!(
        (s["local"].as_u64(), s["pending"].as_u64()),
        (Some(1), Some(0))
    );
    let p = ui.ok("list_projects", json!({}));
    assert_eq!(
        p,
        json!([{"prefix": "INBOX", "name": "Inbox (this device)", "local": true}])
    );
    // Sent to a server project: queued there, no longer local.
    assert_eq!(ui.ok("send_inbox", json!({"project": "dev"})), json!(1));
    let t = ui.ok("resolve_task", json!({"query": t["uuid"]}));
    assert_eq!(
        (t["project"].as_str(), t["local"].as_bool()),
        (Some("DEV"), Some(false))
    );
    let s = ui.ok("sync_status", json!({}));
    assert_eq!(
        (s["local"].as_u64(), s["pending"].as_u64()),
        (Some(0), Some(1))
    );
    let e = ui.err("send_inbox", json!({"project": "inbox"}));
    assert_eq!(e["code"], "invalid");
}

#[test]
fn a_page_is_newest_first_with_the_total() {
    let ui = ui();
    for d in ["a", "b", "c"] {
        ui.add(d);
    }
    let page = ui.ok("list_tasks_page", json!({"offset": 1, "limit": 5}));
    let got: Vec<&str> = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["description"].as_str().unwrap())
        .collect();
    assert_eq!((got, page["total"].as_u64()), (vec!["b", "a"], Some(3)));
}

#[test]
fn list_filters_by_text_status_and_project() {
    let ui = ui();
    ui.add("Buy milk");
    let done = ui.add("Call Bob");
    ui.ok(
        "create_task",
        json!({"input": {"description": "Deploy", "project": "ops", "tags": ["work"]}}),
    );
    ui.ok("complete_task", json!({"id": done["uuid"]}));
    let count = |f: Value| {
        ui.ok("list_tasks", json!({"filter": f}))
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(count(json!({})), 2, "pending by default");
    assert_eq!(count(json!({"status": "completed"})), 1);
    assert_eq!(count(json!({"status": "all"})), 3);
    assert_eq!(count(json!({"text": "MILK"})), 1);
    assert_eq!(count(json!({"text": "work"})), 1, "tags match");
    assert_eq!(count(json!({"project": "ops"})), 1);
    let e = ui.err("list_tasks", json!({"filter": {"status": "someday"}}));
    assert_eq!(e["code"], "invalid");
}

#[test]
fn edit_complete_reopen_delete() {
    let ui = ui();
    let t = ui.add("Draft");
    let id = t["uuid"].as_str().unwrap().to_owned();
    let e = ui.ok(
        "edit_task",
        json!({"id": id, "patch": {"description": "Final", "notes": "n"}}),
    );
    assert_eq!(
        (e["description"].as_str(), e["notes"].as_str()),
        (Some("Final"), Some("n"))
    );
    assert_eq!(
        ui.ok("complete_task", json!({"id": id}))["status"],
        "completed"
    );
    assert_eq!(ui.ok("reopen_task", json!({"id": id}))["status"], "pending");
    assert_eq!(ui.ok("delete_task", json!({"id": id}))["status"], "deleted");
    let e = ui.err("edit_task", json!({"id": id, "patch": {}}));
    assert_eq!(e["code"], "invalid");
    let e = ui.err("complete_task", json!({"id": "SYN-404"}));
    assert_eq!(e["code"], "not_found");
}

#[test]
fn resolve_by_uuid_prefix_and_plain_not_found() {
    let ui = ui();
    let t = ui.add("Findable");
    let uuid = t["uuid"].as_str().unwrap();
    assert_eq!(
        ui.ok("resolve_task", json!({"query": &uuid[..8]}))["uuid"],
        uuid
    );
    assert_eq!(ui.ok("resolve_task", json!({"query": uuid}))["uuid"], uuid);
    let e = ui.err("resolve_task", json!({"query": "pfx 99"}));
    assert_eq!(e, json!({"code": "not_found", "message": "No task PFX-99"}));
    let e = ui.err("resolve_task", json!({"query": "hello"}));
    assert_eq!(e["code"], "not_found");
}

#[test]
fn retry_of_a_task_with_nothing_failed_is_refused_plainly() {
    let ui = ui();
    let t = ui.add("Fine");
    let e = ui.err("retry_task", json!({"id": t["uuid"]}));
    assert_eq!(e["code"], "invalid");
    assert!(
        e["message"].as_str().unwrap().contains("no failed request"),
        "{e}"
    );
    assert_eq!(
        ui.err("retry_task", json!({"id": "nope-1"}))["code"],
        "not_found"
    );
}

#[test]
fn settings_keep_the_token_to_themselves() {
    let ui = ui();
    let s = ui.ok("get_settings", json!({}));
    assert_eq!(
        (s["server_url"].clone(), s["token_set"].clone()),
        (Value::Null, json!(false))
    );
    let token = "cs_0123456789abcdef0123456789abcdef";
    let s = ui.ok(
        "save_settings",
        json!({"settings": {"server_url": "http://127.0.0.1:9/", "token": token, "device_name": "laptop", "project": "syn"}}),
    );
    assert_eq!(s["server_url"], "http://127.0.0.1:9");
    assert_eq!(s["token_set"], true);
    assert_eq!(s["token_hint"], "…cdef");
    assert_eq!(s["device_name"], "laptop");
    assert!(
        !s.to_string().contains(token),
        "the token is never sent back"
    );
    let mode = std::fs::metadata(ui.dir.path().join("token")).map(|m| {
        use std::os::unix::fs::PermissionsExt;
        m.permissions().mode() & 0o777
    });
    if let Ok(mode) = mode {
        assert_eq!(mode, 0o600);
    }
    let status = ui.ok("sync_status", json!({}));
    assert_eq!(status["configured"], true);
    // With a default project, capture needs no prefix.
    assert_eq!(
        ui.ok("create_task", json!({"input": {"description": "x"}}))["project"],
        "SYN"
    );
    let e = ui.err(
        "save_settings",
        json!({"settings": {"server_url": "ftp://x"}}),
    );
    assert_eq!(e["code"], "invalid");
    let s = ui.ok("save_settings", json!({"settings": {"server_url": null}}));
    assert_eq!(s["server_url"], Value::Null);
    assert_eq!(
        ui.ok("sync_status", json!({}))["configured"],
        false,
        "local-only"
    );
    let e = ui.err("save_settings", json!({"settings": {"tokn": "typo"}}));
    assert!(e.to_string().contains("tokn"), "{e}");
}

/// "Join a team" checks what it can before asking a server, and saves nothing when refused.
#[test]
fn join_team_refuses_a_bad_code_name_or_url_in_words_and_saves_nothing() {
    let ui = ui();
    assert_eq!(ui.ok("get_settings", json!({}))["member"], Value::Null);
    let join = |url: &str, code: &str, name: &str| {
        ui.err(
            "join_team",
            json!({"input": {"server_url": url, "code": code, "name": name}}),
        )
    };
    for (url, code, name, says) in [
        (
            "http://127.0.0.1:9",
            "7KQ2-M9XD",
            "bob",
            "is not an invite code",
        ),
        (
            "http://127.0.0.1:9",
            "7KQ2-M9XD-4TRA-Z0PB",
            "1bob",
            "invalid member name",
        ),
        ("ftp://x", "7KQ2-M9XD-4TRA-Z0PB", "bob", "ftp://x"),
    ] {
        let e = join(url, code, name);
        assert_eq!(e["code"], "invalid", "{e}");
        assert!(e["message"].as_str().unwrap().contains(says), "{e}");
    }
    // Nothing listens on port 9: the join fails, and no server or token was kept.
    let e = join("http://127.0.0.1:9", "7KQ2-M9XD-4TRA-Z0PB", "@bob");
    assert_eq!(e["code"], "unreachable", "{e}");
    let s = ui.ok("get_settings", json!({}));
    assert_eq!(
        (&s["server_url"], &s["token_set"], &s["member"]),
        (&Value::Null, &json!(false), &Value::Null)
    );
}

#[test]
fn sync_status_and_sync_now_without_a_loop() {
    let ui = ui();
    ui.add("Queued");
    let s = ui.ok("sync_status", json!({}));
    assert_eq!(s["configured"], false);
    assert_eq!(s["pending"], 1);
    assert_eq!(s["online"], false);
    let e = ui.err("sync_now", json!({}));
    assert_eq!(e["code"], "loop_stopped");
}

#[test]
fn projects_offline_come_from_this_device() {
    let ui = ui();
    ui.add("a");
    ui.ok(
        "create_task",
        json!({"input": {"description": "b", "project": "ops"}}),
    );
    let p = ui.ok("list_projects", json!({}));
    assert_eq!(
        p,
        json!([
            {"prefix": "OPS", "name": "OPS", "local": false},
            {"prefix": "SYN", "name": "SYN", "local": false},
            {"prefix": "INBOX", "name": "Inbox (this device)", "local": true}
        ])
    );
}

/// What the server's change feed would bring: a numbered task (and, with `parent`, a subtask
/// of it), written through a second connection to the same store, as a sync pass writes it.
pub(crate) fn from_server(ui: &Ui, tasks: Value) {
    let tasks: Vec<callsign_core::dto::Task> = serde_json::from_value(tasks).unwrap();
    let mut store = callsign_sync::store::Store::open(ui.dir.path()).unwrap();
    store.apply_changes(&tasks, "c").unwrap();
}

pub(crate) fn server_task(uuid: &str, key: &str, parent: Option<&str>, previous: &[&str]) -> Value {
    let (prefix, number) = key.split_once('-').unwrap();
    let number: u64 = number.rsplit('.').next().unwrap().parse().unwrap();
    json!({
        "uuid": uuid, "key": key, "project": prefix, "number": number,
        "description": format!("Task {key}"), "notes": "", "status": "pending", "tags": [],
        "parent": parent, "previous_keys": previous,
        "created_at": "2026-11-20T10:00:00Z", "modified_at": "2026-11-20T10:00:00Z",
    })
}

/// A numbered task moves at once here (its project), keeps its key until the server's answer
/// brings the next key there, and every old key still finds it; its subtask is refused alone,
/// in words; a task with no key just changes project.
#[test]
fn move_task_moves_a_numbered_task_and_its_old_keys_still_find_it() {
    let ui = ui();
    let (parent, child) = (
        "0b6c3f5e-8d1c-4f6e-9a52-000000000001",
        "0b6c3f5e-8d1c-4f6e-9a52-000000000002",
    );
    from_server(
        &ui,
        json!([
            server_task(parent, "SYN-7", None, &["DEV-2"]),
            server_task(child, "SYN-7.1", Some(parent), &["DEV-2.1"])
        ]),
    );

    let e = ui.err("move_task", json!({"id": "SYN-7.1", "project": "OPS"}));
    assert_eq!(
        e,
        json!({"code": "invalid", "message": "SYN-7.1 is a subtask: it moves with its parent, not alone"})
    );
    let e = ui.err("move_task", json!({"id": "syn 7", "project": "syn"}));
    assert_eq!(e["code"], "invalid");
    assert!(
        e["message"].as_str().unwrap().contains("in SYN already"),
        "{e}"
    );

    let moved = ui.ok("move_task", json!({"id": "syn-7", "project": "ops"}));
    assert_eq!(
        (moved["project"].as_str(), moved["key"].as_str()),
        (Some("OPS"), Some("SYN-7")),
        "the project at once, the key when the server answers"
    );
    assert_eq!(moved["waiting"]["state"], "pending", "{moved}");
    assert_eq!(moved["previous_keys"], json!(["DEV-2"]));

    // The server's answer: OPS-1, the old keys listed; each still finds the task.
    from_server(
        &ui,
        json!([server_task(parent, "OPS-1", None, &["DEV-2", "SYN-7"])]),
    );
    for old in ["SYN-7", "syn 7", "dev2", "OPS-1"] {
        let t = ui.ok("resolve_task", json!({"query": old}));
        assert_eq!(
            (t["uuid"].as_str(), t["key"].as_str()),
            (Some(parent), Some("OPS-1")),
            "{old}"
        );
        assert_eq!(t["previous_keys"], json!(["DEV-2", "SYN-7"]));
    }
    assert_eq!(
        ui.ok("resolve_task", json!({"query": "DEV-2.1"}))["uuid"],
        child
    );

    // No key yet: it just changes project; a provisional subtask is refused alone too.
    let t = ui.add("Provisional");
    let id = t["uuid"].as_str().unwrap().to_owned();
    let sub = ui.ok(
        "create_task",
        json!({"input": {"description": "Its subtask", "parent": id}}),
    );
    let t = ui.ok("move_task", json!({"id": id, "project": "OPS"}));
    assert_eq!(
        (t["project"].as_str(), t["key"].clone()),
        (Some("OPS"), Value::Null)
    );
    let sub = ui.ok("resolve_task", json!({"query": sub["uuid"]}));
    assert_eq!(sub["project"], "OPS", "its subtask goes with it");
    let e = ui.err("move_task", json!({"id": sub["uuid"], "project": "SYN"}));
    assert_eq!(e["code"], "invalid");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("its subtasks go with it"),
        "{e}"
    );
    let e = ui.err("move_task", json!({"id": "SYN-404", "project": "OPS"}));
    assert_eq!(e["code"], "not_found");
}

/// A task the server reports with a conflict: `restore_conflict` brings the replaced value back
/// and queues it, `dismiss_conflict` keeps what is there; each answers the task without it, and
/// a conflict that is not there is refused in words.
#[test]
fn conflicts_are_restored_or_kept() {
    let ui = ui();
    let u = "0b6c3f5e-8d1c-4f6e-9a52-000000000009";
    let mut t = server_task(u, "SYN-9", None, &[]);
    t["conflicts"] = json!([
        {"field": "description", "value": "Fix login redirect", "at": "2026-11-20T10:05:00Z"},
        {"field": "notes", "value": "seen on iOS", "at": "2026-11-20T10:06:00Z"}
    ]);
    from_server(&ui, json!([t]));
    let shown = ui.ok("resolve_task", json!({"query": "SYN-9"}));
    assert_eq!(shown["conflicts"].as_array().map(Vec::len), Some(2));

    let restored = ui.ok("restore_conflict", json!({"id": "syn-9", "index": 0}));
    assert_eq!(restored["description"], "Fix login redirect");
    assert_eq!(
        restored["conflicts"],
        json!([{"field": "notes", "value": "seen on iOS",
        "at": "2026-11-20T10:06:00Z"}])
    );
    assert_eq!(
        restored["waiting"]["state"], "pending",
        "queued for the server"
    );

    let kept = ui.ok("dismiss_conflict", json!({"id": "SYN-9", "field": "notes"}));
    assert_eq!(
        (kept["notes"].as_str(), kept["conflicts"].clone()),
        (Some(""), json!([]))
    );
    let e = ui.err("dismiss_conflict", json!({"id": "SYN-9", "field": "notes"}));
    assert_eq!(
        e,
        json!({"code": "invalid", "message": "SYN-9 has no conflict on its notes"})
    );
    let e = ui.err("restore_conflict", json!({"id": "SYN-9", "index": 3}));
    assert_eq!(e["code"], "invalid");
    let e = ui.err(
        "dismiss_conflict",
        json!({"id": "SYN-9", "field": "colour"}),
    );
    assert_eq!(
        e,
        json!({"code": "invalid", "message": "no field \"colour\""})
    );
}

/// A project is the server's: without one, creating it is refused plainly; a bad prefix gets
/// the server's own rule, checked before anything is sent.
#[test]
fn create_project_needs_a_server_and_a_valid_prefix() {
    let ui = ui();
    let e = ui.err(
        "create_project",
        json!({"name": "Web", "prefix": "1web", "allowSimilar": false}),
    );
    assert_eq!(e["code"], "invalid");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("a prefix is 2-10 characters, a letter first"),
        "{e}"
    );
    let e = ui.err(
        "create_project",
        json!({"name": "Inbox", "prefix": "inbox", "allowSimilar": false}),
    );
    assert_eq!(e["code"], "invalid");
    let e = ui.err(
        "create_project",
        json!({"name": "Web", "prefix": "WEB", "allowSimilar": false}),
    );
    assert_eq!(e["code"], "not_logged_in", "{e}");
    // "Create anyway" sends the flag as the UI spells it; the command takes it.
    let e = ui.err(
        "create_project",
        json!({"name": "Web", "prefix": "WEB", "allowSimilar": true}),
    );
    assert_eq!(e["code"], "not_logged_in", "{e}");
}

/// The desktop prefs: defaults at first, saved to `desktop.json`, a shortcut that cannot be
/// one refused with what to write, and the saved prefs left as they were then.
#[test]
fn desktop_prefs_are_kept_and_a_bad_shortcut_is_refused() {
    let ui = ui();
    let p = ui.ok("get_desktop_prefs", json!({}));
    assert_eq!(
        p,
        json!({"close_to_tray": false, "capture_shortcut": "Ctrl+Alt+Space",
               "notify_failures": true, "notify_keyed": true})
    );
    let saved = ui.ok(
        "save_desktop_prefs",
        json!({"prefs": {"close_to_tray": true, "capture_shortcut": " Super+Shift+N ",
                         "notify_failures": false, "notify_keyed": true}}),
    );
    assert_eq!(saved["capture_shortcut"], "Super+Shift+N");
    let e = ui.err(
        "save_desktop_prefs",
        json!({"prefs": {"close_to_tray": false, "capture_shortcut": "Ctrl+Banana",
                         "notify_failures": true, "notify_keyed": true}}),
    );
    assert_eq!(e["code"], "invalid");
    assert!(
        e["message"].as_str().unwrap().contains("Ctrl+Alt+Space"),
        "{e}"
    );
    assert_eq!(ui.ok("get_desktop_prefs", json!({})), saved);
    let file = std::fs::read_to_string(ui.dir.path().join(crate::prefs::FILE)).unwrap();
    assert!(file.contains("Super+Shift+N"), "{file}");
}

/// The tray's actions by name; an unknown one is refused. No tray exists under the mock
/// runtime, so nothing is shown until a status arrives.
#[test]
fn tray_actions_are_named_and_the_status_is_what_was_shown() {
    let ui = ui();
    let e = ui.err("tray_action", json!({"action": "dance"}));
    assert_eq!(e["code"], "invalid");
    assert_eq!(ui.ok("tray_status", json!({})), Value::Null);
    crate::tray::show(ui.window.app_handle(), crate::tray::Look::Offline(3));
    assert_eq!(
        ui.ok("tray_status", json!({})),
        json!({"state": "offline", "count": 3, "tooltip": "Callsign: Offline: 3 tasks waiting",
               "installed": false})
    );
    assert_eq!(ui.ok("notifications", json!({})), json!([]));
}

/// The filter bar's text is read by callsign-core, as `callsign list` reads its words: the
/// answer is the parsed filter; a word it cannot read is `invalid`, in words.
#[test]
fn parse_filter_reads_the_clis_grammar() {
    let ui = ui();
    ui.add("Fix the login redirect");
    let f = ui.ok(
        "parse_filter",
        json!({"text": "\"fix the\" +Bug -ui #dev status:completed pri:h INBOX-1..3"}),
    );
    assert_eq!(f["words"], json!(["fix the"]));
    assert_eq!(f["tags"], json!(["bug"]));
    assert_eq!(f["not_tags"], json!(["ui"]));
    assert_eq!(f["projects"], json!(["DEV"]));
    assert_eq!(f["statuses"], json!(["completed"]));
    assert_eq!(f["priorities"], json!(["H"]));
    assert_eq!(
        f["keys"],
        json!([{"prefix": "INBOX", "parents": [], "from": 1, "to": 3}])
    );
    let f = ui.ok("parse_filter", json!({"text": "due.before:tomorrow"}));
    assert!(f["due"]["before"].is_string(), "{f}");
    let e = ui.err("parse_filter", json!({"text": "status:open"}));
    assert_eq!(e["code"], "invalid");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("'open' is not a status"),
        "{e}"
    );
}

#[test]
fn a_capture_assigns_and_assign_task_changes_or_clears_it() {
    let ui = ui();
    let t = ui.ok(
        "create_task",
        json!({"input": {"description": "Review notes", "project": "syn", "assignee": "@Bob"}}),
    );
    assert_eq!(t["assignee"], "bob");
    // Stamped by the server: none while provisional.
    assert_eq!(t["created_by"], Value::Null);
    let id = t["uuid"].as_str().unwrap();
    let t = ui.ok("assign_task", json!({"id": id, "name": "carol"}));
    assert_eq!(t["assignee"], "carol");
    let t = ui.ok("assign_task", json!({"id": id, "name": null}));
    assert_eq!(t["assignee"], Value::Null);
    let e = ui.err("assign_task", json!({"id": id, "name": "9lives"}));
    assert_eq!(e["code"], "invalid");
}

#[test]
fn list_members_without_a_server_says_no_team_is_known() {
    let ui = ui();
    assert_eq!(
        ui.ok("list_members", json!({})),
        json!({"members": [], "known": false})
    );
}

#[test]
fn standup_reports_each_member_keys_first_provisional_ones_marked() {
    let ui = ui();
    let t = ui.ok(
        "create_task",
        json!({"input": {"description": "Fix the login redirect", "project": "syn", "assignee": "bob"}}),
    );
    ui.add("Nobody's");
    let s = ui.ok("standup", json!({"since": "yesterday"}));
    assert!(s["since"].is_string(), "{s}");
    let members = s["members"].as_array().unwrap();
    assert_eq!(members.len(), 1, "no team known: only who a task names {s}");
    assert_eq!(members[0]["name"], "bob");
    let open = &members[0]["open"];
    assert_eq!(open.as_array().unwrap().len(), 1, "{s}");
    assert_eq!(open[0]["uuid"], t["uuid"]);
    assert_eq!(open[0]["description"], "Fix the login redirect");
    assert_eq!(open[0]["provisional"], true);
    assert!(open[0]["key"].as_str().unwrap().starts_with('~'), "{s}");
    // No day: the last working day; empty is the same.
    let default = ui.ok("standup", json!({}));
    assert_eq!(default, ui.ok("standup", json!({"since": " "})));
    let e = ui.err("standup", json!({"since": "someday soon"}));
    assert_eq!(e["code"], "invalid");
    assert!(!e["message"].as_str().unwrap().is_empty(), "{e}");
}
