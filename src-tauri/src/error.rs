//! The one error every command returns: `{code, message}`, where `code` is stable (the UI
//! matches on it) and `message` is written for a person.
use callsign_sync::Error;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CmdError {
    pub code: String,
    pub message: String,
}

impl CmdError {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        CmdError {
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

impl From<Error> for CmdError {
    fn from(e: Error) -> Self {
        let code = match &e {
            Error::NotFound(_) => "not_found",
            Error::Ambiguous(_) => "ambiguous",
            Error::Invalid(_) => "invalid",
            Error::NotLoggedIn => "not_logged_in",
            Error::Unreachable { .. } => "unreachable",
            Error::Server(p) => p.code.as_str(),
            Error::Protocol(_) => "protocol",
            Error::Busy { .. } => "busy",
            Error::StillQueued { .. } => "still_queued",
            Error::LoopStopped => "loop_stopped",
            Error::Db(_) | Error::Migration(_) | Error::Io { .. } => "storage",
        };
        CmdError::new(code, e.to_string())
    }
}

pub type CmdResult<T> = Result<T, CmdError>;
