//! The team: joining with an invite code, whose token this device holds, the members, and
//! invites. Who this device is ([`Engine::me`]) is learned at login or join and kept, so an
//! offline `list --mine` still knows.
use std::time::Duration;

use callsign_core::dto::{Invite, JoinRequest, Member, NewInvite};
use callsign_core::{MemberName, Role};

use super::{Engine, LoginReport};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::settings::{validate_url, Token};

/// Where the member this device's token belongs to is kept (JSON `{name, role}`).
const MEMBER: &str = "team.member";
/// How long a login waits to learn whose the token is (the login is saved regardless).
const ME_WAIT: Duration = Duration::from_secs(5);

/// What `join` did: who this device is now, and the login that followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinReport {
    pub member: Member,
    pub login: LoginReport,
}

impl Engine {
    /// The member this device's token belongs to, as last learned from the server (`None`
    /// with no server, or before a login that could ask).
    pub fn me(&self) -> Result<Option<Member>> {
        let raw: Option<String> = self.store().get(MEMBER)?;
        Ok(raw.and_then(|j| serde_json::from_str(&j).ok()))
    }

    fn remember_me(&self, member: Option<&Member>) -> Result<()> {
        let json = member.map(|m| serde_json::to_string(m).expect("a member serializes"));
        self.store().set(MEMBER, json.as_deref())
    }

    /// Asks the server whose the token is and keeps the answer (forgets the old one first, so
    /// a new token never shows the last one's name).
    pub(crate) async fn learn_me(&self) -> std::result::Result<Member, String> {
        self.remember_me(None).map_err(|e| e.to_string())?;
        let client = self.client().map_err(|e| e.to_string())?;
        let me = match tokio::time::timeout(ME_WAIT, client.me()).await {
            Ok(r) => r.map_err(|e| e.error.to_string())?,
            Err(_) => return Err(format!("no answer within {} s", ME_WAIT.as_secs())),
        };
        self.remember_me(Some(&me)).map_err(|e| e.to_string())?;
        Ok(me)
    }

    /// Redeems an invite code at `url` as the new member `name`, then logs in with the token
    /// it gives (as [`Engine::login`]). The code and name are checked here first, so a typo is
    /// a readable error without a request.
    pub async fn join(
        &self,
        url: &str,
        code: &str,
        name: &str,
        device: Option<String>,
    ) -> Result<JoinReport> {
        let url = url.trim().trim_end_matches('/');
        validate_url(url)?;
        callsign_core::invite::normalize(code.trim()).map_err(|e| Error::Invalid(e.to_string()))?;
        let name = name.trim().trim_start_matches('@');
        MemberName::parse(name).map_err(|e| Error::Invalid(e.to_string()))?;
        let req = JoinRequest {
            code: code.trim().to_owned(),
            name: name.to_owned(),
            device: device.clone().or_else(|| self.settings().ok()?.device_name),
        };
        let joined = Client::anonymous(url)?.join(&req).await?;
        let login = self.login(url, Token::new(joined.token), device).await?;
        self.remember_me(Some(&joined.member))?;
        Ok(JoinReport {
            member: joined.member,
            login,
        })
    }

    /// The team's current members, from the server.
    pub async fn members(&self) -> Result<Vec<Member>> {
        Ok(self.client()?.members().await?.members)
    }

    /// A new invite code (owners only; the server answers `403 forbidden` to others).
    pub async fn invite(&self, role: Role, expires_in_hours: Option<u32>) -> Result<Invite> {
        let req = NewInvite {
            role: Some(role),
            expires_in_hours,
        };
        Ok(self.client()?.invite(&req).await?)
    }
}
