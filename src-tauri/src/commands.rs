//! The Tauri commands: each one is a short adapter that calls the engine and maps the error.
//! Nothing here decides anything the engine or the UI should decide.
use callsign_core::dto::{TaskPatch, TaskStatus};
use callsign_core::merge::Field;
use callsign_core::{when, TaskKey, LOCAL_PROJECT};
use callsign_sync::settings::load_token;
use callsign_sync::standup::Standup;
use callsign_sync::{Engine, LocalTask, NewTaskInput, Settings, TaskFilter, Token};
use tauri::State;

use crate::dto::{
    CreateInput, EditInput, JoinInput, ListFilter, SettingsInput, UiMembers, UiPage, UiProject,
    UiSettings, UiStatus, UiTask,
};
use crate::error::{CmdError, CmdResult};

/// The app's state: the engine, opened at start-up on the shared data dir.
pub struct AppEngine(pub Engine);

fn view(engine: &Engine, tasks: Vec<LocalTask>) -> CmdResult<Vec<UiTask>> {
    // A task's view needs whether the server answered last, not the counts.
    let status = engine.connection()?;
    let logged_in = engine.settings()?.server_url.is_some() && engine.has_token()?;
    Ok(tasks
        .into_iter()
        .map(|t| UiTask::new(t, &status, logged_in))
        .collect())
}

fn one(engine: &Engine, task: LocalTask) -> CmdResult<UiTask> {
    Ok(view(engine, vec![task])?.remove(0))
}

/// The filter bar's text as callsign-core reads it: the grammar of `callsign list FILTER`
/// (words, +tag, -tag, #PFX, status:, due.before:, priority:, keys and key ranges), dates in this
/// machine's time zone. The UI applies the answer to its loaded list. A word it cannot read is
/// `invalid`, saying why.
#[tauri::command]
pub fn parse_filter(
    engine: State<'_, AppEngine>,
    text: String,
) -> CmdResult<callsign_core::filter::Filter> {
    Ok(engine
        .0
        .parse_filter(&callsign_core::grammar::split(&text))?)
}

/// Newest first. `status` defaults to pending; `text` matches description, notes, key and
/// tags, ignoring case.
#[tauri::command]
pub fn list_tasks(
    engine: State<'_, AppEngine>,
    filter: Option<ListFilter>,
) -> CmdResult<Vec<UiTask>> {
    let f = filter.unwrap_or_default();
    let wanted = match f.status.as_deref().unwrap_or("pending") {
        "all" => None,
        s => Some(TaskStatus::parse(s).ok_or_else(|| {
            CmdError::new(
                "invalid",
                format!("unknown status {s:?}: use pending, completed, deleted or all"),
            )
        })?),
    };
    let text = f
        .text
        .map(|t| t.trim().to_lowercase())
        .filter(|t| !t.is_empty());
    let project = f
        .project
        .map(|p| p.trim().to_ascii_uppercase())
        .filter(|p| !p.is_empty());
    let mut tasks: Vec<LocalTask> = engine
        .0
        .list(TaskFilter { all: true })?
        .into_iter()
        .filter(|t| wanted.is_none_or(|s| t.status == s))
        .filter(|t| project.as_ref().is_none_or(|p| t.project == *p))
        .filter(|t| {
            text.as_ref().is_none_or(|q| {
                t.description.to_lowercase().contains(q)
                    || t.notes.to_lowercase().contains(q)
                    || t.key.as_ref().is_some_and(|k| k.to_lowercase().contains(q))
                    || t.tags.iter().any(|g| g.to_lowercase().contains(q))
            })
        })
        .collect();
    tasks.reverse();
    view(&engine.0, tasks)
}

/// One page of every task, newest first (the order `list_tasks` gives), and the total: the UI
/// paints its first screenful from a small first page, then loads the rest.
#[tauri::command]
pub fn list_tasks_page(
    engine: State<'_, AppEngine>,
    offset: usize,
    limit: usize,
) -> CmdResult<UiPage> {
    let (tasks, total) = engine.0.page(offset, limit.min(PAGE_MAX))?;
    Ok(UiPage {
        tasks: view(&engine.0, tasks)?,
        total,
    })
}

/// The largest page `list_tasks_page` answers.
const PAGE_MAX: usize = 10_000;

