//! Keys where the work happens (docs/CLI.md "Git"): what a commit message says about tasks
//! ([`read_message`]), the branch name a key gives ([`branch_name`]) and the key a branch
//! name holds ([`key_in_branch`]). Pure: the caller says which prefixes exist (`known`: every
//! prefix a project has or had, and those of imported keys), and resolves the keys.
//!
//! The grammar is the union of what people already type for GitHub, GitLab, Linear and Jira:
//!
//! | form | example | does |
//! |---|---|---|
//! | closing word, any tense, optional colon, then keys | `Fixes SYN-42`, `closed: SYN-1`, `Implementing SYN-3` | completes |
//! | a list after either kind of word | `Closes SYN-1, SYN-2 and SYN-3`, `fixes SYN-1 & SYN-2` | each |
//! | linking word or phrase | `Refs SYN-42`, `Refs: SYN-42` (a trailer), `part of SYN-7`, `related to SYN-8` | links |
//! | a key alone, written `PFX-N` | `SYN-42: tidy the login form`, `[SYN-42]` | links |
//! | a spoken form after a word | `fixes syn 42`, `refs syn42` | as the word says |
//! | Jira smart commit | `SYN-42 #done`, `SYN-1 SYN-2 #close`, `SYN-42 #comment text` | completes; links with the comment |
//!
//! Closing words: close, complete, fix, implement, resolve in every tense (`closes`, `closed`,
//! `closing`, …). Linking words: `ref`, `refs`, `references`, `see`, `toward(s)`, `part of`,
//! `related to`, `relates to`, `contributes to`.
//!
//! What is never a key: a word inside a URL (`https://x.org/SYN-42`), a key glued to other
//! text (`SYN-42abc`, `xSYN-42`, `a/SYN-42`, `SYN-42-3`), and anything whose prefix no project
//! has (`ISO-8601`, `UTF-8`). A reference after a word or before a smart-commit command whose
//! prefix no project has is reported in [`Reading::unknown`] (it was meant as a key); a bare one
//! is just text. A key mentioned twice counts once; a closing mention wins over a linking one.
//! A revert (`Revert "Fixes SYN-42"`, or a body with `This reverts commit`) only links.
use crate::{Prefix, TaskKey};

/// What a commit does to a task it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Act {
    /// Links the commit to the task.
    Link,
    /// Completes the task (and links the commit).
    Close,
}

/// One task a message names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// The key as written, normalised (`syn 42` is `SYN-42`); the caller resolves it (an old
    /// key of a moved task, an imported task's key).
    pub key: TaskKey,
    pub act: Act,
    /// A smart commit's `#comment` text (several: one per line).
    pub comment: Option<String>,
}

/// What a message says: the tasks it names, in order of first mention, and the references it
/// meant as keys whose prefix no project has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reading {
    pub mentions: Vec<Mention>,
    pub unknown: Vec<String>,
}

impl Reading {
    /// True when the message names no task and meant none.
    pub fn is_empty(&self) -> bool {
        self.mentions.is_empty() && self.unknown.is_empty()
    }

    fn mention(&mut self, key: TaskKey, act: Act) {
        match self.mentions.iter_mut().find(|m| m.key == key) {
            Some(m) => m.act = m.act.max(act),
            None => self.mentions.push(Mention {
                key,
                act,
                comment: None,
            }),
        }
    }

    fn comment(&mut self, key: &TaskKey, text: &str) {
        if let Some(m) = self.mentions.iter_mut().find(|m| &m.key == key) {
            m.comment = Some(match m.comment.take() {
                Some(before) => format!("{before}\n{text}"),
                None => text.to_owned(),
            });
        }
    }

    fn unknown(&mut self, text: &str) {
        if !self.unknown.iter().any(|u| u.eq_ignore_ascii_case(text)) {
            self.unknown.push(text.to_owned());
        }
    }
}

const CLOSING: &[&str] = &[
    "close",
    "closes",
    "closed",
    "closing",
    "complete",
    "completes",
    "completed",
    "completing",
    "fix",
    "fixes",
    "fixed",
    "fixing",
    "implement",
    "implements",
    "implemented",
    "implementing",
    "resolve",
    "resolves",
    "resolved",
    "resolving",
];
const LINKING: &[&str] = &["ref", "refs", "references", "see", "toward", "towards"];
/// Two-word linking phrases: the first word and the second.
const LINKING_PAIRS: &[(&str, &str)] = &[
    ("part", "of"),
    ("related", "to"),
    ("relates", "to"),
    ("contributes", "to"),
];
/// Jira smart-commit commands that complete (transitions people name their "done" by).
const SMART_CLOSE: &[&str] = &[
    "#done",
    "#close",
    "#closed",
    "#resolve",
    "#resolved",
    "#fix",
    "#fixed",
    "#complete",
];

