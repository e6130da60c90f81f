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
/// default project is set, makes the first one the default; a default whose project was renamed
/// follows it to its new prefix. Returns the default project.
pub fn remember(store: &Store, list: &[Project]) -> Result<Option<String>> {
    let json = serde_json::to_string(list).unwrap_or_else(|_| "[]".into());
    if store.get(PROJECTS)?.as_deref() != Some(json.as_str()) {
        store.set(PROJECTS, Some(&json))?;
    }
    let mut s = Settings::load(store)?;
    let wanted = match &s.project {
        None => list.first().map(|p| p.prefix.clone()),
        Some(p) => current_prefix(list, p).filter(|now| now != p),
    };
    if wanted.is_some() {
        s.project = wanted;
        s.save(store)?;
    }
    Ok(s.project)
}

/// The prefix the project that `prefix` names (any case; its prefix now or an earlier one)
/// has now, if the list knows it.
pub fn current_prefix(list: &[Project], prefix: &str) -> Option<String> {
    let prefix = prefix.trim().to_ascii_uppercase();
    list.iter()
        .find(|p| p.is_named(&prefix))
        .map(|p| p.prefix.clone())
}

/// The list as last stored (empty before the first answer).
pub fn cached(store: &Store) -> Result<Vec<Project>> {
    Ok(store
        .get(PROJECTS)?
        .and_then(|j| serde_json::from_str(&j).ok())
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(id: i64, prefix: &str, previous: &[&str]) -> Project {
        Project {
            id,
            name: prefix.to_owned(),
            prefix: prefix.to_owned(),
            previous_prefixes: previous.iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn a_renamed_default_project_follows_its_new_prefix() {
        let store = Store::in_memory().unwrap();
        let list = [project(1, "OPS", &[]), project(2, "SYN", &[])];
        assert_eq!(remember(&store, &list).unwrap().as_deref(), Some("OPS"));
        let mut s = Settings::load(&store).unwrap();
        s.project = Some("SYN".into());
        s.save(&store).unwrap();
        let renamed = [project(1, "OPS", &[]), project(2, "SYX", &["SYN"])];
        assert_eq!(remember(&store, &renamed).unwrap().as_deref(), Some("SYX"));
        assert_eq!(cached(&store).unwrap(), renamed);
        assert_eq!(current_prefix(&renamed, "syn").as_deref(), Some("SYX"));
        assert_eq!(current_prefix(&renamed, "OPS").as_deref(), Some("OPS"));
        assert_eq!(current_prefix(&renamed, "DEV"), None);
    }
}