#[tauri::command]
pub fn create_task(engine: State<'_, AppEngine>, input: CreateInput) -> CmdResult<UiTask> {
    let task = engine.0.create(NewTaskInput {
        description: input.description,
        project: input.project,
        notes: input.notes,
        tags: input.tags,
        due: input
            .due
            .as_deref()
            .map(|d| engine.0.parse_due(d))
            .transpose()?
            .flatten(),
        priority: input
            .priority
            .as_deref()
            .map(when::parse_priority_or_none)
            .transpose()
            .map_err(invalid)?
            .flatten(),
        parent: input.parent,
        assignee: input
            .assignee
            .as_deref()
            .map(|a| engine.0.assignee(a))
            .transpose()?,
    })?;
    one(&engine.0, task)
}

/// A field the user typed that does not parse: the message says which forms it takes.
fn invalid(e: when::WhenError) -> CmdError {
    CmdError::new("invalid", e.to_string())
}

#[tauri::command]
pub fn edit_task(engine: State<'_, AppEngine>, id: String, patch: EditInput) -> CmdResult<UiTask> {
    let due = patch
        .due
        .as_deref()
        .map(|d| engine.0.parse_due(d))
        .transpose()?;
    let priority = patch
        .priority
        .as_deref()
        .map(when::parse_priority_or_none)
        .transpose()
        .map_err(invalid)?;
    let patch = TaskPatch {
        description: patch.description,
        notes: patch.notes,
        tags: patch.tags,
        status: None,
        due,
        priority,
        ..TaskPatch::default()
    };
    let task = engine.0.edit(&id, patch)?;
    one(&engine.0, task)
}

/// Assigns the task to a member (`bob` or `@bob`; one of the team as last listed, any handle
/// while none is known), or to nobody with `null`: an edit, queued and synced like any other.
#[tauri::command]
pub fn assign_task(
    engine: State<'_, AppEngine>,
    id: String,
    name: Option<String>,
) -> CmdResult<UiTask> {
    let task = engine.0.assign(&id, name.as_deref())?;
    one(&engine.0, task)
}

#[tauri::command]
pub fn complete_task(engine: State<'_, AppEngine>, id: String) -> CmdResult<UiTask> {
    let task = engine.0.complete(&id)?;
    one(&engine.0, task)
}

#[tauri::command]
pub fn reopen_task(engine: State<'_, AppEngine>, id: String) -> CmdResult<UiTask> {
    let patch = TaskPatch {
        status: Some(TaskStatus::Pending),
        ..TaskPatch::default()
    };
    let task = engine.0.edit(&id, patch)?;
    one(&engine.0, task)
}

#[tauri::command]
pub fn delete_task(engine: State<'_, AppEngine>, id: String) -> CmdResult<UiTask> {
    let task = engine.0.delete(&id)?;
    one(&engine.0, task)
}

/// Jump-to-key: a key (`syn 42`, `SYN-42`, `syn42`), a UUID, or a UUID prefix of 8+ digits.
#[tauri::command]
pub fn resolve_task(engine: State<'_, AppEngine>, query: String) -> CmdResult<UiTask> {
    match engine.0.get(&query) {
        Ok(task) => one(&engine.0, task),
        Err(callsign_sync::Error::NotFound(_)) => {
            let shown =
                TaskKey::parse(&query).map_or_else(|_| query.trim().to_owned(), |k| k.to_string());
            Err(CmdError::new("not_found", format!("No task {shown}")))
        }
        Err(e) => Err(e.into()),
    }
}

#[tauri::command]
pub fn retry_task(engine: State<'_, AppEngine>, id: String) -> CmdResult<UiTask> {
    let task = engine.0.retry(&id)?;
    one(&engine.0, task)
}

/// Brings back the value of the task's conflict number `index` (0-based, as the task lists
/// them): another device's edit of the same field had replaced it.
#[tauri::command]
pub fn restore_conflict(
    engine: State<'_, AppEngine>,
    id: String,
    index: usize,
) -> CmdResult<UiTask> {
    let task = engine.0.restore_conflict(&id, index)?;
    one(&engine.0, task)
}

/// Keeps the field's current value and clears its conflicts.
#[tauri::command]
pub fn dismiss_conflict(
    engine: State<'_, AppEngine>,
    id: String,
    field: String,
) -> CmdResult<UiTask> {
    let field = Field::parse(&field)
        .ok_or_else(|| CmdError::new("invalid", format!("no field {field:?}")))?;
    let task = engine.0.dismiss_conflicts(&id, field)?;
    one(&engine.0, task)
}

