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
        CmdError::new(e.code(), e.to_string())
    }
}

pub type CmdResult<T> = Result<T, CmdError>;
