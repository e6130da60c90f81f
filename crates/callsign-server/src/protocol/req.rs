//! The requests the protocol runs, validated by the API (`api::tasks::prepare_create`,
//! `prepare_update`) before they reach it.
use callsign_core::dto::{NewTask, TaskPatch};
use callsign_storage::Witness;
use uuid::Uuid;

/// A validated create: `body.project` is a valid prefix, stored upper-case.
#[derive(Clone)]
pub struct CreateReq {
    pub idem: String,
    pub uuid: Uuid,
    pub body: NewTask,
    /// The keys a device holds for the task, brought back after a rollback: the create binds
    /// them (docs/RECOVERY.md).
    pub witness: Option<Witness>,
}

/// A validated update of a resolved task: a move's `patch.project` is a valid prefix, stored
/// upper-case.
#[derive(Clone)]
pub struct UpdateReq {
    pub idem: String,
    pub uuid: Uuid,
    pub patch: TaskPatch,
}