/// Gives a task the server has not numbered another project (a refused one is sent again).
#[tauri::command]
pub fn set_task_project(
    engine: State<'_, AppEngine>,
    id: String,
    project: String,
) -> CmdResult<UiTask> {
    let task = engine.0.set_project(&id, &project)?;
    one(&engine.0, task)
}

/// Moves any task to another project. A numbered one keeps its key until the server answers
/// with the next number there (its subtasks follow under the new key) and lists the old key in
/// `previous_keys`, which still finds it; one with no key just changes project (a refused one
/// is sent again). A subtask alone is refused (`invalid`): it moves with its parent.
#[tauri::command]
pub fn move_task(engine: State<'_, AppEngine>, id: String, project: String) -> CmdResult<UiTask> {
    let task = engine.0.set_project(&id, &project)?;
    one(&engine.0, task)
}

/// `null` when the task is gone from this device (a `task-removed` event follows).
#[tauri::command]
pub fn discard_task(engine: State<'_, AppEngine>, id: String) -> CmdResult<Option<UiTask>> {
    match engine.0.discard(&id)? {
        Some(task) => one(&engine.0, task).map(Some),
        None => Ok(None),
    }
}

/// Sends the local inbox's tasks to a server project; how many were queued.
#[tauri::command]
pub fn send_inbox(engine: State<'_, AppEngine>, project: String) -> CmdResult<usize> {
    Ok(engine.0.send_inbox(&project)?)
}

fn settings_view(engine: &Engine) -> CmdResult<UiSettings> {
    let s = engine.settings()?;
    let token = load_token(engine.data_dir())?;
    let hint = token.map(|t| {
        let t = t.expose();
        let tail: String = t
            .chars()
            .rev()
            .take(4)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("…{tail}")
    });
    Ok(UiSettings {
        server_url: s.server_url,
        device_name: s.device_name.unwrap_or_default(),
        token_set: hint.is_some(),
        token_hint: hint,
        project: s.project,
        member: engine.me()?,
    })
}

#[tauri::command]
pub fn get_settings(engine: State<'_, AppEngine>) -> CmdResult<UiSettings> {
    settings_view(&engine.0)
}

/// Saves what is given; a JSON `null` server URL makes the app local-only. When a server and a
/// token are set and either changed, this logs in as `callsign login` does (the change cursor
/// starts over, the account's projects are fetched and the first becomes the default project
/// if none is set); an unreachable server does not stop the settings from being saved.
#[tauri::command]
pub async fn save_settings(
    engine: State<'_, AppEngine>,
    settings: SettingsInput,
) -> CmdResult<UiSettings> {
    let engine = &engine.0;
    let mut s: Settings = engine.settings()?;
    let before = (s.server_url.clone(), load_token(engine.data_dir())?);
    if let Some(url) = settings.server_url {
        let url = url
            .map(|u| u.trim().trim_end_matches('/').to_owned())
            .filter(|u| !u.is_empty());
        if let Some(u) = &url {
            if !(u.starts_with("http://") || u.starts_with("https://"))
                || u.contains(char::is_whitespace)
            {
                return Err(CmdError::new(
                    "invalid",
                    format!("{u:?} is not a server URL: use http://host:port or https://host"),
                ));
            }
        }
        s.server_url = url;
    }
    if let Some(d) = settings.device_name {
        s.device_name = Some(d.trim().to_owned()).filter(|d| !d.is_empty());
    }
    if let Some(p) = settings.project {
        let p = callsign_core::Prefix::parse(p.trim())
            .map_err(|e| CmdError::new("invalid", e.to_string()))?;
        s.project = Some(p.to_string());
    }
    let token = match settings.token {
        Some(t) => {
            let t = t.trim();
            if t.is_empty() || t.contains(char::is_whitespace) {
                return Err(CmdError::new("invalid", "the token is empty or has spaces"));
            }
            Some(Token::new(t))
        }
        None => before.1.clone(),
    };
    engine.set_settings(&s)?;
    match (&s.server_url, token) {
        (Some(url), Some(token)) if (Some(url.clone()), Some(token.clone())) != before => {
            engine.login(url, token, s.device_name.clone()).await?;
        }
        (_, Some(token)) => engine.set_token(&token)?,
        _ => {}
    }
    engine.network_up();
    settings_view(engine)
}

