//! Prefixes a person would mishear: the rule behind `409 prefix_sounds_alike`.
//!
//! A prefix is spoken two ways in a standup, and two prefixes sound alike when either way makes
//! them one:
//!
//! - **Said as a word** (`SYN` is "sin"): both have the same [`word_key`], a small phonetic key
//!   in the spirit of Metaphone, built for 2-10 characters. `Y` not before a vowel is the vowel
//!   `I`; consonants that differ only in voicing are one (`B P`, `D T`, `G K C Q`, `F V`, `S Z`);
//!   `C` before `E I Y` is `S`; `X` is `KS` (`S` first); `PH` is `F`; `SH` and `CH` are one
//!   sound; `TH` is its own; an `H` after another consonant, `K` before `N` and `W` before `R`
//!   at the start are silent; a sound said twice in a row is said once. Vowels other than
//!   `Y`→`I` stay apart (`SIN` and `SUN` are different words); digits stay as they are.
//! - **Spelled letter by letter** (`S-Y-N`): the same length, the same characters but at one
//!   position, where the two are letters from one [`RHYMES`] set (`B`/`D` are "bee"/"dee").
//!   One position only: a listener mishears a letter, not a whole run (`DEV` and `GET` differ
//!   in two rhyming letters and are heard apart, not least because both are said as words).
//!
//! The same prefix is not "alike": that is `prefix_taken`, a different refusal.
//!
//! `OPS` beside `DEV` or `WEB` beside `API` is allowed. Pure and table-tested, each pair in
//! both orders; the server applies it to creates and renames of prefixes (`callsign-server`'s
//! `api::projects`).
use std::fmt;

use crate::Prefix;

/// Letters whose names rhyme when spelled aloud in English, each set apart from the others.
/// `W` ("double-you") and `H` ("aitch") rhyme with nothing; `L` ("el") is kept apart from
/// `M N` and `F S X`, whose confusions are the classic ones radio alphabets exist for.
pub const RHYMES: [&str; 6] = ["BCDEGPTVZ", "AJK", "IY", "MN", "FSX", "QU"];

/// Which way of saying the two prefixes makes them sound alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Said as a word: the same phonetic key.
    Word,
    /// Spelled letter by letter: each letter the same or one that rhymes with it.
    Spelled,
}

/// Why two prefixes sound alike; `Display` is a short reason for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alike {
    pub form: Form,
    reason: String,
}