/// One piece of a line.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A closing or linking word (or phrase).
    Verb(Act),
    /// `,`, `;`, `and`, `&`: a list goes on.
    Sep,
    /// `#done` and the like.
    SmartClose,
    /// `#comment`: the rest of the line is the comment.
    SmartComment(String),
    /// Any other `#word` (Jira's `#time 1h`): ends a run of keys.
    Smart,
    /// Anything else, as written (wrapping punctuation stripped).
    Word(String),
    /// Part of a URL: never a key, and it ends a list.
    Url,
}

/// Reads a commit message (`git log --format=%B`: subject, body and trailers).
pub fn read_message(message: &str, known: impl Fn(&Prefix) -> bool) -> Reading {
    let mut out = Reading::default();
    for line in message.lines() {
        read_line(&tokens(line), &known, &mut out);
    }
    // A revert (`Revert "Fixes SYN-42"`, `This reverts commit …`) undoes a change: it links the
    // tasks it names and closes none.
    let first = message.lines().next().unwrap_or("");
    if first.starts_with("Revert \"") || message.contains("This reverts commit ") {
        for m in &mut out.mentions {
            m.act = Act::Link;
        }
    }
    out
}

/// Splits a line into pieces: at whitespace, then `,` and `;` apart, wrapping punctuation
/// (`( ) [ ] " ' ` and a final `.` `:` `!` `?`) stripped.
fn tokens(line: &str) -> Vec<Tok> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        i += 1;
        if w.contains("://") || w.to_ascii_lowercase().starts_with("www.") {
            out.push(Tok::Url);
            continue;
        }
        let lower = w.to_ascii_lowercase();
        if lower == "#comment" {
            out.push(Tok::SmartComment(words[i..].join(" ")));
            break;
        }
        if SMART_CLOSE.contains(&lower.as_str()) {
            out.push(Tok::SmartClose);
            continue;
        }
        if lower.starts_with('#')
            && lower.len() > 1
            && lower[1..].bytes().all(|b| b.is_ascii_lowercase())
        {
            out.push(Tok::Smart);
            continue;
        }
        for piece in w.split_inclusive([',', ';']) {
            let (body, sep) = match piece.strip_suffix([',', ';']) {
                Some(b) => (b, true),
                None => (piece, false),
            };
            let body = strip(body);
            if !body.is_empty() {
                out.push(classify(body, words.get(i).copied()));
                if let Some(Tok::Verb(_)) = out.last() {
                    if LINKING_PAIRS
                        .iter()
                        .any(|(a, _)| body.eq_ignore_ascii_case(a))
                    {
                        i += 1; // the pair's second word
                    }
                }
            }
            if sep {
                out.push(Tok::Sep);
            }
        }
    }
    out
}

/// Strips the punctuation a key is wrapped in, in prose and Markdown.
fn strip(piece: &str) -> &str {
    piece
        .trim_start_matches(['(', '[', '{', '<', '"', '\'', '`', '*', '_'])
        .trim_end_matches([
            ')', ']', '}', '>', '"', '\'', '`', '*', '_', '.', ':', '!', '?',
        ])
}

fn classify(body: &str, next: Option<&str>) -> Tok {
    let lower = body.to_ascii_lowercase();
    if lower == "and" || lower == "&" {
        return Tok::Sep;
    }
    if CLOSING.contains(&lower.as_str()) {
        return Tok::Verb(Act::Close);
    }
    if LINKING.contains(&lower.as_str()) {
        return Tok::Verb(Act::Link);
    }
    let second = next.map(|n| strip(n).to_ascii_lowercase());
    if LINKING_PAIRS
        .iter()
        .any(|(a, b)| lower == *a && second.as_deref() == Some(*b))
    {
        return Tok::Verb(Act::Link);
    }
    Tok::Word(body.to_owned())
}

/// A key written `PFX-N` (or `PFX-N.M`), any case: the only form that is a key on its own.
fn strict_key(word: &str) -> Option<TaskKey> {
    let (prefix, _) = word.split_once('-')?;
    if !prefix.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    TaskKey::parse(word).ok()
}

