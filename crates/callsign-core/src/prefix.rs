use std::fmt;
use std::str::FromStr;

/// A project's key prefix: 2-10 characters, an ASCII letter first, then ASCII letters or digits.
///
/// Invariant: always stored upper-case, so `syn` and `SYN` are the same prefix.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prefix(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid prefix {input:?}: a prefix is 2-10 characters, a letter first, then letters or digits (e.g. SYN)")]
pub struct PrefixError {
    pub input: String,
}

impl Prefix {
    pub const MIN_LEN: usize = 2;
    pub const MAX_LEN: usize = 10;

    /// Parses a prefix, accepting any case; surrounding whitespace is not accepted.
    pub fn parse(input: &str) -> Result<Self, PrefixError> {
        let err = || PrefixError {
            input: input.to_owned(),
        };
        let len = input.len();
        if !(Self::MIN_LEN..=Self::MAX_LEN).contains(&len) {
            return Err(err());
        }
        let mut chars = input.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
        if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric()) {
            return Err(err());
        }
        Ok(Prefix(input.to_ascii_uppercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The local inbox, [`crate::LOCAL_PROJECT`]: a device's own project, never a server's.
    pub fn is_local(&self) -> bool {
        self.0 == crate::LOCAL_PROJECT
    }
}

impl FromStr for Prefix {
    type Err = PrefixError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Prefix::parse(s)
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for Prefix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Prefix {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Prefix::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("syn", "SYN")]
    #[case("SYN", "SYN")]
    #[case("Ab", "AB")]
    #[case("v2", "V2")]
    #[case("abcdefghij", "ABCDEFGHIJ")]
    fn accepts(#[case] input: &str, #[case] stored: &str) {
        assert_eq!(Prefix::parse(input).unwrap().as_str(), stored);
    }

    #[rstest]
    #[case("")]
    #[case("a")]
    #[case("2ab")]
    #[case("abcdefghijk")]
    #[case("ab-c")]
    #[case(" syn")]
    #[case("sÿn")]
    fn rejects(#[case] input: &str) {
        assert!(Prefix::parse(input).is_err(), "{input:?} accepted");
    }

    #[rstest]
    #[case("inbox", true)]
    #[case("INBOX", true)]
    #[case("INBOX2", false)]
    #[case("SYN", false)]
    fn local_inbox(#[case] input: &str, #[case] local: bool) {
        assert_eq!(Prefix::parse(input).unwrap().is_local(), local);
    }
}
