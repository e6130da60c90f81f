//! `callsign import`: tasks from another tracker, queued as captures under the UUIDs and
//! idempotency keys the importer derived from its source (so a second run of the same file
//! queues nothing), each keeping its tracker key ([`callsign_core::dto::Origin`]), which names it
//! here at once, offline too (`Store::find`).
use callsign_core::dto::NewTask;
use callsign_core::Prefix;

use super::Engine;
use crate::error::{Error, Result};
use crate::store::{ImportQueued, ImportTask};

impl Engine {
    /// Queues the tasks of an import that are not here yet, in one transaction and one undo
    /// step; see [`crate::store::Store::import_local`]. Every task is checked first, as the
    /// server checks a create (`callsign_core::validate::new_task`: a description, the field
    /// rules, a well-formed origin), with a project that is a prefix and a parent that is a
    /// UUID; the first refusal names the task by its 1-based position (`task 3: ...`) and
    /// nothing is written. The body is sent as given, but for the project written as a prefix
    /// (`eng` is `ENG`), the parent's UUID in its usual form, and a missing `created_at` set to
    /// now (the capture time here).
    pub fn import(&self, mut items: Vec<ImportTask>) -> Result<ImportQueued> {
        let now = self.inner.opts.clock.now();
        for (i, item) in items.iter_mut().enumerate() {
            checked(&mut item.body, &item.idempotency_key)
                .map_err(|m| Error::Invalid(format!("task {}: {m}", i + 1)))?;
            item.body.created_at.get_or_insert(now);
        }
        if items.is_empty() {
            return Ok(ImportQueued::default());
        }
        let queued = self.store().import_local(&items, now)?;
        if !queued.is_empty() {
            self.touched(&queued);
        }
        Ok(ImportQueued {
            queued: queued.len(),
            present: items.len() - queued.len(),
        })
    }
}

/// The local checks of one imported task, with its project and parent written as the store
/// keeps them; the refusal's message.
fn checked(body: &mut NewTask, idempotency_key: &str) -> std::result::Result<(), String> {
    callsign_core::validate::idempotency_key(idempotency_key).map_err(|e| e.0)?;
    let prefix = Prefix::parse(body.project.trim()).map_err(|e| format!("project: {e}"))?;
    body.project = prefix.to_string();
    callsign_core::validate::new_task(body).map_err(|e| e.0)?;
    if let Some(p) = &body.parent {
        let parent = uuid::Uuid::parse_str(p.trim())
            .map_err(|_| format!("parent {p:?} is not a task's UUID"))?;
        body.parent = Some(parent.to_string());
    }
    Ok(())
}
