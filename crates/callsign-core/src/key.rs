use std::fmt;
use std::str::FromStr;

use crate::{Prefix, MAX_NUMBER};

/// The most numbers a key holds: a task and up to seven levels of subtasks (`SYN-1.2.3.4.5.6.7.8`).
pub const MAX_DEPTH: usize = 8;

/// A task's short key: a project prefix and a number, shown as `SYN-42`; a subtask's key adds
/// its number to its parent's: `SYN-42.1`, `SYN-42.1.3`.
///
/// Numbers start at 1. The server hands them out without gaps per project for tasks, and per
/// parent for subtasks (the parent's key is the counter's scope); a key, once handed out,
/// names that one task forever.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskKey {
    pub prefix: Prefix,
    /// The numbers of the ancestors, root first (empty for a task that is nobody's subtask).
    pub parents: Vec<u64>,
    pub number: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a task key: expected PREFIX-N, e.g. SYN-42, or PREFIX-N.M for a subtask, e.g. SYN-42.1 (also accepted: syn-42, SYN 42, syn42)")]
pub struct KeyError {
    pub input: String,
}

impl TaskKey {
    /// A task's key (not a subtask's).
    pub fn new(prefix: Prefix, number: u64) -> Self {
        TaskKey {
            prefix,
            parents: Vec::new(),
            number,
        }
    }

    /// The key of this task's subtask number `number`.
    pub fn child(&self, number: u64) -> TaskKey {
        let mut parents = self.parents.clone();
        parents.push(self.number);
        TaskKey {
            prefix: self.prefix.clone(),
            parents,
            number,
        }
    }

    /// The parent's key, for a subtask.
    pub fn parent(&self) -> Option<TaskKey> {
        let (&number, parents) = self.parents.split_last()?;
        Some(TaskKey {
            prefix: self.prefix.clone(),
            parents: parents.to_vec(),
            number,
        })
    }

    /// The counter this key's number was taken from, within its project: `""` for a task,
    /// the parent's numbers joined by `.` for a subtask (`"42"` for `SYN-42.1`).
    pub fn scope(&self) -> String {
        scope_of(&self.parents)
    }

    /// 0 for a task, 1 for its subtask, and so on.
    pub fn depth(&self) -> usize {
        self.parents.len()
    }

    /// Parses the key form leniently: `SYN-42`, `syn-42`, `SYN 42`, `syn42`, surrounding
    /// spaces, and subtask keys in the same forms (`SYN-42.1`, `syn 42.1`, `syn42.1.3`).
    ///
    /// Grammar: `PREFIX SEP? N(.N)*`, with at most one separator, `-` or a single space,
    /// between prefix and numbers (DESIGN.md section 9); `SYN--1`, `SYN - 1` or a tab are not
    /// keys, nor is anything without a prefix (`.1`, `42.1`). Without a separator the prefix
    /// is everything up to the last letter, so a prefix that ends in a digit (`V2`) needs one
    /// (`v2-5`). A number 0, a leading `+`, an empty number (`SYN-42.`, `SYN-42..1`), numbers
    /// past [`MAX_NUMBER`] and more than [`MAX_DEPTH`] numbers are rejected.
    pub fn parse(input: &str) -> Result<Self, KeyError> {
        let err = || KeyError {
            input: input.to_owned(),
        };
        let s = input.trim();
        let (prefix, digits) = match s.find(['-', ' ']) {
            // Both separators are one byte; what follows must be the numbers alone.
            Some(at) => (&s[..at], &s[at + 1..]),
            None => {
                let at = s
                    .rfind(|c: char| c.is_ascii_alphabetic())
                    .map_or(0, |i| i + 1);
                s.split_at(at)
            }
        };
        let mut numbers = Vec::new();
        for part in digits.split('.') {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err());
            }
            let n: u64 = part.parse().map_err(|_| err())?;
            if n == 0 || n > MAX_NUMBER {
                return Err(err());
            }
            numbers.push(n);
        }
        if numbers.len() > MAX_DEPTH {
            return Err(err());
        }
        let number = numbers.pop().ok_or_else(err)?;
        let prefix = Prefix::parse(prefix).map_err(|_| err())?;
        Ok(TaskKey {
            prefix,
            parents: numbers,
            number,
        })
    }
}

/// A scope as stored: numbers joined by `.` (`""` for none).
pub fn scope_of(numbers: &[u64]) -> String {
    numbers
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

impl FromStr for TaskKey {
    type Err = KeyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TaskKey::parse(s)
    }
}

impl fmt::Display for TaskKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-", self.prefix)?;
        for p in &self.parents {
            write!(f, "{p}.")?;
        }
        write!(f, "{}", self.number)
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
        assert!(k.parents.is_empty());
    }

    #[rstest]
    #[case("SYN-42.1", "SYN-42.1", "42")]
    #[case("syn 42.1", "SYN-42.1", "42")]
    #[case("syn42.1", "SYN-42.1", "42")]
    #[case("SYN-42.1.3", "SYN-42.1.3", "42.1")]
    #[case("v2-5.01", "V2-5.1", "5")]
    #[case("SYN-1.2.3.4.5.6.7.8", "SYN-1.2.3.4.5.6.7.8", "1.2.3.4.5.6.7")]
    fn parses_subtask_keys(#[case] input: &str, #[case] shown: &str, #[case] scope: &str) {
        let k = TaskKey::parse(input).unwrap();
        assert_eq!(k.to_string(), shown);
        assert_eq!(k.scope(), scope);
        let parent = k.parent().unwrap();
        assert_eq!(parent.child(k.number), k);
        assert_eq!(parent.depth() + 1, k.depth());
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
    #[case(".1")]
    #[case("42.1")]
    #[case("SYN-.1")]
    #[case("SYN-42.")]
    #[case("SYN-42..1")]
    #[case("SYN-42.0")]
    #[case("SYN-42.+1")]
    #[case("SYN-42 .1")]
    #[case("SYN-42.1 2")]
    #[case("SYN-1.2.3.4.5.6.7.8.9")]
    fn rejects(#[case] input: &str) {
        assert!(TaskKey::parse(input).is_err(), "{input:?} accepted");
    }

    pub(crate) fn any_key() -> impl Strategy<Value = TaskKey> {
        (
            "[A-Za-z][A-Za-z0-9]{1,9}",
            proptest::collection::vec(1..=MAX_NUMBER, 0..MAX_DEPTH),
            1..=MAX_NUMBER,
        )
            .prop_map(|(p, parents, number)| TaskKey {
                prefix: Prefix::parse(&p).unwrap(),
                parents,
                number,
            })
    }

    proptest! {
        #[test]
        fn parse_display_roundtrip(k in any_key()) {
            prop_assert_eq!(TaskKey::parse(&k.to_string()).unwrap(), k.clone());
            prop_assert_eq!(TaskKey::parse(&k.to_string().to_lowercase()).unwrap(), k.clone());
            let numbers = k.to_string()[k.prefix.as_str().len() + 1..].to_owned();
            prop_assert_eq!(TaskKey::parse(&format!(" {} {} ", k.prefix, numbers)).unwrap(), k);
        }

        /// Only one separator, `-` or one space, may stand between prefix and number.
        #[test]
        fn more_than_one_separator_is_not_a_key(
            k in any_key(),
            sep in "[- \t\n]{2,4}|\t|\n|\r",
        ) {
            let numbers = k.to_string()[k.prefix.as_str().len() + 1..].to_owned();
            let text = format!("{}{}{}", k.prefix, sep, numbers);
            prop_assert!(TaskKey::parse(&text).is_err(), "{:?} accepted", text);
        }
    }
}
