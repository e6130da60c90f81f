//! The team: joining with an invite code, whose token this device holds, the members, and
//! invites. Who this device is ([`Engine::me`]) is learned at login or join and kept, so an
//! offline `list --mine` still knows.
use std::time::Duration;

use callsign_core::dto::{Invite, JoinRequest, Member, NewInvite, TaskPatch};
use callsign_core::{MemberName, Role};

use super::drain::LoginReport;
use super::Engine;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::model::LocalTask;
use crate::settings::{validate_url, Token};

/// Where the member this device's token belongs to is kept (JSON `{name, role}`).
const MEMBER: &str = "team.member";
/// The team's members as last listed (JSON `[{name, role}]`), for offline checks of `@name`.
const MEMBERS: &str = "team.members";
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
        self.store().set(MEMBERS, None).map_err(|e| e.to_string())?;
        let client = self.client().map_err(|e| e.to_string())?;
        let me = match tokio::time::timeout(ME_WAIT, client.me()).await {
            Ok(r) => r.map_err(|e| e.error.to_string())?,
            Err(_) => return Err(format!("no answer within {} s", ME_WAIT.as_secs())),
        };
        self.remember_me(Some(&me)).map_err(|e| e.to_string())?;
        if let Ok(Ok(list)) = tokio::time::timeout(ME_WAIT, client.members()).await {
            self.remember_members(&list.members)
                .map_err(|e| e.to_string())?;
        }
        Ok(me)
    }

    /// The team's members as last listed by the server (`None` before any list).
    pub fn known_members(&self) -> Result<Option<Vec<Member>>> {
        let raw: Option<String> = self.store().get(MEMBERS)?;
        Ok(raw.and_then(|j| serde_json::from_str(&j).ok()))
    }

    fn remember_members(&self, members: &[Member]) -> Result<()> {
        let json = serde_json::to_string(members).expect("members serialize");
        self.store().set(MEMBERS, Some(&json))
    }

    /// `name` (with or without `@`, any case) as an assignee: a handle, and a member of the
    /// team as last listed (any handle while no list is known; the server checks it again).
    pub fn assignee(&self, name: &str) -> Result<String> {
        let name = MemberName::parse(name.trim().trim_start_matches('@'))
            .map_err(|e| Error::Invalid(e.to_string()))?;
        if let Some(members) = self.known_members()? {
            if !members.iter().any(|m| m.name == name.as_str()) {
                let names: Vec<String> = members.iter().map(|m| format!("@{}", m.name)).collect();
                return Err(Error::Invalid(format!(
                    "@{name} is not a member of the team ({})",
                    names.join(", ")
                )));
            }
        }
        Ok(name.to_string())
    }

    /// The words of a capture without its `@name` mentions of members, and the member the
    /// last one names (a mention of someone not in the team stays a word when the team is
    /// known, as `#PFX` does for an unknown project).
    pub fn take_assignee(&self, words: &[String]) -> Result<(Vec<String>, Option<String>)> {
        let members = self.known_members()?;
        let mut rest = Vec::new();
        let mut assignee = None;
        for w in words {
            let named = callsign_core::mention(w).filter(|m| {
                members
                    .as_ref()
                    .is_none_or(|ms| ms.iter().any(|x| x.name == m.as_str()))
            });
            match named {
                Some(m) => assignee = Some(m.to_string()),
                None => rest.push(w.clone()),
            }
        }
        Ok((rest, assignee))
    }

    /// Assigns the task to a member (`None`: to nobody): an edit, queued like any other.
    pub fn assign(&self, task_ref: &str, name: Option<&str>) -> Result<LocalTask> {
        let assignee = name.map(|n| self.assignee(n)).transpose()?;
        let patch = TaskPatch {
            assignee: Some(assignee),
            ..TaskPatch::default()
        };
        self.edit(task_ref, patch)
    }

    /// The standup since the start of `since` (`yesterday`, a date, any day `due:` takes; by
    /// default the last working day), in local time, from the tasks on this device.
    pub fn standup(&self, since: Option<&str>) -> Result<crate::standup::Standup> {
        use chrono::{Local, TimeZone};
        let day = match since {
            Some(text) => self
                .parse_due(text)?
                .ok_or_else(|| {
                    Error::Invalid("a standup needs a day to start from, such as yesterday".into())
                })?
                .with_timezone(&Local)
                .date_naive(),
            None => crate::standup::last_working_day(
                self.inner
                    .opts
                    .clock
                    .now()
                    .with_timezone(&Local)
                    .date_naive(),
            ),
        };
        let start = day.and_hms_opt(0, 0, 0).expect("midnight exists");
        let start = Local
            .from_local_datetime(&start)
            .earliest()
            .unwrap_or_else(|| Local.from_utc_datetime(&start))
            .with_timezone(&chrono::Utc);
        let tasks = self.query(&crate::store::TaskQuery {
            all: true,
            ..Default::default()
        })?;
        let members: Vec<String> = self
            .known_members()?
            .unwrap_or_default()
            .into_iter()
            .map(|m| m.name)
            .collect();
        let me = self.me()?.map(|m| m.name);
        Ok(crate::standup::standup(
            &tasks,
            &members,
            me.as_deref(),
            start,
        ))
    }

    /// The tasks assigned to this device's member, of `tasks`.
    pub fn mine(&self, tasks: Vec<LocalTask>) -> Result<Vec<LocalTask>> {
        let me = self.me()?.ok_or_else(|| {
            Error::Invalid(
                "this device does not know who you are yet: log in or join a team (with the \
                 server reachable) first"
                    .into(),
            )
        })?;
        Ok(tasks
            .into_iter()
            .filter(|t| t.assignee.as_deref() == Some(me.name.as_str()))
            .collect())
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
        if self.me()?.is_none() {
            self.remember_me(Some(&joined.member))?;
        }
        Ok(JoinReport {
            member: joined.member,
            login,
        })
    }

    /// The team's current members, from the server (kept for offline checks).
    pub async fn members(&self) -> Result<Vec<Member>> {
        let members = self.client()?.members().await?.members;
        self.remember_members(&members)?;
        Ok(members)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::NewTaskInput;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    fn member(name: &str) -> Member {
        Member {
            name: name.into(),
            role: Role::Member,
        }
    }

    #[test]
    fn a_mention_assigns_a_member_of_the_team_as_last_listed() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::open(dir.path()).unwrap();
        let (rest, who) = e.take_assignee(&words("Fix it @Bob now")).unwrap();
        assert_eq!(
            (rest.join(" "), who.as_deref()),
            ("Fix it now".into(), Some("bob"))
        );
        e.remember_members(&[member("alice"), member("bob")])
            .unwrap();
        let (rest, who) = e.take_assignee(&words("Ask @carol then @alice")).unwrap();
        assert_eq!(
            (rest.join(" "), who.as_deref()),
            ("Ask @carol then".into(), Some("alice"))
        );
        let err = e.assignee("@carol").unwrap_err().to_string();
        assert!(
            err.contains("not a member") && err.contains("@alice, @bob"),
            "{err}"
        );
        assert_eq!(e.assignee("BOB").unwrap(), "bob");
    }

    #[test]
    fn assigning_is_an_edit_that_folds_into_the_unsent_create_and_undoes() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::open(dir.path()).unwrap();
        let t = e
            .create(NewTaskInput {
                description: "Ship".into(),
                project: Some("DEV".into()),
                assignee: Some("alice".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(t.assignee.as_deref(), Some("alice"));
        let t = e.assign(&t.uuid.to_string(), Some("@bob")).unwrap();
        assert_eq!(t.assignee.as_deref(), Some("bob"));
        let rows = e.store().rows_for_test(t.uuid);
        assert_eq!(rows.len(), 1, "folded into the create");
        assert_eq!(rows[0].body["assignee"], "bob");
        let err = e.mine(vec![t.clone()]).unwrap_err().to_string();
        assert!(err.contains("log in or join"), "{err}");
        e.remember_me(Some(&member("bob"))).unwrap();
        assert_eq!(e.mine(vec![t.clone()]).unwrap().len(), 1);
        e.undo().unwrap();
        let back = e.get(&t.uuid.to_string()).unwrap();
        assert_eq!(back.assignee.as_deref(), Some("alice"), "undone");
        assert!(e.mine(vec![back]).unwrap().is_empty());
        let none = e.assign(&t.uuid.to_string(), None).unwrap();
        assert_eq!(none.assignee, None);
    }
}