/// A key in any form the resolver takes after a word: `PFX-N`, `pfxN`, or `pfx N`; how many
/// pieces it took (two for `pfx N`
/// pieces), and whether it was written `PFX-N`.
fn loose_key(toks: &[Tok]) -> Option<(TaskKey, usize, bool)> {
    let Some(Tok::Word(w)) = toks.first() else {
        return None;
    };
    if let Some(k) = strict_key(w) {
        return Some((k, 1, true));
    }
    if w.bytes().all(|b| b.is_ascii_alphanumeric()) && w.bytes().any(|b| b.is_ascii_digit()) {
        if let Ok(k) = TaskKey::parse(w) {
            return Some((k, 1, false));
        }
    }
    if let (Ok(prefix), Some(Tok::Word(n))) = (Prefix::parse(w), toks.get(1)) {
        if n.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
            if let Ok(k) = TaskKey::parse(&format!("{prefix}-{n}")) {
                return Some((k, 2, false));
            }
        }
    }
    None
}

fn read_line(toks: &[Tok], known: &impl Fn(&Prefix) -> bool, out: &mut Reading) {
    // `verb`: the word whose list is open; `expect_key`: right after it or a separator (where
    // spoken forms are keys too); `run`: the keys just read in a row, which a smart-commit
    // command applies to, each with whether a project has its prefix and, if it was written
    // `PFX-N`, the text to name when none has.
    let mut verb: Option<Act> = None;
    let mut expect_key = false;
    let mut run: Vec<(TaskKey, bool, Option<String>)> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let mut took = 1;
        match &toks[i] {
            Tok::Verb(act) => {
                verb = Some(*act);
                expect_key = true;
                run.clear();
            }
            Tok::Sep => expect_key = verb.is_some(),
            Tok::SmartClose | Tok::SmartComment(_) => {
                for (key, is_known, text) in &run {
                    match (&toks[i], is_known) {
                        (_, false) => text.iter().for_each(|t| out.unknown(t)),
                        (Tok::SmartComment(c), true) if !c.trim().is_empty() => {
                            out.mention(key.clone(), Act::Link);
                            out.comment(key, c.trim());
                        }
                        (Tok::SmartComment(_), true) => {}
                        (_, true) => out.mention(key.clone(), Act::Close),
                    }
                }
                verb = None;
                expect_key = false;
                run.clear();
            }
            Tok::Smart | Tok::Url => {
                verb = None;
                expect_key = false;
                run.clear();
            }
            Tok::Word(w) => {
                let found = match verb {
                    Some(act) if expect_key => {
                        loose_key(&toks[i..]).map(|(k, n, strict)| (k, n, strict, Some(act)))
                    }
                    // After a key: another key in the list (`Fixes SYN-1 SYN-2`), or a smart
                    // commit's run (`SYN-1 SYN-2 #done`); written `PFX-N` only.
                    act => strict_key(w).map(|k| (k, 1, true, act.filter(|_| !run.is_empty()))),
                };
                match found {
                    Some((key, n, strict, act)) => {
                        let is_known = known(&key.prefix);
                        if is_known {
                            out.mention(key.clone(), act.unwrap_or(Act::Link));
                        } else if strict && act.is_some() {
                            out.unknown(w);
                        }
                        run.push((key, is_known, strict.then(|| w.clone())));
                        expect_key = false;
                        took = n;
                    }
                    None => {
                        verb = None;
                        expect_key = false;
                        run.clear();
                    }
                }
            }
        }
        i += took;
    }
}

/// The longest branch name [`branch_name`] gives (bytes).
pub const BRANCH_MAX: usize = 60;

/// The branch name for a task: its key in lower case, then a slug of its description
/// (`syn-42-fix-the-login-form`): ASCII letters and digits (other scripts transliterated),
/// words joined by `-`, cut at a word so the whole is at most [`BRANCH_MAX`] bytes.
pub fn branch_name(key: &TaskKey, description: &str) -> String {
    let mut name = key.to_string().to_ascii_lowercase();
    let ascii = deunicode::deunicode(description).to_ascii_lowercase();
    for word in ascii
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if name.len() + 1 + word.len() > BRANCH_MAX {
            break;
        }
        name.push('-');
        name.push_str(word);
    }
    name
}

