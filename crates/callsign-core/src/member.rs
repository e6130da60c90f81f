//! Team members: the handle a person is known by in an account (`@bob`) and their role.
use std::fmt;

/// A member's handle: 1-32 characters, an ASCII letter first, then ASCII letters, digits,
/// `.`, `_` or `-`, and no `.` or `-` at the end (so `@bob.` in a sentence is `bob`).
///
/// Invariant: always stored lower-case, so `@Bob` and `@bob` are the same member.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemberName(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid member name {input:?}: a name is 1-32 characters, a letter first, then letters, \
     digits, '.', '_' or '-' (e.g. alice)"
)]
pub struct MemberNameError {
    pub input: String,
}

impl MemberName {
    pub const MAX_LEN: usize = 32;

    /// Parses a handle in any case; a leading `@` is not part of it.
    pub fn parse(input: &str) -> Result<Self, MemberNameError> {
        let err = || MemberNameError {
            input: input.to_owned(),
        };
        if input.is_empty() || input.len() > Self::MAX_LEN {
            return Err(err());
        }
        let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        let first = input
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic());
        let last = !input.ends_with(['.', '-']);
        if !first || !last || !input.chars().all(ok_char) {
            return Err(err());
        }
        Ok(MemberName(input.to_ascii_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MemberName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for MemberName {
    type Err = MemberNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MemberName::parse(s)
    }
}

impl serde::Serialize for MemberName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for MemberName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        MemberName::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// The member a capture word names: `@bob` (any case), or `None` for any other word.
pub fn mention(word: &str) -> Option<MemberName> {
    MemberName::parse(word.strip_prefix('@')?).ok()
}

/// What a member may do. Owners manage the team (members, invites) and its projects; members
/// work with tasks.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Owner,
    Member,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Member => "member",
        }
    }

    /// `owner` or `member`, as stored and as typed.
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "owner" => Some(Role::Owner),
            "member" => Some(Role::Member),
            _ => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("bob", "bob")]
    #[case("Bob", "bob")]
    #[case("a", "a")]
    #[case("mary-jane", "mary-jane")]
    #[case("j.doe_2", "j.doe_2")]
    fn accepts_handles_and_lowers_them(#[case] input: &str, #[case] name: &str) {
        assert_eq!(MemberName::parse(input).unwrap().as_str(), name);
    }

    #[rstest]
    #[case("")]
    #[case("@bob")]
    #[case("2bob")]
    #[case("bob.")]
    #[case("bob-")]
    #[case("bo b")]
    #[case("bøb")]
    #[case("abcdefghijabcdefghijabcdefghijabc")]
    fn refuses_what_is_not_a_handle(#[case] input: &str) {
        let e = MemberName::parse(input).unwrap_err();
        assert!(e.to_string().contains("invalid member name"), "{e}");
    }

    #[test]
    fn a_mention_is_at_and_a_handle() {
        assert_eq!(mention("@Bob").map(|m| m.to_string()), Some("bob".into()));
        for word in ["bob", "@", "@bob.", "me@bob", "@2x", "@@bob"] {
            assert_eq!(mention(word), None, "{word}");
        }
    }

    /// The fixture the app's tests read too (`ui/tests/mention.test.ts`).
    #[test]
    fn the_shared_cases_read_as_the_app_reads_them() {
        let cases: serde_json::Value =
            serde_json::from_str(include_str!("member_cases.json")).expect("member_cases.json");
        let pairs = |k: &str| -> Vec<(String, Option<String>)> {
            serde_json::from_value(cases[k].clone()).expect(k)
        };
        for (input, want) in pairs("handles") {
            let got = MemberName::parse(&input).ok().map(|m| m.to_string());
            assert_eq!(got, want, "handle {input:?}");
        }
        for (word, want) in pairs("mentions") {
            assert_eq!(
                mention(&word).map(|m| m.to_string()),
                want,
                "mention {word:?}"
            );
        }
    }

    #[test]
    fn roles_read_back_what_they_write() {
        for r in [Role::Owner, Role::Member] {
            assert_eq!(Role::parse(r.as_str()), Some(r));
            assert_eq!(serde_json::to_string(&r).unwrap(), format!("\"{r}\""));
        }
        assert_eq!(Role::parse("admin"), None);
    }
}
