//! Creating a project and renaming a project's prefix: requests to the server, not queued
//! changes (the server decides whether the prefix is free, and every device learns the new
//! keys from the change feed). The local list of projects follows at once; after a rename the
//! tasks' keys follow with the next sync, and until then, as after it, a lookup by an old key
//! finds its task.
use callsign_core::dto::{Project, ProjectPatch};
use callsign_core::{Prefix, LOCAL_PROJECT};

use super::Engine;
use crate::error::{Error, Result};
use crate::projects;

impl Engine {
    /// Creates a project `name` with `prefix` (any case) on the server. Refusals come back as
    /// the server gave them (`prefix_taken`, `invalid_prefix`, and `prefix_sounds_alike` unless
    /// `allow_similar`: the prefix sounds like another project's, which the message names); the
    /// local inbox's name is refused here.
    pub async fn create_project(
        &self,
        name: &str,
        prefix: &str,
        allow_similar: bool,
    ) -> Result<Project> {
        let prefix =
            Prefix::parse(prefix.trim()).map_err(|e| Error::Invalid(format!("prefix: {e}")))?;
        if prefix.is_local() {
            return Err(Error::Invalid(format!(
                "{LOCAL_PROJECT} is this device's inbox: no server project can take its name"
            )));
        }
        let name = name.trim();
        let name = if name.is_empty() {
            prefix.as_str()
        } else {
            name
        };
        let client = self.client()?;
        let project = client
            .create_project(name, prefix.as_str(), allow_similar)
            .await?;
        self.remember_projects(&client, &project).await?;
        Ok(project)
    }

    /// Keeps the server's list of projects (or, if it cannot be read now, the one we had with
    /// `project` in it).
    async fn remember_projects(
        &self,
        client: &crate::client::Client,
        project: &Project,
    ) -> Result<()> {
        let list = match client.projects().await {
            Ok(list) => list.projects,
            Err(_) => {
                let mut list = projects::cached(&self.store())?;
                list.retain(|p| p.id != project.id);
                list.push(project.clone());
                list.sort_by(|a, b| a.prefix.cmp(&b.prefix));
                list
            }
        };
        projects::remember(&self.store(), &list)?;
        Ok(())
    }

    /// Renames the project `from` (its prefix now, any case) to `to`. Refusals come back as
    /// the server gave them ([`Error::Server`]: `prefix_taken`, `invalid_prefix`,
    /// `project_not_found`, and `prefix_sounds_alike` unless `allow_similar`); the local inbox
    /// cannot be renamed or taken.
    pub async fn rename_project(
        &self,
        from: &str,
        to: &str,
        allow_similar: bool,
    ) -> Result<Project> {
        let parse = |what: &str, p: &str| {
            Prefix::parse(p.trim()).map_err(|e| Error::Invalid(format!("{what}: {e}")))
        };
        let (from, to) = (parse("project", from)?, parse("new prefix", to)?);
        if from.is_local() || to.is_local() {
            return Err(Error::Invalid(format!(
                "{LOCAL_PROJECT} is this device's inbox, not a server project: it cannot be \
                 renamed, and no project can take its name"
            )));
        }
        let client = self.client()?;
        let patch = ProjectPatch {
            prefix: Some(to.to_string()),
            name: None,
            allow_similar,
        };
        let project = client.update_project(from.as_str(), &patch).await?;
        self.remember_projects(&client, &project).await?;
        // A running loop pulls the new keys now.
        self.inner.wake.notify_one();
        Ok(project)
    }
}