/// The key a branch name starts with, in any of its `/`-separated parts (`syn-42-fix-login`,
/// `ann/syn-42-fix-login`, `feature/SYN-42`): `PFX-N` (or `PFX-N.M`) followed by `-` or the
/// end, with a prefix a project has.
pub fn key_in_branch(branch: &str, known: impl Fn(&Prefix) -> bool) -> Option<TaskKey> {
    branch.split('/').find_map(|part| {
        let (prefix, rest) = part.split_once('-')?;
        let numbers = rest.split_once('-').map_or(rest, |(n, _)| n);
        let key = strict_key(&format!("{prefix}-{numbers}"))?;
        known(&key.prefix).then_some(key)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn known(p: &Prefix) -> bool {
        ["SYN", "OPS", "ENG", "DEV2"].contains(&p.as_str())
    }

    /// The mentions as `KEY:close`, `KEY:link` or `KEY:link#comment`, then `?TEXT` per unknown.
    fn read(message: &str) -> Vec<String> {
        let r = read_message(message, known);
        let mut out: Vec<String> = r
            .mentions
            .iter()
            .map(|m| {
                let act = match m.act {
                    Act::Close => "close",
                    Act::Link => "link",
                };
                match &m.comment {
                    Some(c) => format!("{}:{act}#{c}", m.key),
                    None => format!("{}:{act}", m.key),
                }
            })
            .collect();
        out.extend(r.unknown.iter().map(|u| format!("?{u}")));
        out
    }

    #[rstest]
    // GitHub's closing keywords, in commit messages too, with and without a colon.
    #[case("Fixes SYN-42", &["SYN-42:close"])]
    #[case("fix SYN-42", &["SYN-42:close"])]
    #[case("fixed SYN-42", &["SYN-42:close"])]
    #[case("Close SYN-1", &["SYN-1:close"])]
    #[case("closes SYN-1", &["SYN-1:close"])]
    #[case("Closed SYN-1", &["SYN-1:close"])]
    #[case("resolve SYN-1", &["SYN-1:close"])]
    #[case("Resolves SYN-1", &["SYN-1:close"])]
    #[case("resolved SYN-1", &["SYN-1:close"])]
    #[case("Fixes: SYN-10", &["SYN-10:close"])]
    #[case("Closes: syn-10", &["SYN-10:close"])]
    // GitLab's -ing forms and lists.
    #[case("Closing SYN-1", &["SYN-1:close"])]
    #[case("fixing SYN-1", &["SYN-1:close"])]
    #[case("Resolving SYN-1", &["SYN-1:close"])]
    #[case("Closes SYN-1, SYN-2 and SYN-3", &["SYN-1:close", "SYN-2:close", "SYN-3:close"])]
    #[case("Closes SYN-1, SYN-2, and SYN-3.", &["SYN-1:close", "SYN-2:close", "SYN-3:close"])]
    #[case("fixes SYN-1,SYN-2 & OPS-3", &["SYN-1:close", "SYN-2:close", "OPS-3:close"])]
    #[case("Fixes SYN-1 SYN-2", &["SYN-1:close", "SYN-2:close"])]
    // Linear's complete and implement, in any tense; its linking words.
    #[case("Completes SYN-5", &["SYN-5:close"])]
    #[case("completed SYN-5", &["SYN-5:close"])]
    #[case("Implements SYN-5", &["SYN-5:close"])]
    #[case("implemented SYN-5", &["SYN-5:close"])]
    #[case("implementing SYN-5", &["SYN-5:close"])]
    #[case("Ref SYN-5", &["SYN-5:link"])]
    #[case("refs SYN-5, SYN-6", &["SYN-5:link", "SYN-6:link"])]
    #[case("Part of SYN-5", &["SYN-5:link"])]
    #[case("part of: SYN-5", &["SYN-5:link"])]
    #[case("Towards SYN-5", &["SYN-5:link"])]
    #[case("Related to SYN-5", &["SYN-5:link"])]
    #[case("contributes to SYN-5 and SYN-6", &["SYN-5:link", "SYN-6:link"])]
    // A git trailer.
    #[case("Tidy the form\n\nRefs: SYN-42", &["SYN-42:link"])]
    #[case("Tidy\n\nFixes: SYN-1\nRefs: SYN-2", &["SYN-1:close", "SYN-2:link"])]
    // Spoken forms after a word, and subtasks.
    #[case("fixes syn 42", &["SYN-42:close"])]
    #[case("Fixes syn42", &["SYN-42:close"])]
    #[case("refs SYN 7 and syn8", &["SYN-7:link", "SYN-8:link"])]
    #[case("closes SYN-42.1", &["SYN-42.1:close"])]
    #[case("Fixes DEV2-5", &["DEV2-5:close"])]
    // A key alone links; wrapped in punctuation too.
    #[case("SYN-42: tidy the login form", &["SYN-42:link"])]
    #[case("[SYN-42] tidy", &["SYN-42:link"])]
    #[case("tidy (SYN-42)", &["SYN-42:link"])]
    #[case("see `SYN-42`.", &["SYN-42:link"])]
    #[case("syn-42 lower case", &["SYN-42:link"])]
    // Closing wins over linking; one mention per key.
    #[case("SYN-1: tidy\n\nFixes SYN-1", &["SYN-1:close"])]
    #[case("Fixes SYN-1, refs SYN-1", &["SYN-1:close"])]
    #[case("Refs SYN-1\nrefs SYN-1", &["SYN-1:link"])]
    // Jira smart commits.
    #[case("SYN-42 #done", &["SYN-42:close"])]
    #[case("SYN-1 SYN-2 #close tidy", &["SYN-1:close", "SYN-2:close"])]
    #[case("SYN-42 #comment the form is tidy now", &["SYN-42:link#the form is tidy now"])]
    #[case("SYN-42 #time 1h #comment tidy", &["SYN-42:link"])]
    #[case("SYN-42 #resolve", &["SYN-42:close"])]
    #[case("SYN-1 #done SYN-2 #comment tidy", &["SYN-1:close", "SYN-2:link#tidy"])]
    // A revert names what it undoes, and closes nothing.
    #[case("Revert \"Fixes SYN-42\"\n\nThis reverts commit 1a2b3c4d.", &["SYN-42:link"])]
    // The word must be right before the keys (as GitHub reads it).
    #[case("Fixes the bug in SYN-42", &["SYN-42:link"])]
    #[case("unfixed SYN-42", &["SYN-42:link"])]
    // Meant as keys, with no such project: named, not acted on.
    #[case("Fixes ABC-12", &["?ABC-12"])]
    #[case("Fixes SYN-1 and ABC-12", &["SYN-1:close", "?ABC-12"])]
    #[case("Fixes SYN-1 in 3 places", &["SYN-1:close"])]
    #[case("ABC-12 #done", &["?ABC-12"])]
    fn messages(#[case] message: &str, #[case] want: &[&str]) {
        assert_eq!(read(message), want, "{message:?}");
    }

    /// What must not be read as a key.
    #[rstest]
    #[case("see https://example.org/browse/SYN-42 for more")]
    #[case("see https://example.org/SYN-42")]
    #[case("www.example.org/SYN-42")]
    #[case("SYN-42abc")]
    #[case("xSYN-42 and aSYN-1")]
    #[case("a/SYN-42 and SYN-42/b")]
    #[case("SYN-42-3")]
    #[case("bob@SYN-42")]
    #[case("dates follow ISO-8601 and text UTF-8")]
    #[case("Fixes the encoding in ISO-8601 dates")]
    #[case("bump sha256 and syn42 alone")]
    #[case("syn 42 said aloud with no word before it")]
    #[case("SYN-0 and SYN-")]
    #[case("Fixes #10")]
    #[case("refs abc 12 and bug42")]
    #[case("fixes: nothing")]
    #[case("")]
    fn not_keys(#[case] message: &str) {
        assert_eq!(read(message), Vec::<String>::new(), "{message:?}");
    }

    #[rstest]
    #[case("SYN-42", "Fix the login form", "syn-42-fix-the-login-form")]
    #[case("SYN-42.1", "Tidy", "syn-42.1-tidy")]
    #[case("OPS-7", "Crème brûlée: «menu» v2!", "ops-7-creme-brulee-menu-v2")]
    #[case("OPS-7", "", "ops-7")]
    #[case("OPS-7", "日本語", "ops-7-ri-ben-yu")]
    #[case(
        "SYN-42",
        "A very long description that goes on and on past any branch length people like",
        "syn-42-a-very-long-description-that-goes-on-and-on-past-any"
    )]
    fn branches(#[case] key: &str, #[case] description: &str, #[case] want: &str) {
        let name = branch_name(&TaskKey::parse(key).unwrap(), description);
        assert_eq!(name, want);
        assert!(name.len() <= BRANCH_MAX);
        assert_eq!(key_in_branch(&name, known).unwrap().to_string(), key);
    }

    #[rstest]
    #[case("syn-42-fix-login", Some("SYN-42"))]
    #[case("ann/syn-42-fix-login", Some("SYN-42"))]
    #[case("feature/SYN-42", Some("SYN-42"))]
    #[case("syn-42.1-tidy", Some("SYN-42.1"))]
    #[case("main", None)]
    #[case("release-2026", None)]
    #[case("iso-8601-dates", None)]
    #[case("syn-42x", None)]
    fn keys_in_branches(#[case] branch: &str, #[case] want: Option<&str>) {
        assert_eq!(
            key_in_branch(branch, known)
                .map(|k| k.to_string())
                .as_deref(),
            want
        );
    }
}
