use std::fmt;
use std::str::FromStr;

use crate::{Prefix, MAX_NUMBER};

/// A task's short key: a project prefix and a number, shown as `SYN-42`.
///
/// Numbers start at 1. The server hands them out per project without gaps; a key, once handed
/// out, names that one task forever.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskKey {
    pub prefix: Prefix,
    pub number: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a task key: expected PREFIX-N, e.g. SYN-42 (also accepted: syn-42, SYN 42, syn42)")]
pub struct KeyError {
    pub input: String,
}

impl TaskKey {
    pub fn new(prefix: Prefix, number: u64) -> Self {
        TaskKey { prefix, number }
    }

    /// Parses the key form leniently: `SYN-42`, `syn-42`, `SYN 42`, `syn42`, surrounding spaces.
    ///
    /// Grammar: `PREFIX SEP? N`, with at most one separator, `-` or a single space, between
    /// prefix and number (DESIGN.md section 9); `SYN--1`, `SYN - 1` or a tab are not keys.
    /// Without a separator the prefix is everything up to the last letter, so a prefix that
    /// ends in a digit (`V2`) needs one (`v2-5`). Number 0, leading `+`, and numbers past
    /// [`MAX_NUMBER`] are rejected.
    pub fn parse(input: &str) -> Result<Self, KeyError> {
        let err = || KeyError {
            input: input.to_owned(),
        };
        let s = input.trim();
        let (prefix, digits) = match s.find(['-', ' ']) {
            // Both separators are one byte; what follows must be the number alone.
            Some(at) => (&s[..at], &s[at + 1..]),
            None => {
                let at = s
                    .rfind(|c: char| c.is_ascii_alphabetic())
                    .map_or(0, |i| i + 1);
                s.split_at(at)
            }
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        let number: u64 = digits.parse().map_err(|_| err())?;
        if number == 0 || number > MAX_NUMBER {
            return Err(err());
        }
        let prefix = Prefix::parse(prefix).map_err(|_| err())?;
        Ok(TaskKey { prefix, number })
    }
}

impl FromStr for TaskKey {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TaskKey::parse(s)
    }
}

impl fmt::Display for TaskKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.prefix, self.number)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    #[rstest]
    #[case("SYN-42", "SYN", 42)]
    #[case("syn-42", "SYN", 42)]
    #[case("SYN 42", "SYN", 42)]
    #[case("syn42", "SYN", 42)]
    #[case("  Syn7 ", "SYN", 7)]
    #[case("v2-5", "V2", 5)]
    #[case("v2x5", "V2X", 5)]
    #[case("SYN-007", "SYN", 7)]
    fn parses(#[case] input: &str, #[case] prefix: &str, #[case] number: u64) {
        let k = TaskKey::parse(input).unwrap();
        assert_eq!((k.prefix.as_str(), k.number), (prefix, number));
    }

    #[rstest]
    #[case("hello")]
    #[case("SYN-")]
    #[case("SYN-0")]
    #[case("-42")]
    #[case("42")]
    #[case("S-42")]
    #[case("SYN-+4")]
    #[case("SYN-4x")]
    #[case("SYN-99999999999999999999")]
    #[case("SYN--1")]
    #[case("SYN---1")]
    #[case("SYN\t-\n1")]
    #[case("SYN\t1")]
    #[case("SYN  1")]
    #[case("SYN -1")]
    #[case("SYN- 1")]
    #[case("syn  -  7")]
    #[case("SYN-1-2")]
    fn rejects(#[case] input: &str) {
        assert!(TaskKey::parse(input).is_err(), "{input:?} accepted");
    }

    pub(crate) fn any_key() -> impl Strategy<Value = TaskKey> {
        ("[A-Za-z][A-Za-z0-9]{1,9}", 1..=MAX_NUMBER)
            .prop_map(|(p, n)| TaskKey::new(Prefix::parse(&p).unwrap(), n))
    }

    proptest! {
        #[test]
        fn parse_display_roundtrip(k in any_key()) {
            prop_assert_eq!(TaskKey::parse(&k.to_string()).unwrap(), k.clone());
            prop_assert_eq!(TaskKey::parse(&k.to_string().to_lowercase()).unwrap(), k.clone());
            prop_assert_eq!(TaskKey::parse(&format!(" {} {} ", k.prefix, k.number)).unwrap(), k);
        }

        /// Only one separator, `-` or one space, may stand between prefix and number.
        #[test]
        fn more_than_one_separator_is_not_a_key(
            k in any_key(),
            sep in "[- \t\n]{2,4}|\t|\n|\r",
        ) {
            let text = format!("{}{}{}", k.prefix, sep, k.number);
            prop_assert!(TaskKey::parse(&text).is_err(), "{:?} accepted", text);
        }
    }
}
