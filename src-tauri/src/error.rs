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

    /// An error where the server's refusal is the news (joining a team): its code, and its
    /// title and detail as the message ("Invite code already used: this invite code was used
    /// already …"), without the wrapper's "the server refused the request" or the code in
    /// brackets. Any other error as [`From`] gives it.
    pub fn refusal(e: Error) -> Self {
        match e {
            Error::Server(p) => {
                CmdError::new(p.code.as_str(), format!("{}: {}", p.title, p.detail))
            }
            e => e.into(),
        }
    }
}

impl From<Error> for CmdError {
    fn from(e: Error) -> Self {
        CmdError::new(e.code(), e.to_string())
    }
}

pub type CmdResult<T> = Result<T, CmdError>;

#[cfg(test)]
mod tests {
    use super::*;
    use callsign_core::{ErrorCode, Problem};

    #[test]
    fn a_refusal_reads_as_the_servers_title_and_detail_under_its_code() {
        let used = Problem::new(
            ErrorCode::InviteUsed,
            "this invite code was used already (each works once): ask an owner for a new one",
        );
        let e = CmdError::refusal(Error::Server(used));
        assert_eq!(e.code, "invite_used");
        assert_eq!(
            e.message,
            "Invite code already used: this invite code was used already (each works once): \
             ask an owner for a new one"
        );
        let taken = Problem::new(
            ErrorCode::MemberTaken,
            "the team has or had a member named bob",
        );
        let e = CmdError::refusal(Error::Server(taken));
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            (
                "member_taken",
                "Member name already in use: the team has or had a member named bob"
            )
        );
        let e = CmdError::refusal(Error::Invalid("not an invite code".into()));
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("invalid", "not an invite code")
        );
    }
}
