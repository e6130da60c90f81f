//! The words of Callsign's command grammar, shared by filters ([`crate::filter`]) and
//! modifications ([`crate::modify`]), in the CLI and the app alike. It is Taskwarrior's:
//!
//! | word | meaning |
//! |---|---|
//! | `+tag` | the tag (has it / add it) |
//! | `-tag` | not the tag (lacks it / remove it) |
//! | `#PFX`, `project:PFX` | the project with that prefix |
//! | `name:value`, `name.modifier:value` | an attribute (`status`, `due`, `priority`, `pri`, `project`, `commits`) |
//! | `"two words"` | one word with a space in it (in text; the shell quotes CLI arguments) |
//! | anything else | a plain word |
//!
//! A `name:` that is not an attribute Callsign knows (`https://…`, `re:`) is a plain word.

/// The attribute names the grammar knows (with their aliases).
const ATTRIBUTES: &[&str] = &[
    "status", "due", "priority", "pri", "project", "proj", "commits",
];

/// One word of a filter or a modification, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// `+tag`: the tag as typed.
    Tag(String),
    /// `-tag`.
    NotTag(String),
    /// `#PFX`: the prefix as typed (checked by the reader).
    Project(String),
    /// `name[.modifier]:value`, name lower-cased and aliases resolved (`pri` → `priority`).
    Attr {
        name: &'static str,
        modifier: Option<String>,
        value: String,
    },
    /// Anything else, as typed.
    Word(String),
}

/// A tag's characters: letters, digits and `_ . : -` (as in capture), not starting with `-`
/// (so `--flag` is never a tag).
pub fn is_tag(s: &str) -> bool {
    !s.starts_with('-')
        && !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// Splits text into words at whitespace; a double-quoted run is one word (without its quotes).
/// An unclosed quote runs to the end.
pub fn split(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if any && !word.is_empty() {
        out.push(word);
    }
    out.retain(|w| !w.is_empty());
    out
}

/// Classifies one word (already split: it may hold spaces, then it is a plain word).
pub fn classify(word: &str) -> Token {
    if word.chars().any(char::is_whitespace) {
        return Token::Word(word.to_owned());
    }
    if let Some(rest) = word.strip_prefix('+') {
        if is_tag(rest) {
            return Token::Tag(rest.to_owned());
        }
    }
    if let Some(rest) = word.strip_prefix('-') {
        if is_tag(rest) {
            return Token::NotTag(rest.to_owned());
        }
    }
    if let Some(rest) = word.strip_prefix('#') {
        if crate::Prefix::parse(rest).is_ok() {
            return Token::Project(rest.to_owned());
        }
    }
    if let Some((head, value)) = word.split_once(':') {
        let (name, modifier) = match head.split_once('.') {
            Some((n, m)) => (n, Some(m.to_ascii_lowercase())),
            None => (head, None),
        };
        let name = name.to_ascii_lowercase();
        if let Some(&known) = ATTRIBUTES.iter().find(|a| **a == name) {
            let name = match known {
                "pri" => "priority",
                "proj" => "project",
                other => other,
            };
            return Token::Attr {
                name,
                modifier,
                value: value.to_owned(),
            };
        }
    }
    Token::Word(word.to_owned())
}

/// [`split`] then [`classify`].
pub fn tokens(text: &str) -> Vec<Token> {
    split(text).iter().map(|w| classify(w)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_tags_projects_and_attributes() {
        assert_eq!(
            tokens("Fix login +bug -wontfix #dev due.before:fri pri:H https://x.org"),
            vec![
                Token::Word("Fix".into()),
                Token::Word("login".into()),
                Token::Tag("bug".into()),
                Token::NotTag("wontfix".into()),
                Token::Project("dev".into()),
                Token::Attr {
                    name: "due",
                    modifier: Some("before".into()),
                    value: "fri".into()
                },
                Token::Attr {
                    name: "priority",
                    modifier: None,
                    value: "H".into()
                },
                Token::Word("https://x.org".into()),
            ]
        );
    }

    #[test]
    fn quotes_make_one_word_and_odd_signs_stay_words() {
        assert_eq!(split(r#"  "fix login"  now "" "#), vec!["fix login", "now"]);
        assert_eq!(
            split(r#"say "unclosed quote"#),
            vec!["say", "unclosed quote"]
        );
        assert_eq!(classify("fix login"), Token::Word("fix login".into()));
        assert_eq!(classify("+"), Token::Word("+".into()));
        assert_eq!(classify("-"), Token::Word("-".into()));
        assert_eq!(classify("--all"), Token::Word("--all".into()));
        assert_eq!(classify("#1"), Token::Word("#1".into()));
        assert_eq!(classify("+a b"), Token::Word("+a b".into()));
        assert_eq!(classify("+émigré"), Token::Tag("émigré".into()));
        assert_eq!(
            classify("PROJECT:ops"),
            Token::Attr {
                name: "project",
                modifier: None,
                value: "ops".into()
            }
        );
    }
}
