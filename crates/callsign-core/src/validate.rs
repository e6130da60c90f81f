//! Field rules shared by the server (which enforces them) and the clients (which check early so a
//! user hears about a bad field at once, not after a sync).
use crate::dto::{NewTask, TaskPatch};

pub const MAX_DESCRIPTION: usize = 1_000;
pub const MAX_NOTES: usize = 64 * 1024;
pub const MAX_TAGS: usize = 64;
pub const MAX_TAG: usize = 64;
pub const MAX_IDEMPOTENCY_KEY: usize = 255;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FieldError(pub String);

pub fn description(d: &str) -> Result<(), FieldError> {
    if d.trim().is_empty() {
        return Err(FieldError("description must not be empty".into()));
    }
    if d.chars().count() > MAX_DESCRIPTION {
        return Err(FieldError(format!(
            "description is longer than {MAX_DESCRIPTION} characters"
        )));
    }
    Ok(())
}

pub fn notes(n: &str) -> Result<(), FieldError> {
    if n.len() > MAX_NOTES {
        return Err(FieldError(format!(
            "notes are longer than {MAX_NOTES} bytes"
        )));
    }
    Ok(())
}

pub fn tags(tags: &[String]) -> Result<(), FieldError> {
    if tags.len() > MAX_TAGS {
        return Err(FieldError(format!("more than {MAX_TAGS} tags")));
    }
    for t in tags {
        let ok = !t.is_empty()
            && t.chars().count() <= MAX_TAG
            && t.chars()
                .all(|c| !c.is_whitespace() && !c.is_control() && c != ':')
            && t.starts_with(|c: char| c.is_alphabetic())
            && !t.chars().all(|c| c.is_ascii_uppercase());
        if !ok {
            return Err(FieldError(format!(
                "tag {t:?} is invalid: a tag starts with a letter, has no spaces or colons, is not all capitals, and has at most {MAX_TAG} characters"
            )));
        }
    }
    Ok(())
}

pub fn new_task(t: &NewTask) -> Result<(), FieldError> {
    description(&t.description)?;
    notes(&t.notes)?;
    tags(&t.tags)
}

pub fn patch(p: &TaskPatch) -> Result<(), FieldError> {
    if p.is_empty() {
        return Err(FieldError("the update changes nothing".into()));
    }
    if let Some(d) = &p.description {
        description(d)?;
    }
    if let Some(n) = &p.notes {
        notes(n)?;
    }
    if let Some(t) = &p.tags {
        tags(t)?;
    }
    Ok(())
}

/// An idempotency key: 1-255 printable ASCII characters.
pub fn idempotency_key(k: &str) -> Result<(), FieldError> {
    let ok =
        !k.is_empty() && k.len() <= MAX_IDEMPOTENCY_KEY && k.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(FieldError(format!(
            "an idempotency key is 1-{MAX_IDEMPOTENCY_KEY} printable ASCII characters"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(&["work"], true)]
    #[case(&["a b"], false)]
    #[case(&[""], false)]
    #[case(&["9lives"], false)]
    #[case(&["URGENT"], false)]
    #[case(&["a:b"], false)]
    fn tag_rules(#[case] t: &[&str], #[case] ok: bool) {
        let t: Vec<String> = t.iter().map(|s| s.to_string()).collect();
        assert_eq!(tags(&t).is_ok(), ok);
    }

    #[rstest]
    #[case("abc-123", true)]
    #[case("", false)]
    #[case("has space", false)]
    #[case("é", false)]
    fn idempotency_keys(#[case] k: &str, #[case] ok: bool) {
        assert_eq!(idempotency_key(k).is_ok(), ok);
    }

    #[test]
    fn blank_description_is_rejected() {
        assert!(description("   ").is_err());
        assert!(description("Buy milk").is_ok());
    }
}
