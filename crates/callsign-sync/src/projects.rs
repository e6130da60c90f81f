//! The account's projects as the server last listed them, and the default project learned from
//! them. Written by `login`, by `Engine::projects`, and by the first successful sync pass after a
//! login that could not reach the server.
use callsign_core::dto::Project;

use crate::error::Result;
use crate::settings::Settings;
use crate::store::Store;

/// The cached list (JSON) in the store's `kv` table.
pub const PROJECTS: &str = "server.projects";

/// Stores the list (only when it changed: each write is a synced transaction) and, when no
/// default project is set, makes the first one the default. Returns the default project.
pub fn remember(store: &Store, list: &[Project]) -> Result<Option<String>> {
    let json = serde_json::to_string(list).unwrap_or_else(|_| "[]".into());
    if store.get(PROJECTS)?.as_deref() != Some(json.as_str()) {
        store.set(PROJECTS, Some(&json))?;
    }
    let mut s = Settings::load(store)?;
    if s.project.is_none() {
        s.project = list.first().map(|p| p.prefix.clone());
        if s.project.is_some() {
            s.save(store)?;
        }
    }
    Ok(s.project)
}

/// The list as last stored (empty before the first answer).
pub fn cached(store: &Store) -> Result<Vec<Project>> {
    Ok(store
        .get(PROJECTS)?
        .and_then(|j| serde_json::from_str(&j).ok())
        .unwrap_or_default())
}
