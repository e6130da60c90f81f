use std::fmt;

use uuid::Uuid;

use crate::TaskKey;

/// What a user or client may pass wherever a task id is accepted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TaskRef {
    Uuid(Uuid),
    Key(TaskKey),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is neither a task UUID nor a key: use a UUID (e.g. 67e55044-10b1-426f-9247-bb680e5fe0c8) or a key like SYN-42 or SYN-42.1 (also syn-42, SYN 42, syn42)")]
pub struct RefError {
    pub input: String,
}

impl TaskRef {
    /// UUID first, then the lenient key form.
    ///
    /// No string parses both ways: a UUID has 32 hex digits, and a key's number may have at most
    /// 19 digits after a prefix of at most 10 characters.
    pub fn parse(input: &str) -> Result<Self, RefError> {
        let s = input.trim();
        if let Ok(u) = Uuid::parse_str(s) {
            return Ok(TaskRef::Uuid(u));
        }
        TaskKey::parse(s).map(TaskRef::Key).map_err(|_| RefError {
            input: input.to_owned(),
        })
    }
}

impl fmt::Display for TaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskRef::Uuid(u) => write!(f, "{u}"),
            TaskRef::Key(k) => write!(f, "{k}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::tests::any_key;
    use proptest::prelude::*;
    use rstest::rstest;

    #[rstest]
    #[case("67e55044-10b1-426f-9247-bb680e5fe0c8")]
    #[case("67E5504410B1426F9247BB680E5FE0C8")]
    #[case(" {67e55044-10b1-426f-9247-bb680e5fe0c8} ")]
    fn uuids(#[case] input: &str) {
        assert!(matches!(TaskRef::parse(input), Ok(TaskRef::Uuid(_))));
    }

    #[rstest]
    #[case("SYN-7")]
    #[case("syn-7")]
    #[case("syn 7")]
    #[case("Syn7")]
    fn keys(#[case] input: &str) {
        let TaskRef::Key(k) = TaskRef::parse(input).unwrap() else {
            panic!("{input} is not a key");
        };
        assert_eq!(k.to_string(), "SYN-7");
    }

    #[rstest]
    #[case("SYN-42.1")]
    #[case("syn 42.1")]
    #[case("syn42.1")]
    fn subtask_keys(#[case] input: &str) {
        let TaskRef::Key(k) = TaskRef::parse(input).unwrap() else {
            panic!("{input} is not a key");
        };
        assert_eq!(k.to_string(), "SYN-42.1");
    }

    #[rstest]
    #[case("SYN--1")]
    #[case("SYN---1")]
    #[case("SYN\t-\n1")]
    #[case("syn - 1")]
    #[case(".1")]
    #[case("42.1")]
    fn not_refs(#[case] input: &str) {
        assert!(TaskRef::parse(input).is_err(), "{input:?} accepted");
    }

    #[test]
    fn error_names_the_accepted_forms() {
        let e = TaskRef::parse("hello").unwrap_err().to_string();
        assert!(e.contains("UUID") && e.contains("SYN-42"), "{e}");
    }

    fn uuid_texts() -> impl Strategy<Value = String> {
        (any::<u128>(), 0..4u8).prop_map(|(n, form)| {
            let u = Uuid::from_u128(n);
            match form {
                0 => u.hyphenated().to_string(),
                1 => u.simple().to_string(),
                2 => u.braced().to_string().to_uppercase(),
                _ => u.urn().to_string(),
            }
        })
    }

    proptest! {
        #[test]
        fn no_uuid_is_a_key(s in uuid_texts()) {
            prop_assert!(TaskKey::parse(&s).is_err(), "{} parses as a key", s);
            prop_assert!(matches!(TaskRef::parse(&s), Ok(TaskRef::Uuid(_))));
        }

        #[test]
        fn no_key_is_a_uuid(k in any_key(), lower in any::<bool>(), sep in "(-| |)") {
            let numbers = k.to_string()[k.prefix.as_str().len() + 1..].to_owned();
            let text = format!("{}{}{}", k.prefix, sep, numbers);
            let text = if lower { text.to_lowercase() } else { text };
            prop_assert!(Uuid::parse_str(&text).is_err());
            // The compact form only round-trips when the prefix ends in a letter.
            if !sep.is_empty() || k.prefix.as_str().ends_with(|c: char| c.is_ascii_alphabetic()) {
                prop_assert_eq!(TaskRef::parse(&text).unwrap(), TaskRef::Key(k));
            }
        }

        #[test]
        fn never_both(s in "\\PC{0,40}") {
            prop_assert!(!(Uuid::parse_str(s.trim()).is_ok() && TaskKey::parse(&s).is_ok()));
        }
    }
}