impl Alike {
    /// The short human reason (also what `Display` writes).
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for Alike {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// Whether `a` and `b` sound alike (module docs), and how; `None` for the same prefix.
/// Symmetric: `sounds_alike(a, b)` and `sounds_alike(b, a)` agree on the form.
pub fn sounds_alike(a: &Prefix, b: &Prefix) -> Option<Alike> {
    if a == b {
        return None;
    }
    let (wa, wb) = (word_key(a), word_key(b));
    if wa == wb {
        return Some(Alike {
            form: Form::Word,
            reason: format!("said as words, {a} and {b} both sound like \"{wa}\""),
        });
    }
    let (x, y) = rhyming_letter(a.as_str(), b.as_str())?;
    Some(Alike {
        form: Form::Spelled,
        reason: format!(
            "spelled out, {} and {} differ only in {x} and {y}, letters that rhyme",
            spelled(a.as_str()),
            spelled(b.as_str()),
        ),
    })
}

/// `SYN` → `S-Y-N`.
fn spelled(p: &str) -> String {
    let letters: Vec<String> = p.chars().map(String::from).collect();
    letters.join("-")
}

fn rhyme_set(c: char) -> Option<usize> {
    RHYMES.iter().position(|set| set.contains(c))
}

/// The two letters when `a` and `b` have the same length and differ at exactly one position,
/// in two letters that rhyme; `None` otherwise.
fn rhyming_letter(a: &str, b: &str) -> Option<(char, char)> {
    if a.len() != b.len() {
        return None;
    }
    let mut differ = a.chars().zip(b.chars()).filter(|(x, y)| x != y);
    let (x, y) = differ.next()?;
    let rhyme = rhyme_set(x).is_some_and(|i| rhyme_set(y) == Some(i));
    (rhyme && differ.next().is_none()).then_some((x, y))
}

fn is_vowel(c: char) -> bool {
    matches!(c, 'A' | 'E' | 'I' | 'O' | 'U')
}

/// The phonetic key of a prefix said as a word (module docs), upper-case: `SYN` and `SIN` are
/// `SIN`, `DEV` and `DEF` are `TEF`. `0` stands for `TH`, `X` for `SH`/`CH`.
pub fn word_key(p: &Prefix) -> String {
    let s: Vec<char> = p.as_str().chars().collect();
    let at = |i: usize| s.get(i).copied();
    let mut sounds: Vec<char> = Vec::with_capacity(s.len() + 1);
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = at(i + 1);
        let mut step = 1;
        match c {
            'Y' if next.is_some_and(is_vowel) => sounds.push('Y'),
            'Y' => sounds.push('I'),
            c if is_vowel(c) || c.is_ascii_digit() => sounds.push(c),
            'B' | 'P' if c == 'P' && next == Some('H') => {
                sounds.push('F');
                step = 2;
            }
            'B' | 'P' => sounds.push('P'),
            'D' | 'T' if c == 'T' && next == Some('H') => {
                sounds.push('0');
                step = 2;
            }
            'D' | 'T' => sounds.push('T'),
            'S' | 'C' if next == Some('H') => {
                sounds.push('X');
                step = 2;
            }
            'C' if next.is_some_and(|n| matches!(n, 'E' | 'I' | 'Y')) => sounds.push('S'),
            'K' if i == 0 && next == Some('N') => {}
            'W' if i == 0 && next == Some('R') => {}
            'C' | 'G' | 'K' | 'Q' => sounds.push('K'),
            'F' | 'V' => sounds.push('F'),
            'S' | 'Z' => sounds.push('S'),
            'X' if i == 0 => sounds.push('S'),
            'X' => sounds.extend(['K', 'S']),
            // Silent after a consonant (`GH`, `RH`, `WH`); said at the start or after a vowel.
            'H' if i > 0 && !is_vowel(s[i - 1]) => {}
            other => sounds.push(other),
        }
        i += step;
    }
    sounds.dedup();
    sounds.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn p(s: &str) -> Prefix {
        Prefix::parse(s).unwrap()
    }

    /// Each pair in both orders: `Some(form)` must be refused (and why), `None` allowed.
    #[rstest]
    // The pairs.
    #[case("SIN", "SYN", Some(Form::Word))]
    #[case("DEF", "DEV", Some(Form::Word))]
    #[case("OPS", "DEV", None)]
    #[case("WEB", "API", None)]
    // Said as a word.
    #[case("DOC", "DOK", Some(Form::Word))]
    #[case("CAT", "KAT", Some(Form::Word))]
    #[case("BUG", "PUG", Some(Form::Word))]
    #[case("GIT", "KIT", Some(Form::Word))]
    #[case("FONE", "PHONE", Some(Form::Word))]
    #[case("SITE", "CITE", Some(Form::Word))]
    #[case("ZIP", "SIP", Some(Form::Word))]
    #[case("APP", "AP", Some(Form::Word))]
    #[case("BOX", "BOKS", Some(Form::Word))]
    #[case("KNOT", "NOT", Some(Form::Word))]
    #[case("WRAP", "RAP", Some(Form::Word))]
    #[case("SHIP", "CHIP", Some(Form::Word))]
    #[case("SYNC", "SINK", Some(Form::Word))]
    // Spelled letter by letter.
    #[case("CE", "DE", Some(Form::Spelled))]
    #[case("BE", "DE", Some(Form::Spelled))]
    #[case("QA", "UA", Some(Form::Spelled))]
    #[case("MX", "NX", Some(Form::Spelled))]
    #[case("FS", "FX", Some(Form::Spelled))]
    #[case("AJ", "AK", Some(Form::Spelled))]
    #[case("DB", "DV", Some(Form::Spelled))]
    #[case("WEB", "WED", Some(Form::Spelled))]
    #[case("MOD", "MOV", Some(Form::Spelled))]
    #[case("REC", "REP", Some(Form::Spelled))]
    // Allowed: different sounds, whichever way they are said.
    #[case("SIN", "SUN", None)]
    #[case("SYN", "SYX", None)]
    #[case("OPS", "SYN", None)]
    #[case("API", "APP", None)]
    #[case("UI", "QA", None)]
    #[case("CLI", "CLM", None)]
    #[case("ML", "MN", None)]
    #[case("HR", "AR", None)]
    #[case("WW", "UU", None)]
    #[case("WEB", "WIKI", None)]
    #[case("DEV", "DEVOPS", None)]
    #[case("V1", "V2", None)]
    #[case("TEAM", "TIME", None)]
    // Two misheard letters are too many (and said as words these differ).
    #[case("DB", "TV", None)]
    #[case("DEV", "GET", None)]
    #[case("DEV", "ZZZ", None)]
    #[case("FIX", "SYX", None)]
    #[case("INFRA", "INTRA", None)]
    fn pairs(#[case] a: &str, #[case] b: &str, #[case] want: Option<Form>) {
        for (x, y) in [(a, b), (b, a)] {
            let got = sounds_alike(&p(x), &p(y));
            assert_eq!(
                got.as_ref().map(|g| g.form),
                want,
                "{x} beside {y}: {got:?} (keys {} {})",
                word_key(&p(x)),
                word_key(&p(y))
            );
        }
    }

    #[rstest]
    #[case("SYN")]
    #[case("DEV")]
    #[case("AB")]
    fn the_same_prefix_is_taken_not_alike(#[case] a: &str) {
        assert_eq!(sounds_alike(&p(a), &p(&a.to_lowercase())), None);
    }

    #[test]
    fn the_reason_names_both_and_the_sound() {
        let word = sounds_alike(&p("SIN"), &p("SYN")).unwrap();
        assert_eq!(
            word.to_string(),
            "said as words, SIN and SYN both sound like \"SIN\""
        );
        let spelled = sounds_alike(&p("DB"), &p("DV")).unwrap();
        assert_eq!(
            spelled.reason(),
            "spelled out, D-B and D-V differ only in B and V, letters that rhyme"
        );
    }

    #[rstest]
    #[case("SYN", "SIN")]
    #[case("DEV", "TEF")]
    #[case("YES", "YES")]
    #[case("XRAY", "SRAI")]
    #[case("TAX", "TAKS")]
    #[case("THE", "0E")]
    #[case("CELL", "SEL")]
    #[case("V2", "F2")]
    fn word_keys(#[case] prefix: &str, #[case] key: &str) {
        assert_eq!(word_key(&p(prefix)), key);
    }

    proptest::proptest! {
        /// Symmetric, and never between a prefix and itself.
        #[test]
        fn symmetric(a in "[A-Z][A-Z0-9]{1,4}", b in "[A-Z][A-Z0-9]{1,4}") {
            let (a, b) = (p(&a), p(&b));
            let ab = sounds_alike(&a, &b).map(|x| x.form);
            proptest::prop_assert_eq!(ab, sounds_alike(&b, &a).map(|x| x.form));
            proptest::prop_assert!(sounds_alike(&a, &a).is_none());
        }
    }
}