/// "Join a team": redeems an owner's invite code at `server_url` as the new member `name`, and
/// logs this device in with the member's own token (as `callsign join` does; the server URL and
/// token are saved, the account's projects fetched). The server's refusals keep their code
/// (`invite_used`, `invite_expired`, `invite_not_found`, `member_taken`) and read as its title
/// and detail; a code or name that cannot be one is `invalid` before any request. Nothing is
/// saved when it is refused.
#[tauri::command]
pub async fn join_team(engine: State<'_, AppEngine>, input: JoinInput) -> CmdResult<UiSettings> {
    let engine = &engine.0;
    let device = input
        .device_name
        .map(|d| d.trim().to_owned())
        .filter(|d| !d.is_empty());
    engine
        .join(&input.server_url, &input.code, &input.name, device)
        .await
        .map_err(CmdError::refusal)?;
    engine.network_up();
    settings_view(engine)
}

#[tauri::command]
pub async fn sync_now(engine: State<'_, AppEngine>) -> CmdResult<()> {
    engine.0.sync_now().await?;
    Ok(())
}

/// The team's members: fresh from the server when it answers, else as last listed (offline,
/// or no server: the last list, empty when there never was one). `known` says whether any list
/// was ever had: without one, `@name` takes any handle.
#[tauri::command]
pub async fn list_members(engine: State<'_, AppEngine>) -> CmdResult<UiMembers> {
    let engine = &engine.0;
    let fresh = if engine.settings()?.server_url.is_some() && engine.has_token()? {
        engine.members().await.ok()
    } else {
        None
    };
    let members = match fresh {
        Some(m) => Some(m),
        None => engine.known_members()?,
    };
    Ok(UiMembers {
        known: members.is_some(),
        members: members.unwrap_or_default(),
    })
}

/// The standup `callsign standup` prints, from the tasks on this device: per member (the team
/// as last listed, and anyone a task names), what they completed and created since the start
/// of `since` (`yesterday`, a date, any day a due date takes; none or empty: the last working
/// day) and what is open and assigned to them, keys first. A day it cannot read is `invalid`,
/// naming the forms it takes.
#[tauri::command]
pub fn standup(engine: State<'_, AppEngine>, since: Option<String>) -> CmdResult<Standup> {
    let since = since.as_deref().map(str::trim).filter(|s| !s.is_empty());
    Ok(engine.0.standup(since)?)
}

#[tauri::command]
pub fn sync_status(engine: State<'_, AppEngine>) -> CmdResult<UiStatus> {
    Ok(UiStatus::read(&engine.0)?)
}

/// The account's projects (fresh from the server, else as last seen; before the server has
/// ever listed them, the prefixes of this device's tasks), and this device's inbox when there is
/// no server or tasks wait in it. No prefix twice.
#[tauri::command]
pub async fn list_projects(engine: State<'_, AppEngine>) -> CmdResult<Vec<UiProject>> {
    let engine = &engine.0;
    let mut listed: Vec<(String, String)> = engine
        .projects()
        .await?
        .into_iter()
        .map(|p| (p.prefix, p.name))
        .collect();
    if listed.is_empty() {
        listed = engine
            .list(TaskFilter { all: true })?
            .into_iter()
            .filter(|t| !t.is_local())
            .map(|t| (t.project.clone(), t.project))
            .chain(engine.settings()?.project.map(|p| (p.clone(), p)))
            .collect();
        listed.sort();
    }
    let mut out: Vec<UiProject> = Vec::new();
    for (prefix, name) in listed {
        if prefix != LOCAL_PROJECT && !out.iter().any(|o| o.prefix == prefix) {
            out.push(UiProject {
                prefix,
                name,
                local: false,
            });
        }
    }
    let status = UiStatus::read(engine)?;
    if !status.configured || status.local > 0 || out.is_empty() {
        out.push(UiProject {
            prefix: LOCAL_PROJECT.to_owned(),
            name: "Inbox (this device)".to_owned(),
            local: true,
        });
    }
    Ok(out)
}

/// Creates a server project (`callsign project add`): the prefix is checked by the same rule
/// and message as the server's, and the server's refusals (`prefix_taken`, and
/// `prefix_sounds_alike` unless `allowSimilar`, as the UI spells `allow_similar`) come back as
/// it gave them. Without a server this is refused (`not_logged_in`): a project is the server's.
#[tauri::command]
pub async fn create_project(
    engine: State<'_, AppEngine>,
    name: String,
    prefix: String,
    allow_similar: bool,
) -> CmdResult<UiProject> {
    let p = engine
        .0
        .create_project(&name, &prefix, allow_similar)
        .await?;
    Ok(UiProject {
        prefix: p.prefix,
        name: p.name,
        local: false,
    })
}
